// Tables of the API key product: the keys (several per order), their usage counts per day and per usage period, the
// batches verifiers reported, the usage thresholds announced and the close of each order's usage periods. Only this
// module writes them.
import type { Generated } from 'kysely';

export interface ApiKeyTable {
  id: Generated<number>;
  /** The order that owns the key. */
  order_id: number;
  client_id: number;
  /** HMAC-SHA256 of the key under the instance secret (lookup); unique, so keys are unique across the instance. */
  key_hash: string;
  /** The key sealed with AES-256-GCM under the instance secret, so its owner can read it again. */
  key_enc: string;
  /** 0/1: the administrator's switch. */
  valid: number;
  /** JSON: the key options the key was issued with ({length, split, split_interval, capitalization, enforce_limit}). */
  options: string;
  /** JSON object: the key's custom parameters. */
  config: string;
  created_at: string;
  updated_at: string;
  /** Migration 014 (several keys per order, rotation with a grace period): the name its owner gave the key (null: none). */
  name: string | null;
  /** Migration 014: HMAC of the key this one replaced, still validating until `grace_until` (a reset with grace_seconds). */
  grace_hash: string | null;
  grace_until: string | null;
  /** Migration 014: when the key was deleted (it stops validating; its uses stay counted for the order). */
  deleted_at: string | null;
}

export interface ApiKeyUsageTable {
  api_key_id: number;
  /** Calendar day in UTC, `YYYY-MM-DD`. */
  day: string;
  count: number;
}

/** Migration 011, the verifier integration (CONTRACT §11). */
export interface ApiKeyUsageBatchTable {
  /** The SDK's id for one report_usage batch; unique, so a retry of the same batch adds nothing. */
  batch_id: string;
  /** The verifier (staff member) that reported it. */
  staff_id: number;
  /** Total uses the batch added. */
  uses: number;
  created_at: string;
}

/** Migration 013, usage billing (CONTRACT §12): uses per key and usage period. */
export interface ApiKeyPeriodUsageTable {
  api_key_id: number;
  /** The usage period as ISO 8601 instants: start inclusive, end exclusive. */
  period_start: string;
  period_end: string;
  /** Uses; int8 on PostgreSQL (read it through Number()). */
  count: number | string;
}

/** Migration 013: the usage alerts sent, once per order, period, meter (migration 029) and threshold. */
export interface UsageThresholdTable {
  order_id: number;
  period_start: string;
  /** Migration 029: the meter's code (`calls` for the built-in meter, and for every row sent before 029). */
  meter: string;
  /** A percentage of the meter's included units (1–100): the plan's or the client's. */
  threshold: number;
  used: number | string;
  created_at: string;
}

/** Migration 013: the close of an order's usage period (the overage billed, once per order and period), with the `calls` meter's figures. */
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
  /** Minor units `calls` billed (the plan's other meters: usage_close_meters). int8 on PostgreSQL. */
  amount: number | string;
  /** The overage invoice; null when there was nothing to bill. */
  invoice_id: number | null;
  created_at: string;
}

/** Migration 028: one meter of the plan (not `calls`, whose figures are the close's own) billed at a close. */
export interface UsageCloseMeterTable {
  id: Generated<number>;
  close_id: number;
  /** The meter's place in the plan; the invoice lines follow it. */
  position: number;
  meter: string;
  name: string;
  unit: string;
  aggregation: string;
  used: number | string;
  /** Null: unlimited. */
  included: number | string | null;
  overage_units: number | string;
  /** Minor units billed for this meter; 0: nothing. int8 on PostgreSQL. */
  amount: number | string;
}

/** Migration 029: the alert percentages a client added for a meter of their order (client-alerts.ts). */
export interface UsageAlertPercentageTable {
  order_id: number;
  meter: string;
  /** A whole percentage of the meter's included units, 1–100. */
  percentage: number;
  created_at: string;
}

/**
 * Migration 042, key analytics (issue 25): answers per key, outcome and time bucket. Each answer is counted in the
 * minute, hour and day rows of its moment (analytics/outcome-writer.ts); counts are int8 on PostgreSQL (Number()).
 */
export interface ApiKeyOutcomeTable {
  api_key_id: number;
  /** `minute` (kept 48 hours), `hour` (90 days) or `day` (2 years). */
  unit: string;
  /** The bucket's first instant, `YYYY-MM-DDTHH:MM:00Z`. */
  at: string;
  valid: number | string;
  not_active: number | string;
  disabled: number | string;
  client_inactive: number | string;
  rate_limited: number | string;
  limit_exceeded: number | string;
  no_credit: number | string;
  trial_ended: number | string;
  expired: number | string;
}

/** Migration 042: each key's last answered check (any outcome) and the caller's address. */
export interface ApiKeyLastUseTable {
  api_key_id: number;
  /** `YYYY-MM-DDTHH:MM:SS.sssZ`. */
  at: string;
  /** The caller's address (a verifier's `ip`); null when a verifier named none. */
  ip: string | null;
}

/** Migration 043: lookups of unknown keys per caller address and time bucket (they have no key to count against). */
export interface ApiKeyNotFoundTable {
  /** The caller's address; '' when a verifier named none. */
  ip: string;
  unit: string;
  at: string;
  count: number | string;
}

export interface ApiKeyTables {
  api_keys: ApiKeyTable;
  api_key_outcomes: ApiKeyOutcomeTable;
  api_key_last_use: ApiKeyLastUseTable;
  api_key_not_found: ApiKeyNotFoundTable;
  api_key_usage: ApiKeyUsageTable;
  api_key_usage_batches: ApiKeyUsageBatchTable;
  api_key_period_usage: ApiKeyPeriodUsageTable;
  usage_thresholds: UsageThresholdTable;
  usage_alert_percentages: UsageAlertPercentageTable;
  usage_closes: UsageCloseTable;
  usage_close_meters: UsageCloseMeterTable;
}
