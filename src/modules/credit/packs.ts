// Top-up packs (issue 24 item 3): staff offer fixed amounts, each with an optional bonus (promotional credit, with an
// optional lifetime in days). Buying one issues the same top-up invoice as a custom amount (paid by any gateway), and
// records the pack as it is then in `credit_pack_invoices`, so a pack edited or deleted afterwards changes nothing
// already bought. When the invoice is paid its `deposit` line is credited as `top_up` (invoice-credits.ts) and the
// bonus as a `grant` here, in the same transaction (`invoice.paid`), once: the key `invoice:<id>:bonus`.
import type { Kysely, Selectable } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { errors } from '../../platform/errors.ts';
import type { EventBus } from '../../platform/events.ts';
import { inTransaction } from '../../platform/transaction.ts';
import { moneyFor } from '../../lib/money.ts';
import { amountIn, type SaleCurrency, type Selling } from '../currency/selling.ts';
import { isoSeconds } from '../../lib/time.ts';
import type { InvoiceService } from '../invoice/service.ts';
import { credit, lockAccount } from './ledger.ts';
import type { CreditPackTable } from './tables.ts';
import { depositLine } from './top-up-line.ts';
import '../invoice/events.ts';

const DAY_MS = 86_400_000;

export interface PackRecord {
  id: number;
  title: string;
  amount: string;
  bonus: string;
  bonus_days: number | null;
  currency: string;
  enabled: boolean;
  created_at: string;
  updated_at: string;
}

/** A pack's fields, checked for shape by the caller: amounts in minor units. */
export interface PackInput {
  title: string;
  amount: number;
  bonus: number;
  bonusDays: number | null;
  enabled: boolean;
}

export interface PacksDeps {
  db: Kysely<Database>;
  events: EventBus;
  /** Packs are priced in the default currency and sold in the client's, converted at the current rate. */
  selling: Pick<Selling, 'describe' | 'forClient' | 'useForClient'>;
  invoices: Pick<InvoiceService, 'create'>;
}

export function createPacks({ db, events, selling, invoices }: PacksDeps) {
  /** A pack as shown in `sale`'s currency: staff see the default's, a client their own (converted, rounded once). */
  const toRecord = (row: Selectable<CreditPackTable>, sale: SaleCurrency): PackRecord => ({
    id: row.id,
    title: row.title,
    amount: moneyFor(sale.code).format(amountIn(row.amount, sale)),
    bonus: moneyFor(sale.code).format(amountIn(row.bonus, sale)),
    bonus_days: row.bonus_days,
    currency: sale.code,
    enabled: row.enabled === 1,
    created_at: row.created_at,
    updated_at: row.updated_at,
  });

  function check(input: PackInput): void {
    if (input.amount <= 0) throw errors.invalid('amount', 'must be more than 0');
    if (input.bonus < 0) throw errors.invalid('bonus', 'must not be negative');
    if (input.bonusDays !== null && input.bonus === 0) throw errors.invalid('bonus_days', 'is for a pack with a bonus');
  }

  async function requirePack(trx: Kysely<Database>, id: number) {
    const row = await trx.selectFrom('credit_packs').selectAll().where('id', '=', id).executeTakeFirst();
    if (row === undefined) throw errors.notFound('Top-up pack');
    return row;
  }

  // The bonus of a paid pack invoice, beside its top_up, in the transaction that marked it paid.
  events.on('invoice.paid', async ({ invoiceId, clientId }, trx) => {
    const bought = await trx.selectFrom('credit_pack_invoices').selectAll().where('invoice_id', '=', invoiceId).executeTakeFirst();
    if (bought === undefined || bought.bonus <= 0) return;
    const invoice = await trx.selectFrom('invoices').select(['currency', 'number']).where('id', '=', invoiceId).executeTakeFirstOrThrow();
    const now = new Date();
    const account = { clientId, currency: invoice.currency };
    await lockAccount(trx, account, now);
    const expiresAt = bought.bonus_days === null ? null : isoSeconds(new Date(now.getTime() + bought.bonus_days * DAY_MS));
    await credit(trx, account, { kind: 'grant', amount: bought.bonus, key: `invoice:${invoiceId}:bonus`, invoiceId, expiresAt, note: `Bonus of top-up invoice ${invoice.number ?? `#${invoiceId}`}` }, now);
  });

  return {
    /**
     * admin/credit/pack_get_list (every pack, in the default currency) and client/credit/pack_get_list (`clientId`:
     * the enabled ones in the client's currency), smallest first.
     */
    async list(clientId: number | null): Promise<PackRecord[]> {
      let query = db.selectFrom('credit_packs').selectAll();
      if (clientId !== null) query = query.where('enabled', '=', 1);
      const sale = clientId === null ? await selling.describe(db, null) : await selling.forClient(db, clientId);
      return (await query.orderBy('amount').orderBy('id').execute()).map((row) => toRecord(row, sale));
    },

    async get(id: number): Promise<PackRecord> {
      return toRecord(await requirePack(db, id), await selling.describe(db, null));
    },

    async create(input: PackInput, now = new Date()): Promise<number> {
      check(input);
      const stamp = isoSeconds(now);
      const row = await db
        .insertInto('credit_packs')
        .values({ title: input.title, amount: input.amount, bonus: input.bonus, bonus_days: input.bonusDays, enabled: input.enabled ? 1 : 0, created_at: stamp, updated_at: stamp })
        .returning('id')
        .executeTakeFirstOrThrow();
      return row.id;
    },

    /** Changes the given fields; invoices issued before keep the pack as it was. */
    async update(id: number, change: Partial<PackInput>, now = new Date()): Promise<void> {
      await inTransaction(db, async (trx) => {
        const row = await requirePack(trx, id);
        const next: PackInput = {
          title: change.title ?? row.title,
          amount: change.amount ?? row.amount,
          bonus: change.bonus ?? row.bonus,
          bonusDays: change.bonusDays === undefined ? row.bonus_days : change.bonusDays,
          enabled: change.enabled ?? row.enabled === 1,
        };
        // A bonus set to 0 drops its lifetime with it.
        if (next.bonus === 0 && change.bonusDays === undefined) next.bonusDays = null;
        check(next);
        await trx
          .updateTable('credit_packs')
          .set({ title: next.title, amount: next.amount, bonus: next.bonus, bonus_days: next.bonusDays, enabled: next.enabled ? 1 : 0, updated_at: isoSeconds(now) })
          .where('id', '=', id)
          .execute();
      });
    },

    /** Deletes the pack; unpaid invoices issued for it still bring their bonus when paid. */
    async delete(id: number): Promise<void> {
      const result = await db.deleteFrom('credit_packs').where('id', '=', id).executeTakeFirst();
      if (Number(result.numDeletedRows) !== 1) throw errors.notFound('Top-up pack');
    },

    /** client/credit/pack_buy: an unpaid top-up invoice for an enabled pack (404 otherwise); returns its hash. */
    async buy(clientId: number, id: number, now = new Date()): Promise<string> {
      return inTransaction(db, async (trx) => {
        const pack = await requirePack(trx, id);
        if (pack.enabled !== 1) throw errors.notFound('Top-up pack');
        // In the client's currency at today's rate: the invoice, its credit and the bonus stored beside it.
        const sale = await selling.useForClient(trx, clientId);
        const money = moneyFor(sale.code);
        const bonus = amountIn(pack.bonus, sale);
        const title = bonus > 0 ? `Top-up pack “${pack.title}” with a bonus of ${money.format(bonus)} ${money.currency}` : `Top-up pack “${pack.title}”`;
        const invoice = await invoices.create(trx, clientId, [depositLine(money, amountIn(pack.amount, sale), title)], { now, taxed: false });
        await trx
          .insertInto('credit_pack_invoices')
          .values({ invoice_id: invoice.id, pack_id: pack.id, client_id: clientId, bonus, bonus_days: pack.bonus_days, created_at: isoSeconds(now) })
          .execute();
        return invoice.hash;
      });
    },
  };
}

export type Packs = ReturnType<typeof createPacks>;
