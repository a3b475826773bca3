// Prepaid credits (issue 24): the client balance FOSSBilling's Client module serves (balance_get_list,
// balance_get_total, balance_add_funds, balance_delete), kept as an immutable ledger per client and currency
// (ledger.ts). The only writer of the credit tables. Paying invoices from the balance, and crediting a paid top-up
// invoice, live beside it in invoice-credits.ts.
import { randomUUID } from 'node:crypto';
import type { Kysely, Selectable } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { errors } from '../../platform/errors.ts';
import type { EventBus } from '../../platform/events.ts';
import { inTransaction } from '../../platform/transaction.ts';
import { moneyFor } from '../../lib/money.ts';
import type { Selling } from '../currency/selling.ts';
import { pageRequest, toPage, type Page } from '../../lib/paginator.ts';
import { isoSeconds } from '../../lib/time.ts';
import { balanceOf, credit, debit, expireLapsed, isUncovered, lockAccount, type Account } from './ledger.ts';
import type { CreditEntryTable } from './tables.ts';
import type { AddFunds, CreditEntryRecord, CreditFilters } from './types.ts';

export type { AddFunds, CreditEntryRecord, CreditFilters } from './types.ts';

type EntryRow = Selectable<CreditEntryTable>;

export interface CreditServiceDeps {
  db: Kysely<Database>;
  events: EventBus;
  /** A client's wallet is in the client's currency (issue 26): the one their first order fixed, else the default. */
  selling: Pick<Selling, 'forClient'>;
  log?: (message: string, error: unknown) => void;
}

export function createCreditService({ db, events, selling, log }: CreditServiceDeps) {
  // A client with balance lines cannot be deleted (the ledger is kept, like orders and invoices): cancel it instead.
  events.on('client.deleted', async ({ clientId }, trx) => {
    const line = await trx.selectFrom('credit_entries').select('id').where('client_id', '=', clientId).limit(1).executeTakeFirst();
    if (line !== undefined) throw errors.conflict('The client has balance lines; cancel the account instead of deleting it');
  });

  const accountOf = async (clientId: number, q: Kysely<Database> = db): Promise<Account> => ({ clientId, currency: (await selling.forClient(q, clientId)).code });

  function toRecord(row: EntryRow, reversedBy: number | null): CreditEntryRecord {
    return {
      id: row.id,
      client_id: row.client_id,
      type: row.kind,
      description: row.note ?? row.kind,
      amount: moneyFor(row.currency).format(row.amount),
      currency: row.currency,
      expires_at: row.expires_at,
      invoice_id: row.invoice_id,
      staff_id: row.staff_id,
      reverses_id: row.reverses_id,
      reversed_by: reversedBy,
      created_at: row.created_at,
    };
  }

  async function requireClient(clientId: number): Promise<void> {
    const row = await db.selectFrom('clients').select('id').where('id', '=', clientId).executeTakeFirst();
    if (row === undefined) throw errors.notFound('Client');
  }

  /** A date (`YYYY-MM-DD`, the whole day) or an ISO instant as the stored text it bounds. */
  function bound(text: string, end: boolean): string {
    if (/^\d{4}-\d{2}-\d{2}$/.test(text)) return `${text}T${end ? '23:59:59' : '00:00:00'}Z`;
    const time = Date.parse(text);
    if (Number.isNaN(time)) throw errors.invalid(end ? 'date_to' : 'date_from', 'must be a date (YYYY-MM-DD) or an ISO 8601 time');
    return isoSeconds(new Date(time));
  }

  return {
    /** balance_get_list: the ledger newest first; a client sees only its own (`clientId`). */
    async list(filters: CreditFilters, clientId?: number): Promise<Page<CreditEntryRecord>> {
      const request = pageRequest(filters);
      let query = db.selectFrom('credit_entries');
      const owner = clientId ?? filters.client_id;
      if (owner !== undefined) query = query.where('client_id', '=', owner);
      if (filters.id !== undefined) query = query.where('id', '=', filters.id);
      if (filters.type !== undefined) query = query.where('kind', '=', filters.type);
      if (filters.date_from !== undefined) query = query.where('created_at', '>=', bound(filters.date_from, false));
      if (filters.date_to !== undefined) query = query.where('created_at', '<=', bound(filters.date_to, true));
      const total = await query.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
      const rows = await query.selectAll().orderBy('id', 'desc').limit(request.perPage).offset(request.offset).execute();
      // Which lines of the page a compensating adjust reversed (one query for the page).
      const ids = rows.map((row) => row.id);
      const reversals = ids.length === 0 ? [] : await db.selectFrom('credit_entries').select(['id', 'reverses_id']).where('reverses_id', 'in', ids).execute();
      const reversedBy = new Map(reversals.map((row) => [row.reverses_id, row.id]));
      return toPage(request, total.n, rows.map((row) => toRecord(row, reversedBy.get(row.id) ?? null)));
    },

    /** The balance in minor units: the sum of the client's ledger. */
    balance: async (clientId: number): Promise<number> => balanceOf(db, await accountOf(clientId)),

    /** The currency of the client's wallet (the client's currency). */
    currencyOf: async (clientId: number): Promise<string> => (await accountOf(clientId)).currency,

    /** balance_get_total: the balance as a decimal string; `mustExist`: 404 for an unknown client (staff name one). */
    async total(clientId: number, mustExist = false): Promise<string> {
      if (mustExist) await requireClient(clientId);
      const account = await accountOf(clientId);
      return moneyFor(account.currency).format(await balanceOf(db, account));
    },

    /**
     * admin/client/balance_add_funds: a credit (`adjust`, or a promotional `grant` that may expire) or, with a
     * negative amount, an `adjust` debit — 409 when the balance does not cover it. The same `key` again writes nothing.
     */
    async addFunds(input: AddFunds, now = new Date()): Promise<number> {
      await requireClient(input.clientId);
      if (input.amount === 0) throw errors.invalid('amount', 'must not be 0');
      if (input.expiresAt !== null && input.expiresAt <= isoSeconds(now)) throw errors.invalid('expires_at', 'must be in the future');
      if (input.amount < 0 && input.type === 'grant') throw errors.invalid('amount', 'must be more than 0 for a grant');
      const account = await accountOf(input.clientId);
      const money = moneyFor(account.currency);
      const key = input.key === null ? `staff:${randomUUID()}` : `staff:${input.clientId}:${input.key}`;
      return inTransaction(db, async (trx) => {
        await lockAccount(trx, account, now);
        const entry = { kind: input.type, amount: Math.abs(input.amount), key, staffId: input.staffId, note: input.description, expiresAt: input.expiresAt };
        if (input.amount > 0) return (await credit(trx, account, entry, now)).id;
        const written = await debit(trx, account, entry, now);
        if (isUncovered(written)) throw errors.conflict(`The balance (${money.format(written.available)}) does not cover ${money.format(-input.amount)}`);
        return written.id;
      });
    },

    /**
     * admin/client/balance_delete: entries are never deleted; a compensating `adjust` of the opposite amount is written
     * instead. Reversing a credit takes back what is left of that credit first, then other credit (409 when the balance
     * cannot cover it); an entry is reversed once (409), and a reversal is not itself reversed (409).
     */
    async reverse(entryId: number, staffId: number | null, now = new Date()): Promise<number> {
      const entry = await db.selectFrom('credit_entries').selectAll().where('id', '=', entryId).executeTakeFirst();
      if (entry === undefined) throw errors.notFound('Balance line');
      if (entry.reverses_id !== null) throw errors.conflict('This line reverses another one; it cannot be reversed itself');
      const account = { clientId: entry.client_id, currency: entry.currency };
      const amount = entry.amount;
      return inTransaction(db, async (trx) => {
        await lockAccount(trx, account, now);
        const key = `reverse:${entry.id}`;
        const done = await trx.selectFrom('credit_entries').select('id').where('idempotency_key', '=', key).executeTakeFirst();
        if (done !== undefined) throw errors.conflict('This balance line was already removed');
        const input = { kind: 'adjust' as const, amount: Math.abs(amount), key, staffId, reversesId: entry.id, note: `Reverses line #${entry.id} (${entry.note ?? entry.kind})` };
        if (amount < 0) return (await credit(trx, account, input, now)).id;
        const written = await debit(trx, account, input, now, entry.id);
        const money = moneyFor(account.currency);
        if (isUncovered(written)) throw errors.conflict(`The balance (${money.format(written.available)}) cannot give back ${money.format(amount)}`);
        return written.id;
      });
    },

    /**
     * The scheduler's pass: an `expire` entry for what is left of each grant past its expiry, one account per
     * transaction. Idempotent (one expire entry per grant, by key).
     */
    async expireDue(now = new Date()): Promise<{ expired: number; failed: number }> {
      const at = isoSeconds(now);
      const accounts = await db
        .selectFrom('credit_entries as e')
        .leftJoin('credit_allocations as a', 'a.lot_id', 'e.id')
        .select(['e.client_id', 'e.currency'])
        .where('e.kind', '=', 'grant')
        .where('e.expires_at', '<=', at)
        .groupBy(['e.id', 'e.client_id', 'e.currency', 'e.amount'])
        .having((eb) => eb('e.amount', '>', eb.fn.coalesce(eb.fn.sum<number>('a.amount'), eb.lit(0))))
        .execute();
      const unique = [...new Map(accounts.map((row) => [`${row.client_id}:${row.currency}`, { clientId: row.client_id, currency: row.currency }])).values()];
      let expired = 0;
      let failed = 0;
      for (const account of unique) {
        try {
          expired += await inTransaction(db, async (trx) => {
            await lockAccount(trx, account, now);
            return expireLapsed(trx, account, now);
          });
        } catch (error) {
          failed += 1;
          log?.(`expiring credit of client ${account.clientId} failed`, error);
        }
      }
      return { expired, failed };
    },
  };
}

export type CreditService = ReturnType<typeof createCreditService>;
