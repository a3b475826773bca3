// Money that came in and went back, from SQL sums over the invoice module's tables (read only). Revenue is counted
// when money arrives, so nothing is counted twice:
// - paid: totals of invoices paid (now `paid` or `refunded`) by their paid_at, less those paid from the client balance
//   (gateway `credits`): the top-up that filled the balance was counted when it was paid;
// - refunds: money given back (refund transactions, except refunds of payments that were never applied, which were
//   never counted, and balance refunds, which return credit, not money);
// - credit_notes: notes credited to the client balance (a `refund` note documents a refund already counted above).
// Every figure is per currency; see convert.ts for the one place currencies meet. The sums by day come from the
// rollup of migrations 041 and 052 (kept by triggers in the writes' own transactions); the customers from indexes.
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { DbNumber } from './list-types.ts';

/** The gateway code of a payment from the client balance (credit/invoice-credits.ts CREDITS_GATEWAY). */
const BALANCE_GATEWAY = 'credits';
const PAID = ['paid', 'refunded'] as const;

export interface RevenueRow {
  /** `YYYY-MM`, or '' for a whole range. */
  month: string;
  currency: string;
  paid: number;
  refunds: number;
  credit_notes: number;
  net: number;
}

/**
 * Paid, refunds, credit notes and net in [start, end) — day-aligned moments, `YYYY-MM-DDT00:00:00Z` — per currency,
 * and per month when `byMonth`. Read from the daily rollup the database keeps in the same transaction as every write
 * of those rows (migration 041), so twelve months are a few hundred rows whatever the number of invoices.
 */
export async function revenueIn(db: Kysely<Database>, start: string, end: string, byMonth: boolean): Promise<RevenueRow[]> {
  const key = byMonth ? sql<string>`substr(day, 1, 7)` : sql<string>`''`;
  const rows = await db
    .selectFrom('stats_revenue_days')
    .select((eb) => [
      key.as('key'),
      'currency',
      eb.fn.sum<DbNumber>('paid').as('paid'),
      eb.fn.sum<DbNumber>('balance_paid').as('balance_paid'),
      eb.fn.sum<DbNumber>('refunds').as('refunds'),
      eb.fn.sum<DbNumber>('credit_notes').as('credit_notes'),
    ])
    .where('day', '>=', start.slice(0, 10))
    .where('day', '<', end.slice(0, 10))
    // PostgreSQL refuses a constant in GROUP BY: the whole range groups by currency alone.
    .groupBy(byMonth ? [key, 'currency'] : ['currency'])
    .execute();
  return rows
    .map((row) => {
      const paid = Number(row.paid ?? 0) - Number(row.balance_paid ?? 0);
      const refunds = Number(row.refunds ?? 0);
      const creditNotes = Number(row.credit_notes ?? 0);
      return { month: row.key, currency: row.currency, paid, refunds, credit_notes: creditNotes, net: paid - refunds - creditNotes };
    })
    .filter((row) => row.paid !== 0 || row.refunds !== 0 || row.credit_notes !== 0)
    .toSorted((a, b) => a.month.localeCompare(b.month) || a.currency.localeCompare(b.currency));
}

export interface LineRevenue {
  currency: string;
  usage: number;
  top_ups: number;
}

/**
 * The invoice lines of invoices paid in [start, end) — day-aligned moments — that billed usage (overage) and top-ups,
 * per currency: from the same daily rollup (its `usage` and `top_ups` columns, kept by triggers on invoice_items and
 * invoices, migration 052), not a join over every invoice line.
 */
export async function lineRevenueIn(db: Kysely<Database>, start: string, end: string): Promise<LineRevenue[]> {
  const rows = await db
    .selectFrom('stats_revenue_days')
    .select((eb) => ['currency', eb.fn.sum<DbNumber>('usage').as('usage'), eb.fn.sum<DbNumber>('top_ups').as('top_ups')])
    .where('day', '>=', start.slice(0, 10))
    .where('day', '<', end.slice(0, 10))
    .groupBy('currency')
    .execute();
  return rows
    .map((row) => ({ currency: row.currency, usage: Number(row.usage ?? 0), top_ups: Number(row.top_ups ?? 0) }))
    .filter((row) => row.usage !== 0 || row.top_ups !== 0)
    .toSorted((a, b) => a.currency.localeCompare(b.currency));
}

export interface CustomerRevenue {
  client_id: number;
  currency: string;
  amount: number;
}

/**
 * The clients who paid most in [start, end), per currency: their paid invoices less what they paid from the balance,
 * two grouped sums joined and ranked in SQL, so only the top rows leave the database.
 */
export async function topCustomersIn(db: Kysely<Database>, start: string, end: string, limit: number): Promise<CustomerRevenue[]> {
  const invoiced = db
    .selectFrom('invoices')
    .select((eb) => ['client_id', 'currency', eb.fn.sum<DbNumber>('total').as('amount')])
    .where('paid_at', '>=', start)
    .where('paid_at', '<', end)
    .where('status', 'in', PAID)
    .groupBy(['client_id', 'currency']);
  const fromBalance = db
    .selectFrom('transactions')
    .select((eb) => ['client_id', 'currency', eb.fn.sum<DbNumber>('amount').as('amount')])
    .where('type', '=', 'payment')
    .where('created_at', '>=', start)
    .where('created_at', '<', end)
    .where('gateway', '=', BALANCE_GATEWAY)
    .where('status', 'in', ['processed', 'refunded'])
    .groupBy(['client_id', 'currency']);
  const net = sql<DbNumber>`paid.amount - coalesce(balance.amount, 0)`;
  const rows = await db
    .selectFrom(invoiced.as('paid'))
    .leftJoin(fromBalance.as('balance'), (join) => join.onRef('balance.client_id', '=', 'paid.client_id').onRef('balance.currency', '=', 'paid.currency'))
    .select(['paid.client_id as client_id', 'paid.currency as currency', net.as('amount')])
    .where(net, '>', 0)
    .orderBy(net, 'desc')
    .orderBy('paid.client_id')
    .limit(limit)
    .execute();
  return rows.map((row) => ({ client_id: row.client_id, currency: row.currency, amount: Number(row.amount) }));
}
