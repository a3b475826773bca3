// The API key product: one key per order (looked up by keyed hash, readable by its owner through AES-GCM), and usage
// counts per key and calendar day.
import { withId, type AnyDb } from './helpers.ts';

export async function up(db: AnyDb): Promise<void> {
  await withId(db, db.schema.createTable('api_keys'))
    .addColumn('order_id', 'integer', (col) => col.notNull().unique().references('orders.id').onDelete('cascade'))
    .addColumn('client_id', 'integer', (col) => col.notNull())
    .addColumn('key_hash', 'varchar(64)', (col) => col.notNull().unique())
    .addColumn('key_enc', 'text', (col) => col.notNull())
    .addColumn('valid', 'integer', (col) => col.notNull().defaultTo(1))
    .addColumn('options', 'text', (col) => col.notNull())
    .addColumn('config', 'text', (col) => col.notNull().defaultTo('{}'))
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .addColumn('updated_at', 'varchar(32)', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('api_keys_client').on('api_keys').columns(['client_id', 'id']).execute();

  await db.schema
    .createTable('api_key_usage')
    .addColumn('api_key_id', 'integer', (col) => col.notNull().references('api_keys.id').onDelete('cascade'))
    .addColumn('day', 'varchar(10)', (col) => col.notNull())
    .addColumn('count', 'integer', (col) => col.notNull())
    .addPrimaryKeyConstraint('api_key_usage_pk', ['api_key_id', 'day'])
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('api_key_usage').execute();
  await db.schema.dropTable('api_keys').execute();
}
