// Usage events (issue 23, ingestion): what `admin/usage/ingest` accepted, one row per event. The event's own `id` is
// its idempotency key within its order, so the unique index on (order_id, event_id) is what makes ingestion
// exactly-once: an insert that meets it does nothing, whichever process or retry sends the event again.
//
// Lean on purpose (the table grows by every event a customer's API sees): no surrogate id, the timestamp as ISO 8601
// UTC text (sorts as it reads), and one more index for the per-period reads of a meter that the close and get_info
// will make: (order_id, meter, timestamp).
import type { AnyDb } from './helpers.ts';

export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('usage_events')
    .addColumn('order_id', 'integer', (col) => col.notNull())
    .addColumn('event_id', 'varchar(128)', (col) => col.notNull())
    .addColumn('meter', 'varchar(40)', (col) => col.notNull())
    // Null when the event carried none (count and unique_count meters need none). A measure, not money: tokens, bytes
    // and seconds may be fractional.
    .addColumn('value', 'double precision')
    .addColumn('timestamp', 'varchar(32)', (col) => col.notNull())
    // JSON object, or null when the event carried none.
    .addColumn('properties', 'text')
    // When it arrived: the idempotency window (35 days) is counted from here when old events are pruned.
    .addColumn('received_at', 'varchar(32)', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('usage_events_order_event').on('usage_events').columns(['order_id', 'event_id']).unique().execute();
  await db.schema.createIndex('usage_events_order_meter_time').on('usage_events').columns(['order_id', 'meter', 'timestamp']).execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('usage_events').execute();
}
