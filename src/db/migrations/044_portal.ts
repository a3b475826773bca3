// The customer portal to embed (issue 25): single-use portal links, and the sessions they become. A link's token is
// stored only as its keyed hash; `used_at` is set once, by a compare-and-set, when the link is opened. The session a
// link becomes is an ordinary client session row carrying its scopes, its "Back" address and its fixed end.
import type { AnyDb } from './helpers.ts';
import { withId } from './helpers.ts';

export async function up(db: AnyDb): Promise<void> {
  await withId(db, db.schema.createTable('portal_links'))
    .addColumn('token_hash', 'varchar(128)', (col) => col.notNull())
    .addColumn('client_id', 'integer', (col) => col.notNull())
    // Comma-separated scope names (keys, usage, invoices, wallet).
    .addColumn('scopes', 'varchar(100)', (col) => col.notNull())
    .addColumn('return_url', 'varchar(2000)')
    // The staff member or verifier token that made the link.
    .addColumn('created_by', 'integer', (col) => col.notNull())
    .addColumn('expires_at', 'varchar(32)', (col) => col.notNull())
    .addColumn('used_at', 'varchar(32)')
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('portal_links_token_hash').on('portal_links').column('token_hash').unique().execute();
  await db.schema.createIndex('portal_links_expires_at').on('portal_links').column('expires_at').execute();

  await db.schema.alterTable('sessions').addColumn('portal_scopes', 'varchar(100)').execute();
  await db.schema.alterTable('sessions').addColumn('portal_return_url', 'varchar(2000)').execute();
  await db.schema.alterTable('sessions').addColumn('ends_at', 'varchar(32)').execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.alterTable('sessions').dropColumn('ends_at').execute();
  await db.schema.alterTable('sessions').dropColumn('portal_return_url').execute();
  await db.schema.alterTable('sessions').dropColumn('portal_scopes').execute();
  await db.schema.dropTable('portal_links').execute();
}
