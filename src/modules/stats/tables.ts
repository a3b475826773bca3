// The stats module's one table: the revenue rollup per UTC day and currency (migration 041). The database writes it,
// by triggers on invoices, transactions and credit_notes, in the same transaction as each change of those rows; the
// stats module only reads it. Amounts are minor units; int8 on PostgreSQL (read them through Number()).
export interface StatsRevenueDayTable {
  /** `YYYY-MM-DD`, UTC. */
  day: string;
  currency: string;
  paid: number | string;
  balance_paid: number | string;
  refunds: number | string;
  credit_notes: number | string;
}

export interface StatsTables {
  stats_revenue_days: StatsRevenueDayTable;
}
