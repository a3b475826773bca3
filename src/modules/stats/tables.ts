// The stats module's one table: the revenue rollup per UTC day, currency and stored rate (migrations 041, 052, 053). The database writes it,
// by triggers on invoices, invoice_items, transactions and credit_notes, in the same transaction as each change of those rows; the
// stats module only reads it. Amounts are minor units; int8 on PostgreSQL (read them through Number()).
export interface StatsRevenueDayTable {
  /** `YYYY-MM-DD`, UTC. */
  day: string;
  currency: string;
  /** The invoice's `currency_rate` ('1' in the default) and `currency_base`: the key amounts are converted by (053). */
  rate: string;
  base: string;
  paid: number | string;
  balance_paid: number | string;
  refunds: number | string;
  credit_notes: number | string;
  /** The usage and top-up (`deposit`) lines of invoices paid that day (migration 052). */
  usage: number | string;
  top_ups: number | string;
}

export interface StatsTables {
  stats_revenue_days: StatsRevenueDayTable;
}
