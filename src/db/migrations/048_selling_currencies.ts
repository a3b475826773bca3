// Selling in several currencies (issue 26 item 6): every invoice keeps the rate it was issued at (FOSSBilling's
// `currency_rate`), the moment that rate was set and the default currency it was against, so a report converts it
// later exactly as it was sold; and a cart remembers the currency its owner chose (guest/cart/set_currency).
import { sql } from 'kysely';
import { withId, type AnyDb } from './helpers.ts';

export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('invoices').addColumn('currency_rate', 'varchar(32)').execute();
  await db.schema.alterTable('invoices').addColumn('currency_rate_at', 'varchar(32)').execute();
  await db.schema.alterTable('invoices').addColumn('currency_base', 'varchar(3)').execute();
  // Every invoice before this one was in the instance's one currency, which became the default (migration 038).
  await sql`update invoices set currency_rate = '1', currency_rate_at = created_at, currency_base = currency`.execute(db);

  await withId(db, db.schema.createTable('cart_currencies'))
    .addColumn('client_id', 'integer')
    .addColumn('session_hash', 'varchar(128)')
    .addColumn('currency', 'varchar(3)', (col) => col.notNull())
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('cart_currencies_client').on('cart_currencies').column('client_id').unique().execute();
  await db.schema.createIndex('cart_currencies_session').on('cart_currencies').column('session_hash').unique().execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('cart_currencies').execute();
  await db.schema.alterTable('invoices').dropColumn('currency_base').execute();
  await db.schema.alterTable('invoices').dropColumn('currency_rate_at').execute();
  await db.schema.alterTable('invoices').dropColumn('currency_rate').execute();
}
