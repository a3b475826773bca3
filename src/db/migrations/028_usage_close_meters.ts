// The close of a usage period bills every meter of the plan (issue 23 item 5). `usage_closes` keeps one row per order
// and period (its unique key is what makes the close happen once) with the built-in `calls` meter's figures;
// `usage_close_meters` adds one row per other meter of the plan in force at the close, with what it measured and
// billed, written in the same transaction — unique per (close, meter), so each meter of a period is billed once.
//
// And an index on `usage_events.received_at`: the idempotency window is 35 days from arrival, and the scheduled pruning
// deletes the older events in small batches, which must find them without reading the whole table. received_at grows
// with time, so the index is appended to at its right edge and costs ingestion little.
import { withId, type AnyDb } from './helpers.ts';

export async function up(db: AnyDb): Promise<void> {
  await withId(db, db.schema.createTable('usage_close_meters'))
    .addColumn('close_id', 'integer', (col) => col.notNull().references('usage_closes.id').onDelete('cascade'))
    // The plan's order of its meters (the invoice lines follow it).
    .addColumn('position', 'integer', (col) => col.notNull())
    .addColumn('meter', 'varchar(40)', (col) => col.notNull())
    // As the plan named them at the close (a later plan may rename or drop the meter).
    .addColumn('name', 'varchar(100)', (col) => col.notNull())
    .addColumn('unit', 'varchar(100)', (col) => col.notNull())
    .addColumn('aggregation', 'varchar(20)', (col) => col.notNull())
    // The period's quantity (whole numbers, as ingestion takes them), the included units (null: unlimited), the units
    // billed and their amount in minor units (0: nothing billed, e.g. a meter without overage).
    .addColumn('used', 'bigint', (col) => col.notNull())
    .addColumn('included', 'bigint')
    .addColumn('overage_units', 'bigint', (col) => col.notNull())
    .addColumn('amount', 'bigint', (col) => col.notNull())
    .addUniqueConstraint('usage_close_meters_close_meter', ['close_id', 'meter'])
    .execute();

  await db.schema.createIndex('usage_events_received').on('usage_events').columns(['received_at']).execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropIndex('usage_events_received').execute();
  await db.schema.dropTable('usage_close_meters').execute();
}
