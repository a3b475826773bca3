// Meter rollups (issue 23): what each meter of an order measured, per usage period and UTC day, written in the same
// transaction that stores the events (src/modules/usage/rollup.ts). A period's quantity is read from its day rows —
// the sum for count, sum and unique_count (a distinct value counts on the day it is first seen in the period), the
// greatest for max, the row with the latest `latest_at` for latest — so the close, get_info and the daily series never
// read the raw events, which are kept only for the idempotency window.
//
// `usage_meter_uniques` holds the distinct values a unique_count meter has seen in a period: inserting a value that is
// already there does nothing, so a value counts once however many events, batches or processes carry it.
import type { AnyDb } from './helpers.ts';

export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('usage_meter_days')
    .addColumn('order_id', 'integer', (col) => col.notNull())
    .addColumn('meter', 'varchar(40)', (col) => col.notNull())
    // The usage period (ISO 8601 instants, as api_key_period_usage keeps them) and the UTC day `YYYY-MM-DD`.
    .addColumn('period_start', 'varchar(32)', (col) => col.notNull())
    .addColumn('period_end', 'varchar(32)', (col) => col.notNull())
    .addColumn('day', 'varchar(10)', (col) => col.notNull())
    // Whole numbers (tokens, bytes, milliseconds); a float8 on PostgreSQL so pg reads it back as a number. Exact up to
    // 2^53, where lib/meters' sums stop.
    .addColumn('quantity', 'double precision', (col) => col.notNull())
    // latest meters: the timestamp of the event whose value `quantity` is (ISO 8601 with milliseconds); else null.
    .addColumn('latest_at', 'varchar(32)')
    .execute();
  await db.schema.createIndex('usage_meter_days_key').on('usage_meter_days').columns(['order_id', 'meter', 'period_start', 'day']).unique().execute();
  // The close looks for periods that ended and are not closed.
  await db.schema.createIndex('usage_meter_days_period_end').on('usage_meter_days').columns(['period_end']).execute();

  await db.schema
    .createTable('usage_meter_uniques')
    .addColumn('order_id', 'integer', (col) => col.notNull())
    .addColumn('meter', 'varchar(40)', (col) => col.notNull())
    .addColumn('period_start', 'varchar(32)', (col) => col.notNull())
    // The counted property's value as text (lib/meters scalarText); a long one as `sha256:<hex>` so the index stays small.
    .addColumn('value', 'varchar(80)', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('usage_meter_uniques_key').on('usage_meter_uniques').columns(['order_id', 'meter', 'period_start', 'value']).unique().execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('usage_meter_uniques').execute();
  await db.schema.dropTable('usage_meter_days').execute();
}
