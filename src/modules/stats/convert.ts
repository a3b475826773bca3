// The one place amounts in several currencies become one figure in the default currency (issue 26 item 7). Every
// money figure of the dashboard is answered per currency as it was charged, and beside it as a total in the default
// currency; FOSSBilling's Stats actions answer the total alone (FOSSBilling sums its invoices' base income).
// - What was invoiced (revenue, refunds, credit notes, usage, top-ups, failed payments, top customers) is converted at
//   the rate stored on its invoice (`currency_rate` against `currency_base`), by currency/selling.ts
//   storedRateConverter — the exports' conversion — once per group of amounts sharing a rate, rounded half up.
// - What is not invoiced yet (MRR, ARR, renewals due, scheduled cancellations) has no stored rate: it is converted at
//   today's rate, the rate its next invoice will store. The projected overage needs no conversion: plans price
//   overage in the default currency, and the projection keeps that price beside the converted one (default_amount).
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { Selling, StoredRate } from '../currency/selling.ts';

/** What the stats read of the currencies: overage priced as the close prices it, amounts converted at stored rates. */
export type StatsSelling = Pick<Selling, 'describe' | 'storedRateConverter'>;

export interface DefaultCurrency {
  code: string;
  /** An amount of an invoice (or of its transaction or credit note) in the default currency, at the invoice's rate. */
  atStoredRate(amount: number, stored: StoredRate): number;
  /** An amount of `currency` in the default currency at today's rate. */
  atTodaysRate(amount: number, currency: string): number;
}

/** The default currency and its conversions, with the currencies and rates as they are now (read once per answer). */
export async function defaultCurrencyOf(db: Kysely<Database>, selling: StatsSelling): Promise<DefaultCurrency> {
  const [converter, rows] = await Promise.all([selling.storedRateConverter(db), db.selectFrom('currencies').select(['code', 'conversion_rate']).execute()]);
  const todays = new Map(rows.map((row) => [row.code, row.conversion_rate]));
  return {
    code: converter.defaultCode,
    atStoredRate: (amount, stored) => converter.toDefault(amount, stored),
    // A currency the instance no longer lists has no rate: its amount stands as it is (scaled to the default's minor unit).
    atTodaysRate: (amount, currency) => converter.toDefault(amount, { currency, currency_rate: todays.get(currency) ?? '1', currency_base: todays.has(currency) ? converter.defaultCode : currency }),
  };
}

/** The sum of amounts each converted at its stored rate. */
export function sumAtStoredRates<T extends StoredRate>(rows: readonly T[], amount: (row: T) => number, into: DefaultCurrency): number {
  return rows.reduce((sum, row) => sum + into.atStoredRate(amount(row), row), 0);
}
