// The records the API key module hands to others: a check's reason, get_info's answer and its usage summary, a key
// as staff and clients see it.
import type { CustomParams } from './options.ts';
import type { MeterReport } from './usage/meter-series.ts';
import type { CallsReport } from './usage/usage-range.ts';
import type { MeterSummary } from './usage/meter-summary.ts';

export type Reason = 'VALID' | 'NOT_FOUND' | 'DISABLED' | 'CLIENT_INACTIVE' | 'NOT_ACTIVE' | 'EXPIRED' | 'LIMIT_EXCEEDED' | 'RATE_LIMITED' | 'TRIAL_ENDED' | 'NO_CREDIT';

export interface UsageSummary {
  /** Calendar month: its first and last day (`YYYY-MM-DD`); billing period: its start and end instants. */
  period_start: string;
  period_end: string;
  used: number;
  limit: number | null;
  remaining: number | null;
  /** CONTRACT §12: uses included per period (null: unlimited), uses beyond them billed, their projected price. */
  included: number | null;
  overage_units: number;
  /** Null when the plan bills no overage. */
  overage_amount: string | null;
  hard_limit: number | null;
  /**
   * The meter whose hard limit the order has reached this period, so that check refuses its keys (LIMIT_EXCEEDED):
   * `calls` for the built-in meter (its hard limit, or the quota under enforce_limit), else a plan meter's code; null
   * while no limit is reached.
   */
  limited_by: string | null;
  /** Each meter of the plan (issue 23): its quantity this period and its figures; empty for a plan without meters. */
  meters: MeterSummary[];
}

export interface KeyInfo {
  valid: 0 | 1;
  config: CustomParams | null;
  reason: Reason;
  usage: UsageSummary | null;
  /** Seconds until the per-key rate limit lets calls through again (RATE_LIMITED only). */
  retry_after: number | null;
  /** The end of this key's grace period when it is a replaced key still validating (a reset with grace_seconds). */
  rotating_until: string | null;
  /** Prepaid plans only (issue 24): the client's balance (decimal) and its currency; absent for other plans. */
  credit?: { balance: string; currency: string };
}

export interface KeyRecord {
  /** The key's own id (an order may hold several keys, CONTRACT §12). */
  id: number;
  name: string | null;
  order_id: number;
  client_id: number;
  api_key: string;
  valid: 0 | 1;
  config: CustomParams;
  /** Whether check would accept the key right now, and why not. */
  reason: Reason;
  /** When the key this one replaced stops validating (a reset with grace_seconds), while in the future; else null. */
  rotating_until: string | null;
  created_at: string;
  updated_at: string;
}

/** client and admin serviceapikey/usage: the calls per day, and each of the plan's own meters (issue 23 item 4). */
export interface UsageReport extends CallsReport {
  meters: MeterReport[];
}
