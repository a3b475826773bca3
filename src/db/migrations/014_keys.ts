// Several keys per order, named, and rotation with a grace period (CONTRACT §12): `api_keys.order_id` stops being
// unique; each key gets an optional `name`; a reset may keep the replaced key's hash validating until `grace_until`.
// A deleted key is kept with `deleted_at` set (it no longer validates and is not listed) so that its uses still count
// towards the order's quota and usage: deleting a key must not hand back quota.
// SQLite cannot drop a column's UNIQUE constraint, so there the table is rebuilt (SQLite's documented procedure:
// foreign keys off, copy into a new table, drop, rename, check); PostgreSQL drops the constraint in place.
import { sql } from 'kysely';
import { isPostgres, withId, type AnyDb } from './helpers.ts';

const COLUMNS = ['id', 'order_id', 'client_id', 'key_hash', 'key_enc', 'valid', 'options', 'config', 'created_at', 'updated_at'];

async function rebuildSqlite(db: AnyDb): Promise<void> {
  // Kysely runs SQLite migrations outside a transaction, so the pragma takes effect; with foreign keys on, dropping
  // the old table would cascade into api_key_usage.
  await sql`PRAGMA foreign_keys = OFF`.execute(db);
  try {
    await withId(db, db.schema.createTable('api_keys_new'))
      .addColumn('order_id', 'integer', (col) => col.notNull().references('orders.id').onDelete('cascade'))
      .addColumn('client_id', 'integer', (col) => col.notNull())
      .addColumn('key_hash', 'varchar(64)', (col) => col.notNull().unique())
      .addColumn('key_enc', 'text', (col) => col.notNull())
      .addColumn('valid', 'integer', (col) => col.notNull().defaultTo(1))
      .addColumn('options', 'text', (col) => col.notNull())
      .addColumn('config', 'text', (col) => col.notNull().defaultTo('{}'))
      .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
      .addColumn('updated_at', 'varchar(32)', (col) => col.notNull())
      .execute();
    const columns = sql.join(COLUMNS.map((name) => sql.ref(name)));
    await sql`INSERT INTO api_keys_new (${columns}) SELECT ${columns} FROM api_keys`.execute(db);
    await db.schema.dropTable('api_keys').execute();
    await db.schema.alterTable('api_keys_new').renameTo('api_keys').execute();
    await db.schema.createIndex('api_keys_client').on('api_keys').columns(['client_id', 'id']).execute();
    const broken = await sql`PRAGMA foreign_key_check`.execute(db);
    if (broken.rows.length > 0) throw new Error('014_keys: foreign keys broken by the api_keys rebuild');
  } finally {
    await sql`PRAGMA foreign_keys = ON`.execute(db);
  }
}

export async function up(db: AnyDb): Promise<void> {
  if (isPostgres(db)) await sql`ALTER TABLE api_keys DROP CONSTRAINT api_keys_order_id_key`.execute(db);
  else await rebuildSqlite(db);
  await db.schema.createIndex('api_keys_order').on('api_keys').columns(['order_id', 'id']).execute();
  await db.schema.alterTable('api_keys').addColumn('name', 'varchar(100)').execute();
  await db.schema.alterTable('api_keys').addColumn('grace_hash', 'varchar(64)').execute();
  await db.schema.alterTable('api_keys').addColumn('grace_until', 'varchar(32)').execute();
  await db.schema.alterTable('api_keys').addColumn('deleted_at', 'varchar(32)').execute();
  await db.schema.createIndex('api_keys_grace_hash').on('api_keys').column('grace_hash').execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropIndex('api_keys_grace_hash').execute();
  await db.schema.dropIndex('api_keys_order').execute();
  await db.schema.alterTable('api_keys').dropColumn('deleted_at').execute();
  await db.schema.alterTable('api_keys').dropColumn('grace_until').execute();
  await db.schema.alterTable('api_keys').dropColumn('grace_hash').execute();
  await db.schema.alterTable('api_keys').dropColumn('name').execute();
}
