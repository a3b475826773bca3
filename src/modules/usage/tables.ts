// Tables of the usage module: metered events (migration 026) and what each meter measured (migration 027). Only this module writes them.

/** One accepted usage event. (order_id, event_id) is unique: the event's id is its idempotency key in its order. */
export interface UsageEventTable {
  order_id: number;
  /** The sender's id for the event (1–128 characters). */
  event_id: string;
  /** The meter's code on the order's plan (`calls` is always one). */
  meter: string;
  /** The event's measure; null when it carried none. A float8 on PostgreSQL, which pg reads back as a number. */
  value: number | null;
  /** ISO 8601 UTC, milliseconds: when the event happened (the sender's timestamp, or its arrival). */
  timestamp: string;
  /** JSON object of the event's properties, or null. */
  properties: string | null;
  /** ISO 8601 UTC: when it was accepted. */
  received_at: string;
}

/** Migration 027: what a meter measured in one usage period and UTC day (rollup.ts). */
export interface UsageMeterDayTable {
  order_id: number;
  meter: string;
  period_start: string;
  period_end: string;
  /** `YYYY-MM-DD`, UTC. */
  day: string;
  /** count / sum / unique_count: the day's part of the period's quantity; max: the day's greatest; latest: see latest_at. */
  quantity: number;
  /** latest meters: the timestamp of the event whose value `quantity` is; null for the others. */
  latest_at: string | null;
}

/** Migration 027: the distinct values a unique_count meter has seen in a period. */
export interface UsageMeterUniqueTable {
  order_id: number;
  meter: string;
  period_start: string;
  value: string;
}

export interface UsageTables {
  usage_events: UsageEventTable;
  usage_meter_days: UsageMeterDayTable;
  usage_meter_uniques: UsageMeterUniqueTable;
}
