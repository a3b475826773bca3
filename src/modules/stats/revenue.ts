// Money that came in and went back, from SQL sums over the invoice module's tables (read only). Revenue is counted
// when money arrives, so nothing is counted twice:
// - paid: totals of invoices paid (now `paid` or `refunded`) by their paid_at, less those paid from the client balance
//   (gateway `credits`): the top-up that filled the balance was counted when it was paid;
// - refunds: money given back (refund transactions, except refunds of payments that were never applied, which were
//   never counted, and balance refunds, which return credit, not money);
// - credit_notes: notes credited to the client balance (a `refund` note documents a refund already counted above).
// Every figure is per currency as charged, and in the default currency at the stored rates (convert.ts). The sums by
// day come from the rollup of migrations 041, 052 and 053 (kept by triggers in the writes' own transactions); the
// customers from indexes.
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { DefaultCurrency } from './convert.ts';
import type { DbNumber } from './list-types.ts';

export interface RevenueRow {
  /** `YYYY-MM`, or '' for a whole range. */
  month: string;
  currency: string;
  paid: number;
  refunds: number;
  credit_notes: number;
  net: number;
}

export interface LineRevenue {
  currency: string;
  usage: number;
  top_ups: number;
}

/** A range's money per currency as charged, and the same in the default currency at the stored rates (convert.ts). */
export interface Revenue {
  /** Per month (or '' for the whole range) and currency. */
  rows: RevenueRow[];
  /** Per month (or '' for the whole range), in the default currency. */
  total: RevenueRow[];
  lines: LineRevenue[];
  lines_total: Omit<LineRevenue, 'currency'>;
}

type Sums = Omit<RevenueRow, 'month' | 'currency' | 'net'> & Omit<LineRevenue, 'currency'>;

const ZERO: Sums = { paid: 0, refunds: 0, credit_notes: 0, usage: 0, top_ups: 0 };
const netOf = (sums: Sums): number => sums.paid - sums.refunds - sums.credit_notes;
const nonZero = (sums: Sums): boolean => Object.values(sums).some((value) => value !== 0);

/** Adds `sums` into the entry of `key` of `map`. */
function addInto(map: Map<string, Sums>, key: string, sums: Sums): void {
  const entry = map.get(key) ?? { ...ZERO };
  for (const field of Object.keys(ZERO) as Array<keyof Sums>) entry[field] += sums[field];
  map.set(key, entry);
}

/**
 * Paid, refunds, credit notes and net, and the usage and top-up lines, in [start, end) — day-aligned moments,
 * `YYYY-MM-DDT00:00:00Z` — per currency, per month when `byMonth`, and in the default currency. Read from the daily
 * rollup the database keeps in the same transaction as every write of those rows (migrations 041, 052, 053), grouped
 * by the stored rate as well, so twelve months are a few hundred rows whatever the number of invoices, and each rate's
 * sum is converted once.
 */
export async function revenueIn(db: Kysely<Database>, start: string, end: string, byMonth: boolean, into: DefaultCurrency): Promise<Revenue> {
  const key = byMonth ? sql<string>`substr(day, 1, 7)` : sql<string>`''`;
  const rows = await db
    .selectFrom('stats_revenue_days')
    .select((eb) => [
      key.as('key'),
      'currency',
      'rate',
      'base',
      eb.fn.sum<DbNumber>('paid').as('paid'),
      eb.fn.sum<DbNumber>('balance_paid').as('balance_paid'),
      eb.fn.sum<DbNumber>('refunds').as('refunds'),
      eb.fn.sum<DbNumber>('credit_notes').as('credit_notes'),
      eb.fn.sum<DbNumber>('usage').as('usage'),
      eb.fn.sum<DbNumber>('top_ups').as('top_ups'),
    ])
    .where('day', '>=', start.slice(0, 10))
    .where('day', '<', end.slice(0, 10))
    // PostgreSQL refuses a constant in GROUP BY: the whole range groups by currency and rate alone.
    .groupBy(byMonth ? [key, 'currency', 'rate', 'base'] : ['currency', 'rate', 'base'])
    .execute();
  const byCurrency = new Map<string, Sums>();
  const inDefault = new Map<string, Sums>();
  for (const row of rows) {
    const sums: Sums = {
      paid: Number(row.paid ?? 0) - Number(row.balance_paid ?? 0),
      refunds: Number(row.refunds ?? 0),
      credit_notes: Number(row.credit_notes ?? 0),
      usage: Number(row.usage ?? 0),
      top_ups: Number(row.top_ups ?? 0),
    };
    addInto(byCurrency, `${row.key}|${row.currency}`, sums);
    const stored = { currency: row.currency, currency_rate: row.rate, currency_base: row.base };
    addInto(inDefault, row.key, Object.fromEntries(Object.entries(sums).map(([field, amount]) => [field, into.atStoredRate(amount, stored)])) as Sums);
  }
  const revenueRow = (month: string, currency: string, sums: Sums): RevenueRow => ({ month, currency, paid: sums.paid, refunds: sums.refunds, credit_notes: sums.credit_notes, net: netOf(sums) });
  const perCurrency = [...byCurrency].map(([k, sums]) => ({ month: k.slice(0, k.indexOf('|')), currency: k.slice(k.indexOf('|') + 1), sums }));
  const byOrder = <T extends { month: string; currency: string }>(a: T, b: T): number => a.month.localeCompare(b.month) || a.currency.localeCompare(b.currency);
  const wholeRange = [...inDefault.values()].reduce((sum, sums) => ({ usage: sum.usage + sums.usage, top_ups: sum.top_ups + sums.top_ups }), { usage: 0, top_ups: 0 });
  return {
    rows: perCurrency
      .filter(({ sums }) => sums.paid !== 0 || sums.refunds !== 0 || sums.credit_notes !== 0)
      .map(({ month, currency, sums }) => revenueRow(month, currency, sums))
      .toSorted(byOrder),
    total: [...inDefault].filter(([, sums]) => nonZero(sums)).map(([month, sums]) => revenueRow(month, into.code, sums)).toSorted(byOrder),
    lines: perCurrency
      .filter(({ sums }) => sums.usage !== 0 || sums.top_ups !== 0)
      .map(({ currency, sums }) => ({ currency, usage: sums.usage, top_ups: sums.top_ups }))
      .toSorted((a, b) => a.currency.localeCompare(b.currency)),
    lines_total: wholeRange,
  };
}
