// Billing (CONTRACT §8): settings, taxes, coupons, invoice numbers and snapshots, tax-exempt clients, and the order
// columns self-service needs (cancel at period end, a plan change waiting for the renewal, a recurring coupon).
// Money columns are bigint minor units; rates and percentages are integers in thousandths of a percent
// (20% = 20000, 7.25% = 7250), so no arithmetic on them ever needs floating point.
import { withId, type AnyDb } from './helpers.ts';

export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('settings')
    .addColumn('name', 'varchar(64)', (col) => col.primaryKey())
    // Plain text, or `v1.…` AES-GCM sealed text for the secrets (sealed by the instance secret box).
    .addColumn('value', 'text', (col) => col.notNull())
    .addColumn('updated_at', 'varchar(32)', (col) => col.notNull())
    .execute();

  await withId(db, db.schema.createTable('taxes'))
    .addColumn('name', 'varchar(255)', (col) => col.notNull())
    .addColumn('rate', 'integer', (col) => col.notNull())
    .addColumn('country', 'varchar(2)')
    .addColumn('state', 'varchar(255)')
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .addColumn('updated_at', 'varchar(32)', (col) => col.notNull())
    .execute();

  await withId(db, db.schema.createTable('promos'))
    .addColumn('code', 'varchar(64)', (col) => col.notNull().unique())
    .addColumn('type', 'varchar(16)', (col) => col.notNull())
    // percentage: thousandths of a percent; absolute: minor units.
    .addColumn('value', 'bigint', (col) => col.notNull())
    .addColumn('products', 'text')
    .addColumn('periods', 'text')
    .addColumn('max_uses', 'integer')
    .addColumn('used', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('once_per_client', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('recurring', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('active', 'integer', (col) => col.notNull().defaultTo(1))
    .addColumn('start_at', 'varchar(32)')
    .addColumn('end_at', 'varchar(32)')
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .addColumn('updated_at', 'varchar(32)', (col) => col.notNull())
    .execute();

  await withId(db, db.schema.createTable('promo_uses'))
    .addColumn('promo_id', 'integer', (col) => col.notNull().references('promos.id').onDelete('cascade'))
    .addColumn('client_id', 'integer', (col) => col.notNull().references('clients.id').onDelete('cascade'))
    .addColumn('invoice_id', 'integer')
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('promo_uses_promo_client').on('promo_uses').columns(['promo_id', 'client_id']).execute();

  // The coupon applied to a cart: a client's cart or a guest session's, one coupon per cart.
  await withId(db, db.schema.createTable('cart_promos'))
    .addColumn('client_id', 'integer', (col) => col.unique().references('clients.id').onDelete('cascade'))
    .addColumn('session_hash', 'varchar(64)', (col) => col.unique())
    .addColumn('promo_id', 'integer', (col) => col.notNull().references('promos.id').onDelete('cascade'))
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .execute();

  await db.schema.alterTable('clients').addColumn('tax_exempt', 'integer', (col) => col.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('clients').addColumn('vat_number', 'varchar(64)').execute();

  await db.schema.alterTable('invoices').addColumn('number', 'varchar(64)').execute();
  await db.schema.alterTable('invoices').addColumn('seller', 'text').execute();
  await db.schema.alterTable('invoices').addColumn('buyer', 'text').execute();
  await db.schema.alterTable('invoices').addColumn('tax_name', 'varchar(255)').execute();
  await db.schema.alterTable('invoices').addColumn('tax_rate', 'integer', (col) => col.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('invoices').addColumn('tax', 'bigint', (col) => col.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('invoices').addColumn('discount', 'bigint', (col) => col.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('invoices').addColumn('promo_code', 'varchar(64)').execute();
  // NULLs do not collide in a unique index on either database: only issued numbers must be unique.
  await db.schema.createIndex('invoices_number').on('invoices').column('number').unique().execute();

  // A plan change paid by an invoice ('change' task): the plan it moves the order to (period and price are the
  // item's own columns).
  await db.schema.alterTable('invoice_items').addColumn('product_id', 'integer').execute();

  await db.schema.alterTable('orders').addColumn('promo_id', 'integer').execute();
  await db.schema.alterTable('orders').addColumn('cancel_at_period_end', 'integer', (col) => col.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('orders').addColumn('next_product_id', 'integer').execute();
  await db.schema.alterTable('orders').addColumn('next_period', 'varchar(8)').execute();
  await db.schema.alterTable('orders').addColumn('next_price', 'bigint').execute();
}

export async function down(db: AnyDb): Promise<void> {
  for (const column of ['promo_id', 'cancel_at_period_end', 'next_product_id', 'next_period', 'next_price']) {
    await db.schema.alterTable('orders').dropColumn(column).execute();
  }
  await db.schema.alterTable('invoice_items').dropColumn('product_id').execute();
  await db.schema.dropIndex('invoices_number').execute();
  for (const column of ['number', 'seller', 'buyer', 'tax_name', 'tax_rate', 'tax', 'discount', 'promo_code']) {
    await db.schema.alterTable('invoices').dropColumn(column).execute();
  }
  await db.schema.alterTable('clients').dropColumn('tax_exempt').execute();
  await db.schema.alterTable('clients').dropColumn('vat_number').execute();
  for (const table of ['cart_promos', 'promo_uses', 'promos', 'taxes', 'settings']) await db.schema.dropTable(table).execute();
}
