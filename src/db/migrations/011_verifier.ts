// Verifier credentials (CONTRACT §11): the usage batches an SDK reported, so a retried batch never counts twice.
import type { AnyDb } from './helpers.ts';

export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('api_key_usage_batches')
    .addColumn('batch_id', 'varchar(128)', (col) => col.primaryKey())
    .addColumn('staff_id', 'integer', (col) => col.notNull())
    .addColumn('uses', 'integer', (col) => col.notNull())
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('api_key_usage_batches').execute();
}
