// The clients who paid most in a range, ranked by what they paid in the default currency at the stored rates (issue
// 26 item 7): a yen customer and a euro customer compare by value, not by their count of minor units. What they paid
// is their paid invoices less what they paid from the balance (the top-up that filled it was counted when paid).
// The ranking runs in SQL so only the top rows leave the database: each invoice's amount is scaled by a factor per
// (currency, issued default) — the minor units' difference and, for an invoice issued against an older default, that
// default's rate today — and divided by its stored rate, in floating point (enough to order by). The amounts shown are
// then summed exactly for those few clients, per stored rate, and converted as the other figures are (convert.ts).
import { sql, type Expression, type Kysely, type RawBuilder } from 'kysely';
import type { DialectName } from '../../db/database.ts';
import type { Database } from '../../db/schema.ts';
import type { DefaultCurrency } from './convert.ts';
import type { DbNumber } from './list-types.ts';

/** The gateway code of a payment from the client balance (credit/invoice-credits.ts CREDITS_GATEWAY). */
const BALANCE_GATEWAY = 'credits';
const PAID = ['paid', 'refunded'] as const;
/** A factor is measured on this many minor units, so its float carries the conversion's digits. */
const PROBE = 1_000_000_000;

export interface CustomerRevenue {
  client_id: number;
  currency: string;
  /** Minor units of `currency`. */
  amount: number;
  /** Minor units of the default currency, at the stored rates. */
  default_amount: number;
}

interface Bounds {
  start: string;
  end: string;
}

/**
 * `amount × factor(currency, base) ÷ rate` for SQL: the factor of each (currency, issued default) pair in the range as
 * a CASE, the stored rate read as a float.
 */
function valueInDefault(dialect: DialectName, pairs: ReadonlyArray<{ currency: string; base: string }>, into: DefaultCurrency, refs: { amount: string; currency: string; rate: string; base: string }): RawBuilder<number> {
  const float = sql.raw(dialect === 'postgres' ? 'double precision' : 'real');
  const factor = (pair: { currency: string; base: string }): number => into.atStoredRate(PROBE, { currency: pair.currency, currency_rate: '1', currency_base: pair.base }) / PROBE;
  const cases = pairs.map((pair) => sql`WHEN ${sql.ref(refs.currency)} = ${pair.currency} AND ${sql.raw(refs.base)} = ${pair.base} THEN cast(${factor(pair)} as ${float})`);
  const scale = cases.length === 0 ? sql`0` : sql`CASE ${sql.join(cases, sql` `)} ELSE 0 END`;
  return sql<number>`${sql.ref(refs.amount)} * ${scale} / cast(${sql.raw(refs.rate)} as ${float})`;
}

/** The (currency, issued default) pairs with money in the range, from the revenue rollup. */
async function pairsIn(db: Kysely<Database>, range: Bounds): Promise<Array<{ currency: string; base: string }>> {
  return db.selectFrom('stats_revenue_days').select(['currency', 'base']).distinct().where('day', '>=', range.start.slice(0, 10)).where('day', '<', range.end.slice(0, 10)).execute();
}

/** The paid invoices and the balance payments of the range, each summed per client and currency by `value`. */
function sides(db: Kysely<Database>, range: Bounds, invoiceValue: Expression<number>, balanceValue: Expression<number>) {
  const invoiced = db
    .selectFrom('invoices')
    .select((eb) => ['client_id', 'currency', eb.fn.sum<DbNumber>('total').as('amount'), eb.fn.sum<DbNumber>(invoiceValue).as('value')])
    .where('paid_at', '>=', range.start)
    .where('paid_at', '<', range.end)
    .where('status', 'in', PAID)
    .groupBy(['client_id', 'currency']);
  const fromBalance = db
    .selectFrom('transactions as t')
    .leftJoin('invoices as i', 'i.id', 't.invoice_id')
    .select((eb) => ['t.client_id as client_id', 't.currency as currency', eb.fn.sum<DbNumber>('t.amount').as('amount'), eb.fn.sum<DbNumber>(balanceValue).as('value')])
    .where('t.type', '=', 'payment')
    .where('t.created_at', '>=', range.start)
    .where('t.created_at', '<', range.end)
    .where('t.gateway', '=', BALANCE_GATEWAY)
    .where('t.status', 'in', ['processed', 'refunded'])
    .groupBy(['t.client_id', 't.currency']);
  return { invoiced, fromBalance };
}

/** The exact default-currency amounts of the clients ranked: their invoices and balance payments per stored rate. */
async function exactInDefault(db: Kysely<Database>, range: Bounds, clientIds: readonly number[], into: DefaultCurrency): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  if (clientIds.length === 0) return out;
  const [invoiced, fromBalance] = await Promise.all([
    db
      .selectFrom('invoices')
      .select((eb) => ['client_id', 'currency', 'currency_rate', 'currency_base', eb.fn.sum<DbNumber>('total').as('amount')])
      .where('client_id', 'in', clientIds)
      .where('paid_at', '>=', range.start)
      .where('paid_at', '<', range.end)
      .where('status', 'in', PAID)
      .groupBy(['client_id', 'currency', 'currency_rate', 'currency_base'])
      .execute(),
    db
      .selectFrom('transactions as t')
      .leftJoin('invoices as i', 'i.id', 't.invoice_id')
      .select((eb) => ['t.client_id as client_id', 't.currency as currency', 'i.currency_rate as currency_rate', 'i.currency_base as currency_base', eb.fn.sum<DbNumber>('t.amount').as('amount')])
      .where('t.client_id', 'in', clientIds)
      .where('t.type', '=', 'payment')
      .where('t.created_at', '>=', range.start)
      .where('t.created_at', '<', range.end)
      .where('t.gateway', '=', BALANCE_GATEWAY)
      .where('t.status', 'in', ['processed', 'refunded'])
      .groupBy(['t.client_id', 't.currency', 'i.currency_rate', 'i.currency_base'])
      .execute(),
  ]);
  const add = (rows: ReadonlyArray<{ client_id: number | null; currency: string; currency_rate: string | null; currency_base: string | null; amount: DbNumber | null }>, sign: 1 | -1): void => {
    for (const row of rows) {
      const key = `${row.client_id}|${row.currency}`;
      out.set(key, (out.get(key) ?? 0) + sign * into.atStoredRate(Number(row.amount ?? 0), row));
    }
  };
  add(invoiced, 1);
  add(fromBalance, -1);
  return out;
}

/** The `limit` clients (per currency they paid in) who paid most in the range, most first by value in the default currency. */
export async function topCustomersIn(db: Kysely<Database>, dialect: DialectName, range: Bounds, limit: number, into: DefaultCurrency): Promise<CustomerRevenue[]> {
  const pairs = await pairsIn(db, range);
  const invoiceValue = valueInDefault(dialect, pairs, into, { amount: 'total', currency: 'currency', rate: "coalesce(currency_rate, '1')", base: 'coalesce(currency_base, currency)' });
  const balanceValue = valueInDefault(dialect, pairs, into, { amount: 't.amount', currency: 't.currency', rate: "coalesce(i.currency_rate, '1')", base: 'coalesce(i.currency_base, t.currency)' });
  const { invoiced, fromBalance } = sides(db, range, invoiceValue, balanceValue);
  const net = sql<DbNumber>`paid.amount - coalesce(balance.amount, 0)`;
  const value = sql<number>`paid.value - coalesce(balance.value, 0)`;
  const rows = await db
    .selectFrom(invoiced.as('paid'))
    .leftJoin(fromBalance.as('balance'), (join) => join.onRef('balance.client_id', '=', 'paid.client_id').onRef('balance.currency', '=', 'paid.currency'))
    .select(['paid.client_id as client_id', 'paid.currency as currency', net.as('amount')])
    .where(net, '>', 0)
    .orderBy(value, 'desc')
    .orderBy('paid.client_id')
    .limit(limit)
    .execute();
  const exact = await exactInDefault(db, range, [...new Set(rows.map((row) => row.client_id))], into);
  return rows.map((row) => ({ client_id: row.client_id, currency: row.currency, amount: Number(row.amount), default_amount: exact.get(`${row.client_id}|${row.currency}`) ?? 0 }));
}
