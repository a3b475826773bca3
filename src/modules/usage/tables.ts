// Tables of the usage module, metered events (migration 026). Only this module writes them.

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

export interface UsageTables {
  usage_events: UsageEventTable;
}
