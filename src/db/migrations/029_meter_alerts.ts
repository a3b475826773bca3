// Alerts per meter (issue 23 item 7). `usage_thresholds` records each alert sent — once per order, period, meter and
// percentage — so it gains `meter` and its primary key includes it; the rows sent before are the built-in `calls`
// meter's. Neither dialect can change a primary key in place the same way (SQLite cannot at all), so the table is
// rebuilt: renamed, created anew under a new key name (PostgreSQL's old key index keeps its name until the old table
// goes), filled from the old one, and the old one dropped.
//
// `usage_alert_percentages` holds the percentages a client added for a meter of their order, one row each, applied in
// addition to the plan's (serviceapikey/usage/client-alerts.ts).
import { sql, type CreateTableBuilder } from 'kysely';
import type { AnyDb } from './helpers.ts';

async function createThresholds(db: AnyDb, name: string, keyName: string, withMeter: boolean): Promise<void> {
  // Typed loosely: which columns exist depends on `withMeter`.
  let table: CreateTableBuilder<string, string> = db.schema
    .createTable(name)
    .addColumn('order_id', 'integer', (col) => col.notNull().references('orders.id').onDelete('cascade'))
    .addColumn('period_start', 'varchar(32)', (col) => col.notNull());
  if (withMeter) table = table.addColumn('meter', 'varchar(40)', (col) => col.notNull());
  await table
    .addColumn('threshold', 'integer', (col) => col.notNull())
    .addColumn('used', 'bigint', (col) => col.notNull())
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .addPrimaryKeyConstraint(keyName, withMeter ? ['order_id', 'period_start', 'meter', 'threshold'] : ['order_id', 'period_start', 'threshold'])
    .execute();
}

export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('usage_thresholds').renameTo('usage_thresholds_013').execute();
  await createThresholds(db, 'usage_thresholds', 'usage_thresholds_meter_pk', true);
  await db
    .insertInto('usage_thresholds')
    .columns(['order_id', 'period_start', 'meter', 'threshold', 'used', 'created_at'])
    .expression(db.selectFrom('usage_thresholds_013').select(['order_id', 'period_start', sql.lit('calls').as('meter'), 'threshold', 'used', 'created_at']))
    .execute();
  await db.schema.dropTable('usage_thresholds_013').execute();

  await db.schema
    .createTable('usage_alert_percentages')
    .addColumn('order_id', 'integer', (col) => col.notNull().references('orders.id').onDelete('cascade'))
    // A meter code of the order's plan (`calls` for the built-in one), as meters-config.ts bounds it.
    .addColumn('meter', 'varchar(40)', (col) => col.notNull())
    // A whole percentage of the meter's included units, 1 to 100.
    .addColumn('percentage', 'integer', (col) => col.notNull())
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .addPrimaryKeyConstraint('usage_alert_percentages_pk', ['order_id', 'meter', 'percentage'])
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('usage_alert_percentages').execute();
  // Back to one row per order, period and threshold: the `calls` rows are the ones 013's table can hold.
  await db.schema.alterTable('usage_thresholds').renameTo('usage_thresholds_029').execute();
  await createThresholds(db, 'usage_thresholds', 'usage_thresholds_pk', false);
  await db
    .insertInto('usage_thresholds')
    .columns(['order_id', 'period_start', 'threshold', 'used', 'created_at'])
    .expression(db.selectFrom('usage_thresholds_029').select(['order_id', 'period_start', 'threshold', 'used', 'created_at']).where('meter', '=', 'calls'))
    .execute();
  await db.schema.dropTable('usage_thresholds_029').execute();
}
