// Writes a plan in one transaction: every kind in dependency order, then the mapping rows and the invoice counter.
// Any error rolls the whole run back, so Tollgate never holds half an import.
//
// The import writes the modules' tables itself rather than through their services: it must keep what no service
// action accepts (password hashes, API tokens and keys as the customers hold them, invoice numbers and hashes,
// FOSSBilling's timestamps) and it runs as an operator command, like a restore, not as a request.
import { randomBytes } from 'node:crypto';
import type { Insertable, Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { InvoiceItemTable } from '../../modules/invoice/tables.ts';
import { newApiToken, type SecretBox } from '../../lib/crypto.ts';
import { hashPassword, isLegacyHash } from '../../lib/passwords.ts';
import { nowIso } from '../../lib/time.ts';
import { ADMINISTRATORS_GROUP_ID } from '../../modules/staff/service.ts';
import { inTransaction } from '../../platform/transaction.ts';
import { fossbillingIds } from './ids.ts';
import { FB_SUPER_ADMIN_GROUP } from './plan-people.ts';
import { freshInvoiceHash } from './plan-invoices.ts';
import { credit, debit, isUncovered, lockAccount } from '../../modules/credit/ledger.ts';
import type { BalanceValues, Kind, Plan, Planned } from './plan-types.ts';

export type Progress = (kind: string, done: number, total: number) => void;

const BATCH = 500;

export interface ApplyDeps {
  db: Kysely<Database>;
  secrets: Pick<SecretBox, 'hash' | 'encrypt'>;
  progress: Progress;
  /** The counter's value when no row holds it yet (the environment's default, else 1). */
  counterDefault: number;
}

/** Ids of rows inserted in one statement, in the order given, matched by a unique column they were returned with. */
function inOrder<K extends string>(wanted: K[], returned: Array<{ id: number; key: K }>): number[] {
  const byKey = new Map(returned.map((row) => [row.key, row.id]));
  return wanted.map((key) => {
    const id = byKey.get(key);
    if (id === undefined) throw new Error('internal: an inserted row was not returned');
    return id;
  });
}

export async function applyPlan(plan: Plan, { db, secrets, progress, counterDefault }: ApplyDeps): Promise<void> {
  await inTransaction(db, async (trx) => {
    const ids = new Map<Kind, Map<number, number>>();
    const mappingRows: Array<{ kind: Kind; fb_id: number; tollgate_id: number; fingerprint: string; imported_at: string }> = [];
    const now = nowIso();
    const idOf = (kind: Kind, fbId: number): number => {
      const id = ids.get(kind)?.get(fbId);
      if (id === undefined) throw new Error(`internal: ${kind} ${fbId} was not imported before what refers to it`);
      return id;
    };

    /**
     * Creates or updates each record of a kind and remembers FOSSBilling id → Tollgate id. With `createMany`, new
     * records are inserted 500 per statement (it must answer their ids in order: it matches them by a unique column).
     */
    async function each<V>(
      kind: Kind,
      list: Array<Planned<V>>,
      create: (values: V) => Promise<number>,
      update: (id: number, values: V) => Promise<boolean>,
      createMany?: (values: V[]) => Promise<number[]>,
    ): Promise<void> {
      const map = new Map<number, number>();
      ids.set(kind, map);
      let done = 0;
      const record = (entry: Planned<V>, id: number): void => {
        map.set(entry.fbId, id);
        if (entry.action !== 'unchanged') mappingRows.push({ kind, fb_id: entry.fbId, tollgate_id: id, fingerprint: entry.fingerprint, imported_at: now });
        if (++done % BATCH === 0 && done < list.length) progress(kind, done, list.length);
      };
      let pending: Array<Planned<V>> = [];
      const flush = async (): Promise<void> => {
        if (createMany === undefined || pending.length === 0) return;
        const created = await createMany(pending.map((entry) => entry.values));
        pending.forEach((entry, index) => record(entry, created[index]!));
        pending = [];
      };
      for (const entry of list) {
        let id = entry.tollgateId;
        if ((entry.action === 'create' || id === null) && createMany !== undefined) {
          pending.push(entry);
          if (pending.length >= BATCH) await flush();
          continue;
        }
        if (entry.action === 'create' || id === null) id = await create(entry.values);
        // A mapped record deleted in Tollgate since the last run is created again.
        else if (entry.action === 'update' && !(await update(id, entry.values))) id = await create(entry.values);
        record(entry, id);
      }
      await flush();
      progress(kind, list.length, list.length);
    }
    const changed = (result: { numUpdatedRows: bigint }): boolean => result.numUpdatedRows > 0n;

    await each('staff_group', plan.staffGroups, async (v) => (await trx.insertInto('admin_groups').values({ name: v.name, permissions: '[]', created_at: now, updated_at: now }).returning('id').executeTakeFirstOrThrow()).id,
      async (id, v) => changed(await trx.updateTable('admin_groups').set({ name: v.name, updated_at: now }).where('id', '=', id).executeTakeFirst()));

    const groupOf = (fbGroup: number | null): number => (fbGroup === FB_SUPER_ADMIN_GROUP ? ADMINISTRATORS_GROUP_ID : idOf('staff_group', Number(fbGroup)));
    await each('staff', plan.staff, async (v) => {
      const token = v.apiToken ?? newApiToken();
      // A password nobody holds (32 random bytes, forgotten): imported staff set theirs with the password reset.
      const passwordHash = await hashPassword(randomBytes(32).toString('base64'));
      const row = { email: v.email, name: v.name, status: v.status, admin_group_id: groupOf(v.groupFbId), password_hash: passwordHash, created_at: v.created_at, updated_at: v.updated_at };
      return (await trx.insertInto('staff').values({ ...row, api_token_hash: secrets.hash(token), api_token_enc: secrets.encrypt(token) }).returning('id').executeTakeFirstOrThrow()).id;
    }, async (id, v) => {
      const token = v.apiToken === null ? {} : { api_token_hash: secrets.hash(v.apiToken), api_token_enc: secrets.encrypt(v.apiToken) };
      return changed(await trx.updateTable('staff').set({ email: v.email, name: v.name, status: v.status, admin_group_id: groupOf(v.groupFbId), updated_at: v.updated_at, ...token }).where('id', '=', id).executeTakeFirst());
    });

    const clientRow = ({ apiToken, ...row }: Plan['clients'][number]['values']) => {
      const token = apiToken ?? newApiToken();
      return { ...row, api_token_hash: secrets.hash(token), api_token_enc: secrets.encrypt(token), self_signup: 0 };
    };
    await each('client', plan.clients, async (v) => (await trx.insertInto('clients').values(clientRow(v)).returning('id').executeTakeFirstOrThrow()).id, async (id, v) => {
      const { apiToken, password_hash: passwordHash, ...row } = v;
      const current = await trx.selectFrom('clients').select('password_hash').where('id', '=', id).executeTakeFirst();
      if (current === undefined) return false;
      // A client who logged in to Tollgate since has an argon2id hash of their own: FOSSBilling's old one never replaces it.
      const password = current.password_hash === null || isLegacyHash(current.password_hash) ? { password_hash: passwordHash } : {};
      const token = apiToken === null ? {} : { api_token_hash: secrets.hash(apiToken), api_token_enc: secrets.encrypt(apiToken) };
      return changed(await trx.updateTable('clients').set({ ...row, ...password, ...token }).where('id', '=', id).executeTakeFirst());
    }, async (list) => {
      const rows = list.map(clientRow);
      return inOrder(rows.map((row) => row.email), await trx.insertInto('clients').values(rows).returning(['id', 'email as key']).execute());
    });

    await each('tax', plan.taxes, async (v) => (await trx.insertInto('taxes').values({ ...v, created_at: now, updated_at: now }).returning('id').executeTakeFirstOrThrow()).id,
      async (id, v) => changed(await trx.updateTable('taxes').set({ ...v, updated_at: now }).where('id', '=', id).executeTakeFirst()));

    await each('product', plan.products, async (v) => (await trx.insertInto('products').values(v).returning('id').executeTakeFirstOrThrow()).id,
      async (id, v) => changed(await trx.updateTable('products').set(v).where('id', '=', id).executeTakeFirst()));

    await each('order', plan.orders, async (v) => {
      const { clientFbId, productFbId, ...row } = v;
      return (await trx.insertInto('orders').values({ ...row, client_id: idOf('client', clientFbId), product_id: idOf('product', productFbId), promo_id: null, next_product_id: null, next_period: null, next_price: null }).returning('id').executeTakeFirstOrThrow()).id;
    }, async (id, v) => {
      const { clientFbId, productFbId, ...row } = v;
      return changed(await trx.updateTable('orders').set({ ...row, client_id: idOf('client', clientFbId), product_id: idOf('product', productFbId) }).where('id', '=', id).executeTakeFirst());
    });

    const keyRow = (v: Plan['keys'][number]['values']) => ({
      order_id: idOf('order', v.orderFbId), client_id: idOf('client', v.clientFbId), key_hash: secrets.hash(v.key), key_enc: secrets.encrypt(v.key), options: v.options,
      config: v.config, created_at: v.created_at, updated_at: v.updated_at, valid: 1, name: null, grace_hash: null, grace_until: null, deleted_at: null,
    });
    await each('apikey', plan.keys, async (v) => (await trx.insertInto('api_keys').values(keyRow(v)).returning('id').executeTakeFirstOrThrow()).id, async (id, v) => {
      const row = { order_id: idOf('order', v.orderFbId), client_id: idOf('client', v.clientFbId), key_hash: secrets.hash(v.key), key_enc: secrets.encrypt(v.key), options: v.options, config: v.config, updated_at: v.updated_at };
      return changed(await trx.updateTable('api_keys').set(row).where('id', '=', id).executeTakeFirst());
    }, async (list) => {
      const rows = list.map(keyRow);
      return inOrder(rows.map((row) => row.key_hash), await trx.insertInto('api_keys').values(rows).returning(['id', 'key_hash as key']).execute());
    });

    await writeInvoices(trx, plan, each, idOf);

    await each('transaction', plan.transactions, async (v) => {
      const { invoiceFbId, clientFbId, ...row } = v;
      return (await trx.insertInto('transactions').values({ ...row, invoice_id: idOf('invoice', invoiceFbId), client_id: idOf('client', clientFbId), gateway_id: null }).returning('id').executeTakeFirstOrThrow()).id;
    }, async (id, v) => {
      const { invoiceFbId, clientFbId, ...row } = v;
      return changed(await trx.updateTable('transactions').set({ ...row, invoice_id: idOf('invoice', invoiceFbId), client_id: idOf('client', clientFbId) }).where('id', '=', id).executeTakeFirst());
    });

    // Balances into the credit ledger (importBalance below); after the clients they belong to.
    const importedBalance = (v: BalanceValues) => importBalance(trx, { fbId: v.clientFbId, clientId: idOf('client', v.clientFbId), currency: plan.currency, amount: v.amount }, new Date(now));
    await each('balance', plan.balances, importedBalance, async (_id, v) => (await importedBalance(v)) > 0);

    const mapping = fossbillingIds(trx);
    for (let i = 0; i < mappingRows.length; i += BATCH) {
      await mapping
        .insertInto('fossbilling_ids')
        .values(mappingRows.slice(i, i + BATCH))
        .onConflict((oc) => oc.columns(['kind', 'fb_id']).doUpdateSet((eb) => ({ tollgate_id: eb.ref('excluded.tollgate_id'), fingerprint: eb.ref('excluded.fingerprint'), imported_at: eb.ref('excluded.imported_at') })))
        .execute();
    }
    if (plan.highestNumber !== null) await moveInvoiceCounter(trx, plan.highestNumber + 1, counterDefault, now);
  });
}

type Each = <V>(kind: Kind, list: Array<Planned<V>>, create: (values: V) => Promise<number>, update: (id: number, values: V) => Promise<boolean>, createMany?: (values: V[]) => Promise<number[]>) => Promise<void>;

async function writeInvoices(trx: Transaction<Database>, plan: Plan, each: Each, idOf: (kind: Kind, fbId: number) => number): Promise<void> {
  // Lines are gathered and written 500 at a time: one statement per invoice's line or two was most of the time.
  let pending: Array<Insertable<InvoiceItemTable>> = [];
  const flush = async (): Promise<void> => {
    if (pending.length > 0) await trx.insertInto('invoice_items').values(pending).execute();
    pending = [];
  };
  const writeItems = async (invoiceId: number, items: Plan['invoices'][number]['values']['items']): Promise<void> => {
    for (const { orderFbId, ...item } of items) {
      pending.push({ ...item, invoice_id: invoiceId, order_id: orderFbId === null ? null : idOf('order', orderFbId), product_id: null, priced_until: null, covers_until: null });
    }
    if (pending.length >= 500) await flush();
  };
  const invoiceRow = ({ clientFbId, items: _items, hash, ...row }: Plan['invoices'][number]['values']) => ({ ...row, hash: hash ?? freshInvoiceHash(), client_id: idOf('client', clientFbId), discount: 0, promo_code: null });
  await each('invoice', plan.invoices, async (v) => {
    const id = (await trx.insertInto('invoices').values(invoiceRow(v)).returning('id').executeTakeFirstOrThrow()).id;
    await writeItems(id, v.items);
    return id;
  }, async (id, v) => {
    const { clientFbId, items, hash, ...row } = v;
    const result = await trx.updateTable('invoices').set({ ...row, ...(hash === null ? {} : { hash }), client_id: idOf('client', clientFbId) }).where('id', '=', id).executeTakeFirst();
    if (result.numUpdatedRows === 0n) return false;
    // The lines are FOSSBilling's: replaced as a whole when the invoice changed there.
    await trx.deleteFrom('invoice_items').where('invoice_id', '=', id).execute();
    await writeItems(id, items);
    return true;
  }, async (list) => {
    const rows = list.map(invoiceRow);
    const created = inOrder(rows.map((row) => row.hash), await trx.insertInto('invoices').values(rows).returning(['id', 'hash as key']).execute());
    for (const [index, values] of list.entries()) await writeItems(created[index]!, values.items);
    return created;
  });
  await flush();
}

/** Moves Tollgate's next invoice number past the highest imported one of the same form, so numbers stay unique. */
async function moveInvoiceCounter(trx: Transaction<Database>, next: number, counterDefault: number, now: string): Promise<void> {
  const current = await trx.selectFrom('settings').select('value').where('name', '=', 'invoice_next_number').executeTakeFirst();
  if (Number(current?.value ?? counterDefault) >= next) return;
  await trx
    .insertInto('settings')
    .values({ name: 'invoice_next_number', value: String(next), updated_at: now })
    .onConflict((oc) => oc.column('name').doUpdateSet({ value: String(next), updated_at: now }))
    .execute();
}

/**
 * Brings a client's Tollgate balance to its FOSSBilling balance by what the import writes: the first run credits the
 * whole balance as an `adjust` entry, a later run whose FOSSBilling balance changed writes the difference (a credit,
 * or a debit spent in burn-down order), so what the client did in Tollgate meanwhile stays. Entries are keyed
 * `fossbilling:balance:<client>:<n>`, so the ledger itself says what the import has written. A fall the Tollgate
 * balance cannot cover (the client spent it here already) fails the run: it rolls back whole, with the reason.
 * Returns the id of the import's latest entry for the client.
 */
async function importBalance(trx: Transaction<Database>, balance: { fbId: number; clientId: number; currency: string; amount: number }, now: Date): Promise<number> {
  const prefix = `fossbilling:balance:${balance.fbId}:`;
  const account = { clientId: balance.clientId, currency: balance.currency };
  await lockAccount(trx, account, now);
  const written = await trx.selectFrom('credit_entries').select(['id', 'amount']).where('client_id', '=', balance.clientId).where('idempotency_key', 'like', `${prefix}%`).orderBy('id').execute();
  const imported = written.reduce((sum, row) => sum + row.amount, 0);
  const difference = balance.amount - imported;
  if (difference === 0) return written.at(-1)?.id ?? 0;
  const entry = { kind: 'adjust' as const, amount: Math.abs(difference), key: `${prefix}${written.length + 1}`, note: 'Balance imported from FOSSBilling' };
  if (difference > 0) return (await credit(trx, account, entry, now)).id;
  const result = await debit(trx, account, entry, now);
  if (isUncovered(result)) {
    throw new Error(`client ${balance.fbId}: its FOSSBilling balance fell by ${-difference} minor units since the last import, but its Tollgate balance holds only ${result.available}`);
  }
  return result.id;
}
