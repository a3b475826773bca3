// When the scheduled jobs last ran to the end (FOSSBilling's `last_cron_exec`, answered by admin/cron/info): one row,
// written by whichever process ran them (the server's scheduler or `npm run cron`), so every process reads the same.
import type { AnyDb } from './helpers.ts';

export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('cron_status')
    .addColumn('id', 'integer', (col) => col.primaryKey())
    .addColumn('last_run_at', 'varchar(32)', (col) => col.notNull())
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('cron_status').execute();
}
