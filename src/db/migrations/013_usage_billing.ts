// Usage billing (CONTRACT §12): uses per key and usage period (the exact instants of a billing period, which daily
// counts cannot split), the 80%/100% thresholds announced once per order and period, and the close of each order's
// periods — one row per order and period (a unique key), so the overage is billed once however often and however
// concurrently the close job runs.
import { withId, type AnyDb } from './helpers.ts';

export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('api_key_period_usage')
    .addColumn('api_key_id', 'integer', (col) => col.notNull().references('api_keys.id').onDelete('cascade'))
    .addColumn('period_start', 'varchar(32)', (col) => col.notNull())
    .addColumn('period_end', 'varchar(32)', (col) => col.notNull())
    .addColumn('count', 'bigint', (col) => col.notNull())
    .addPrimaryKeyConstraint('api_key_period_usage_pk', ['api_key_id', 'period_start'])
    .execute();
  await db.schema.createIndex('api_key_period_usage_end').on('api_key_period_usage').columns(['period_end', 'api_key_id']).execute();

  await db.schema
    .createTable('usage_thresholds')
    .addColumn('order_id', 'integer', (col) => col.notNull().references('orders.id').onDelete('cascade'))
    .addColumn('period_start', 'varchar(32)', (col) => col.notNull())
    .addColumn('threshold', 'integer', (col) => col.notNull())
    .addColumn('used', 'bigint', (col) => col.notNull())
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .addPrimaryKeyConstraint('usage_thresholds_pk', ['order_id', 'period_start', 'threshold'])
    .execute();

  await withId(db, db.schema.createTable('usage_closes'))
    .addColumn('order_id', 'integer', (col) => col.notNull().references('orders.id').onDelete('cascade'))
    .addColumn('client_id', 'integer', (col) => col.notNull())
    .addColumn('period_start', 'varchar(32)', (col) => col.notNull())
    .addColumn('period_end', 'varchar(32)', (col) => col.notNull())
    .addColumn('used', 'bigint', (col) => col.notNull())
    .addColumn('included', 'bigint')
    .addColumn('overage_units', 'bigint', (col) => col.notNull())
    .addColumn('amount', 'bigint', (col) => col.notNull())
    .addColumn('invoice_id', 'integer')
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .addUniqueConstraint('usage_closes_order_period', ['order_id', 'period_start'])
    .execute();

  // Uses counted before this migration were kept per day: carry them into their calendar month.
  const days = (await db.selectFrom('api_key_usage').select(['api_key_id', 'day', 'count']).execute()) as Array<{ api_key_id: number; day: string; count: number | string }>;
  const months = new Map<string, { api_key_id: number; period_start: string; period_end: string; count: number }>();
  for (const row of days) {
    const [year, month] = row.day.split('-').map(Number) as [number, number];
    const start = new Date(Date.UTC(year, month - 1, 1)).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const end = new Date(Date.UTC(year, month, 1)).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const id = `${row.api_key_id} ${start}`;
    const entry = months.get(id) ?? { api_key_id: row.api_key_id, period_start: start, period_end: end, count: 0 };
    entry.count += Number(row.count);
    months.set(id, entry);
  }
  const rows = [...months.values()];
  for (let i = 0; i < rows.length; i += 500) await db.insertInto('api_key_period_usage').values(rows.slice(i, i + 500)).execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('usage_closes').execute();
  await db.schema.dropTable('usage_thresholds').execute();
  await db.schema.dropTable('api_key_period_usage').execute();
}
