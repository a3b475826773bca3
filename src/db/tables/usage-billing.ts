// Tables of usage billing (migration 013, CONTRACT §12): uses per key and usage period, the thresholds announced, and
// the close of each order's usage periods (the overage billed, once per order and period).
import type { Generated } from 'kysely';

export interface ApiKeyPeriodUsageTable {
  api_key_id: number;
  /** The usage period as ISO 8601 instants: start inclusive, end exclusive. */
  period_start: string;
  period_end: string;
  /** Uses; int8 on PostgreSQL (read it through Number()). */
  count: number | string;
}

export interface UsageThresholdTable {
  order_id: number;
  period_start: string;
  /** 80 or 100 (percent of the included uses). */
  threshold: number;
  used: number | string;
  created_at: string;
}

export interface UsageCloseTable {
  id: Generated<number>;
  order_id: number;
  client_id: number;
  period_start: string;
  period_end: string;
  used: number | string;
  /** Null: unlimited. */
  included: number | string | null;
  overage_units: number | string;
  /** Minor units; 0 issues no invoice. int8 on PostgreSQL. */
  amount: number | string;
  /** The overage invoice; null when there was nothing to bill. */
  invoice_id: number | null;
  created_at: string;
}

export interface UsageBillingTables {
  api_key_period_usage: ApiKeyPeriodUsageTable;
  usage_thresholds: UsageThresholdTable;
  usage_closes: UsageCloseTable;
}
