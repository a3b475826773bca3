// Money that came in and went back, from SQL sums over the invoice module's tables (read only). Revenue is counted
// when money arrives, so nothing is counted twice:
// - paid: totals of invoices paid (now `paid` or `refunded`) by their paid_at, less those paid from the client balance
//   (gateway `credits`): the top-up that filled the balance was counted when it was paid;
// - refunds: money given back (refund transactions, except refunds of payments that were never applied, which were
//   never counted, and balance refunds, which return credit, not money);
// - credit_notes: notes credited to the client balance (a `refund` note documents a refund already counted above).
// Every figure is per currency; see convert.ts for the one place currencies meet.
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

type Sum = { key: string; currency: string; amount: number | string | bigint | null };

const monthOf = (column: string) => sql<string>`substr(${sql.ref(column)}, 1, 7)`;

/** Adds `amount` of one (key, currency) into `rows` under `field`. */
function into(rows: Map<string, RevenueRow>, sums: readonly Sum[], field: 'paid' | 'refunds' | 'credit_notes', sign: 1 | -1): void {
  for (const sum of sums) {
    const id = `${sum.key}|${sum.currency}`;
    let row = rows.get(id);
    if (row === undefined) {
      row = { month: sum.key, currency: sum.currency, paid: 0, refunds: 0, credit_notes: 0, net: 0 };
      rows.set(id, row);
    }
    row[field] += sign * Number(sum.amount ?? 0);
  }
}

/**
 * Paid, refunds, credit notes and net in [start, end), per currency, and per month when `byMonth` (the key is then
 * `YYYY-MM`). Four grouped sums, each answered from an index (migration 040).
 */
export async function revenueIn(db: Kysely<Database>, start: string, end: string, byMonth: boolean): Promise<RevenueRow[]> {
  const keyOf = (column: string) => (byMonth ? monthOf(column) : sql<string>`''`);
  const [invoiced, fromBalance, refunds, notes] = await Promise.all([
    db
      .selectFrom('invoices')
      .select((eb) => [keyOf('paid_at').as('key'), 'currency', eb.fn.sum<DbNumber>('total').as('amount')])
      .where('paid_at', '>=', start)
      .where('paid_at', '<', end)
      .where('status', 'in', PAID)
      .groupBy(['key', 'currency'])
      .execute(),
    db
      .selectFrom('transactions')
      .select((eb) => [keyOf('created_at').as('key'), 'currency', eb.fn.sum<DbNumber>('amount').as('amount')])
      .where('type', '=', 'payment')
      .where('created_at', '>=', start)
      .where('created_at', '<', end)
      .where('gateway', '=', BALANCE_GATEWAY)
      .where('status', 'in', ['processed', 'refunded'])
      .groupBy(['key', 'currency'])
      .execute(),
    db
      .selectFrom('transactions')
      .select((eb) => [keyOf('created_at').as('key'), 'currency', eb.fn.sum<DbNumber>('amount').as('amount')])
      .where('type', '=', 'refund')
      .where('created_at', '>=', start)
      .where('created_at', '<', end)
      .where('status', '=', 'refunded')
      .where('refund_of', 'is', null)
      .where((eb) => eb.or([eb('gateway', 'is', null), eb('gateway', '<>', BALANCE_GATEWAY)]))
      .groupBy(['key', 'currency'])
      .execute(),
    db
      .selectFrom('credit_notes')
      .select((eb) => [keyOf('created_at').as('key'), 'currency', eb.fn.sum<DbNumber>('total').as('amount')])
      .where('created_at', '>=', start)
      .where('created_at', '<', end)
      .where('method', '=', 'balance')
      .groupBy(['key', 'currency'])
      .execute(),
  ]);
  const rows = new Map<string, RevenueRow>();
  into(rows, invoiced, 'paid', 1);
  into(rows, fromBalance, 'paid', -1);
  into(rows, refunds, 'refunds', 1);
  into(rows, notes, 'credit_notes', 1);
  for (const row of rows.values()) row.net = row.paid - row.refunds - row.credit_notes;
  return [...rows.values()].toSorted((a, b) => a.month.localeCompare(b.month) || a.currency.localeCompare(b.currency));
}

export interface LineRevenue {
  currency: string;
  usage: number;
  top_ups: number;
}

/** The invoice lines of invoices paid in [start, end) that billed usage (overage) and top-ups, per currency. */
export async function lineRevenueIn(db: Kysely<Database>, start: string, end: string): Promise<LineRevenue[]> {
  const rows = await db
    .selectFrom('invoices')
    .innerJoin('invoice_items', 'invoice_items.invoice_id', 'invoices.id')
    .select((eb) => ['invoices.currency as currency', 'invoice_items.task as task', eb.fn.sum<DbNumber>('invoice_items.total').as('amount')])
    .where('invoices.paid_at', '>=', start)
    .where('invoices.paid_at', '<', end)
    .where('invoices.status', 'in', PAID)
    .where('invoice_items.task', 'in', ['usage', 'deposit'])
    .groupBy(['invoices.currency', 'invoice_items.task'])
    .execute();
  const out = new Map<string, LineRevenue>();
  for (const row of rows) {
    const entry = out.get(row.currency) ?? { currency: row.currency, usage: 0, top_ups: 0 };
    if (row.task === 'usage') entry.usage += Number(row.amount ?? 0);
    else entry.top_ups += Number(row.amount ?? 0);
    out.set(row.currency, entry);
  }
  return [...out.values()].toSorted((a, b) => a.currency.localeCompare(b.currency));
}

export interface CustomerRevenue {
  client_id: number;
  currency: string;
  amount: number;
}

/** The clients who paid most in [start, end), per currency (money in: invoices paid from the balance left out). */
export async function topCustomersIn(db: Kysely<Database>, start: string, end: string, limit: number): Promise<CustomerRevenue[]> {
  const rows = await db
    .selectFrom('invoices')
    .select((eb) => ['client_id', 'currency', eb.fn.sum<DbNumber>('total').as('amount')])
    .where('paid_at', '>=', start)
    .where('paid_at', '<', end)
    .where('status', 'in', PAID)
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom('transactions')
            .select('transactions.id')
            .whereRef('transactions.invoice_id', '=', 'invoices.id')
            .where('transactions.type', '=', 'payment')
            .where('transactions.gateway', '=', BALANCE_GATEWAY),
        ),
      ),
    )
    .groupBy(['client_id', 'currency'])
    .orderBy('amount', 'desc')
    .orderBy('client_id')
    .limit(limit)
    .execute();
  return rows.map((row) => ({ client_id: row.client_id, currency: row.currency, amount: Number(row.amount ?? 0) }));
}
