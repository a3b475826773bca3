import type { Kysely } from 'kysely';
import { withId, type AnyDb } from './helpers.ts';

export async function up(db: AnyDb): Promise<void> {
  await withId(db, db.schema.createTable('admin_groups'))
    .addColumn('name', 'varchar(255)', (col) => col.notNull())
    .addColumn('permissions', 'text', (col) => col.notNull().defaultTo('[]'))
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .addColumn('updated_at', 'varchar(32)', (col) => col.notNull())
    .execute();

  await withId(db, db.schema.createTable('staff'))
    .addColumn('email', 'varchar(255)', (col) => col.notNull().unique())
    .addColumn('name', 'varchar(255)', (col) => col.notNull())
    .addColumn('password_hash', 'text', (col) => col.notNull())
    .addColumn('status', 'varchar(16)', (col) => col.notNull())
    .addColumn('admin_group_id', 'integer', (col) => col.notNull().references('admin_groups.id'))
    .addColumn('api_token_hash', 'varchar(64)', (col) => col.notNull().unique())
    .addColumn('api_token_enc', 'text', (col) => col.notNull())
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .addColumn('updated_at', 'varchar(32)', (col) => col.notNull())
    .execute();

  await withId(db, db.schema.createTable('clients'))
    .addColumn('email', 'varchar(255)', (col) => col.notNull().unique())
    .addColumn('password_hash', 'text')
    .addColumn('first_name', 'varchar(255)', (col) => col.notNull())
    .addColumn('last_name', 'varchar(255)')
    .addColumn('company', 'varchar(255)')
    .addColumn('phone', 'varchar(64)')
    .addColumn('address_1', 'varchar(255)')
    .addColumn('address_2', 'varchar(255)')
    .addColumn('city', 'varchar(255)')
    .addColumn('state', 'varchar(255)')
    .addColumn('postcode', 'varchar(64)')
    .addColumn('country', 'varchar(64)')
    .addColumn('currency', 'varchar(3)')
    .addColumn('status', 'varchar(16)', (col) => col.notNull())
    .addColumn('api_token_hash', 'varchar(64)', (col) => col.notNull().unique())
    .addColumn('api_token_enc', 'text', (col) => col.notNull())
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .addColumn('updated_at', 'varchar(32)', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('clients_created_at').on('clients').columns(['created_at', 'id']).execute();

  await db.schema
    .createTable('sessions')
    .addColumn('id_hash', 'varchar(64)', (col) => col.primaryKey())
    .addColumn('csrf_hash', 'varchar(64)', (col) => col.notNull())
    .addColumn('subject_type', 'varchar(16)', (col) => col.notNull())
    .addColumn('subject_id', 'integer')
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .addColumn('last_seen_at', 'varchar(32)', (col) => col.notNull())
    .addColumn('expires_at', 'varchar(32)', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('sessions_subject').on('sessions').columns(['subject_type', 'subject_id']).execute();

  // Group 1 is "Administrators": it may do everything. It exists before the first staff member does.
  const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
  await db.insertInto('admin_groups').values({ name: 'Administrators', permissions: '[]', created_at: now, updated_at: now }).execute();
  await db.insertInto('admin_groups').values({ name: 'Support', permissions: '["client.view"]', created_at: now, updated_at: now }).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['sessions', 'clients', 'staff', 'admin_groups']) await db.schema.dropTable(table).execute();
}
