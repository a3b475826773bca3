// FOSSBilling's Stats figures with its names and shapes (src/modules/Stats/Service.php there): the summary counts,
// the income summary, orders per status, active orders per product, income against refunds, and clients and sales
// per country. FOSSBilling answers money as one number in its base currency; here it is a decimal string in the
// instance's default currency: amounts in other currencies converted at their invoices' stored rates (convert.ts).
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { DialectName } from '../../db/database.ts';
import type { DefaultCurrency } from './convert.ts';
import { revenueIn } from './revenue.ts';
import type { DbNumber } from './list-types.ts';

const DAY_MS = 86_400_000;

/** The moments FOSSBilling's summaries count from: today, yesterday, this month and last month (UTC). */
export function summaryMoments(now: Date): { today: string; yesterday: string; tomorrow: string; thisMonth: string; lastMonth: string } {
  const day = (ms: number): string => `${new Date(ms).toISOString().slice(0, 10)}T00:00:00Z`;
  const start = Date.parse(day(now.getTime()));
  const month = (offset: number): string => `${new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + offset, 1)).toISOString().slice(0, 10)}T00:00:00Z`;
  return { today: day(start), yesterday: day(start - DAY_MS), tomorrow: day(start + DAY_MS), thisMonth: month(0), lastMonth: month(-1) };
}

type CountedTable = 'clients' | 'orders' | 'invoices';

async function countedSince(db: Kysely<Database>, table: CountedTable, from: string | null, to: string | null): Promise<number> {
  let query = db.selectFrom(table).select((eb) => eb.fn.countAll<DbNumber>().as('n'));
  if (from !== null) query = query.where('created_at', '>=', from);
  if (to !== null) query = query.where('created_at', '<', to);
  return Number((await query.executeTakeFirstOrThrow()).n);
}

/** `get_summary`: for clients, orders, invoices and tickets, the total and the counts created today, yesterday, this month and last month. */
export async function summary(db: Kysely<Database>, now: Date): Promise<Record<string, number>> {
  const at = summaryMoments(now);
  const out: Record<string, number> = {};
  const prefixes: Record<CountedTable, string> = { clients: 'clients', orders: 'orders', invoices: 'invoices' };
  for (const table of ['clients', 'orders', 'invoices'] as const) {
    const [total, today, yesterday, thisMonth, lastMonth] = await Promise.all([
      countedSince(db, table, null, null),
      countedSince(db, table, at.today, at.tomorrow),
      countedSince(db, table, at.yesterday, at.today),
      countedSince(db, table, at.thisMonth, null),
      countedSince(db, table, at.lastMonth, at.thisMonth),
    ]);
    const prefix = prefixes[table];
    Object.assign(out, { [`${prefix}_total`]: total, [`${prefix}_today`]: today, [`${prefix}_yesterday`]: yesterday, [`${prefix}_this_month`]: thisMonth, [`${prefix}_last_month`]: lastMonth });
  }
  // Tollgate has no support tickets: FOSSBilling's keys are kept, at zero, so its dashboards read the shape they expect.
  Object.assign(out, { tickets_total: 0, tickets_today: 0, tickets_yesterday: 0, tickets_this_month: 0, tickets_last_month: 0 });
  return out;
}

/** Net income (paid − refunds − credit notes) in [start, end), in the default currency's minor units. */
async function netIn(db: Kysely<Database>, start: string, end: string, into: DefaultCurrency): Promise<number> {
  const revenue = await revenueIn(db, start, end, false, into);
  return revenue.total[0]?.net ?? 0;
}

/** The first and last stored moments anything can have: the whole history. */
const EVER = { start: '0000-01-01T00:00:00Z', end: '9999-12-31T23:59:59Z' };

/** `get_summary_income`: net income in total, today, yesterday, this month and last month (minor units). */
export async function summaryIncome(db: Kysely<Database>, now: Date, into: DefaultCurrency): Promise<Record<'total' | 'today' | 'yesterday' | 'this_month' | 'last_month', number>> {
  const at = summaryMoments(now);
  const [total, today, yesterday, thisMonth, lastMonth] = await Promise.all([
    netIn(db, EVER.start, EVER.end, into),
    netIn(db, at.today, at.tomorrow, into),
    netIn(db, at.yesterday, at.today, into),
    netIn(db, at.thisMonth, EVER.end, into),
    netIn(db, at.lastMonth, at.thisMonth, into),
  ]);
  return { total, today, yesterday, this_month: thisMonth, last_month: lastMonth };
}

/** `get_income_vs_refunds`: everything paid and everything refunded, ever (minor units, default currency). */
export async function incomeVsRefunds(db: Kysely<Database>, into: DefaultCurrency): Promise<{ income: number; refund: number }> {
  const total = (await revenueIn(db, EVER.start, EVER.end, false, into)).total[0];
  return { income: total?.paid ?? 0, refund: (total?.refunds ?? 0) + (total?.credit_notes ?? 0) };
}

export const ORDER_STATUSES = ['pending_setup', 'failed_setup', 'failed_renew', 'active', 'suspended', 'canceled'] as const;

/** `get_orders_statuses`: orders per status, every status named (FOSSBilling's `failed_renew` is always 0 here). */
export async function ordersStatuses(db: Kysely<Database>): Promise<Record<(typeof ORDER_STATUSES)[number], number>> {
  const rows = await db.selectFrom('orders').select((eb) => ['status', eb.fn.countAll<DbNumber>().as('n')]).groupBy('status').execute();
  const counts = new Map<string, number>(rows.map((row) => [row.status, Number(row.n)]));
  return Object.fromEntries(ORDER_STATUSES.map((status) => [status, counts.get(status) ?? 0])) as Record<(typeof ORDER_STATUSES)[number], number>;
}

/** `get_product_summary`: active orders per product, most first. */
export async function productSummary(db: Kysely<Database>): Promise<Array<{ id: number; title: string; orders: number }>> {
  const rows = await db
    .selectFrom('orders')
    .innerJoin('products', 'products.id', 'orders.product_id')
    .select((eb) => ['products.id as id', 'products.title as title', eb.fn.countAll<DbNumber>().as('orders')])
    .where('orders.status', '=', 'active')
    .groupBy(['products.id', 'products.title'])
    .orderBy('orders', 'desc')
    .orderBy('products.id')
    .execute();
  return rows.map((row) => ({ id: row.id, title: row.title, orders: Number(row.orders) }));
}

/** `client_countries`: clients per country, most first ("" for clients without one), at most `limit`. */
export async function clientCountries(db: Kysely<Database>, limit: number): Promise<Record<string, number>> {
  const rows = await db
    .selectFrom('clients')
    .select((eb) => ['country', eb.fn.countAll<DbNumber>().as('n')])
    .groupBy('country')
    .orderBy('n', 'desc')
    .orderBy('country')
    .limit(limit)
    .execute();
  return Object.fromEntries(rows.map((row) => [row.country ?? '', Number(row.n)]));
}

/** `sales_countries`: paid invoices per buyer country (as the invoice recorded it), most first, at most `limit`. */
export async function salesCountries(db: Kysely<Database>, dialect: DialectName, limit: number): Promise<Record<string, number>> {
  const country = dialect === 'postgres' ? sql<string | null>`(buyer::json ->> 'country')` : sql<string | null>`json_extract(buyer, '$.country')`;
  const rows = await db
    .selectFrom('invoices')
    .select((eb) => [country.as('country'), eb.fn.countAll<DbNumber>().as('n')])
    .where('status', '=', 'paid')
    .groupBy(country)
    .orderBy('n', 'desc')
    .orderBy(country)
    .limit(limit)
    .execute();
  return Object.fromEntries(rows.map((row) => [row.country ?? '', Number(row.n)]));
}
