// Selling: products, carts, orders and their history, invoices, invoice items, transactions.
// Money columns are bigint minor units: PostgreSQL's integer would stop at 21 million in a two-decimal currency.
import { withId, type AnyDb } from './helpers.ts';

export async function up(db: AnyDb): Promise<void> {
  await withId(db, db.schema.createTable('products'))
    .addColumn('title', 'varchar(255)', (col) => col.notNull())
    .addColumn('slug', 'varchar(255)', (col) => col.notNull().unique())
    .addColumn('description', 'text')
    .addColumn('type', 'varchar(32)', (col) => col.notNull())
    .addColumn('status', 'varchar(16)', (col) => col.notNull())
    .addColumn('hidden', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('setup', 'varchar(16)', (col) => col.notNull())
    .addColumn('pricing', 'text', (col) => col.notNull())
    .addColumn('config', 'text', (col) => col.notNull().defaultTo('{}'))
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .addColumn('updated_at', 'varchar(32)', (col) => col.notNull())
    .execute();

  await withId(db, db.schema.createTable('cart_items'))
    .addColumn('client_id', 'integer', (col) => col.references('clients.id').onDelete('cascade'))
    .addColumn('session_hash', 'varchar(64)')
    .addColumn('product_id', 'integer', (col) => col.notNull().references('products.id').onDelete('cascade'))
    .addColumn('period', 'varchar(8)')
    .addColumn('quantity', 'integer', (col) => col.notNull())
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('cart_items_client').on('cart_items').column('client_id').execute();
  await db.schema.createIndex('cart_items_session').on('cart_items').column('session_hash').execute();

  await withId(db, db.schema.createTable('orders'))
    .addColumn('client_id', 'integer', (col) => col.notNull().references('clients.id'))
    .addColumn('product_id', 'integer', (col) => col.notNull().references('products.id'))
    .addColumn('title', 'varchar(255)', (col) => col.notNull())
    .addColumn('type', 'varchar(32)', (col) => col.notNull())
    .addColumn('period', 'varchar(8)')
    .addColumn('quantity', 'integer', (col) => col.notNull())
    .addColumn('price', 'bigint', (col) => col.notNull())
    .addColumn('currency', 'varchar(3)', (col) => col.notNull())
    .addColumn('status', 'varchar(16)', (col) => col.notNull())
    .addColumn('reason', 'varchar(255)')
    .addColumn('notes', 'text')
    .addColumn('config', 'text', (col) => col.notNull().defaultTo('{}'))
    .addColumn('expires_at', 'varchar(32)')
    .addColumn('activated_at', 'varchar(32)')
    .addColumn('suspended_at', 'varchar(32)')
    .addColumn('canceled_at', 'varchar(32)')
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .addColumn('updated_at', 'varchar(32)', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('orders_client').on('orders').columns(['client_id', 'id']).execute();
  await db.schema.createIndex('orders_product').on('orders').column('product_id').execute();
  await db.schema.createIndex('orders_status_expires').on('orders').columns(['status', 'expires_at']).execute();

  await withId(db, db.schema.createTable('order_history'))
    .addColumn('order_id', 'integer', (col) => col.notNull().references('orders.id').onDelete('cascade'))
    .addColumn('from_status', 'varchar(16)')
    .addColumn('to_status', 'varchar(16)', (col) => col.notNull())
    .addColumn('note', 'varchar(255)')
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('order_history_order').on('order_history').column('order_id').execute();

  await withId(db, db.schema.createTable('invoices'))
    .addColumn('hash', 'varchar(64)', (col) => col.notNull().unique())
    .addColumn('client_id', 'integer', (col) => col.notNull().references('clients.id'))
    .addColumn('status', 'varchar(16)', (col) => col.notNull())
    .addColumn('currency', 'varchar(3)', (col) => col.notNull())
    .addColumn('subtotal', 'bigint', (col) => col.notNull())
    .addColumn('total', 'bigint', (col) => col.notNull())
    .addColumn('due_at', 'varchar(32)')
    .addColumn('paid_at', 'varchar(32)')
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .addColumn('updated_at', 'varchar(32)', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('invoices_client').on('invoices').columns(['client_id', 'id']).execute();

  await withId(db, db.schema.createTable('invoice_items'))
    .addColumn('invoice_id', 'integer', (col) => col.notNull().references('invoices.id').onDelete('cascade'))
    .addColumn('order_id', 'integer', (col) => col.references('orders.id').onDelete('set null'))
    .addColumn('task', 'varchar(16)', (col) => col.notNull())
    .addColumn('title', 'varchar(255)', (col) => col.notNull())
    .addColumn('period', 'varchar(8)')
    .addColumn('quantity', 'integer', (col) => col.notNull())
    .addColumn('price', 'bigint', (col) => col.notNull())
    .addColumn('total', 'bigint', (col) => col.notNull())
    .addColumn('executed', 'integer', (col) => col.notNull().defaultTo(0))
    .execute();
  await db.schema.createIndex('invoice_items_invoice').on('invoice_items').column('invoice_id').execute();
  await db.schema.createIndex('invoice_items_order').on('invoice_items').column('order_id').execute();

  await withId(db, db.schema.createTable('transactions'))
    .addColumn('invoice_id', 'integer', (col) => col.notNull().references('invoices.id'))
    .addColumn('gateway_id', 'integer')
    .addColumn('transaction_id', 'varchar(255)')
    .addColumn('amount', 'bigint', (col) => col.notNull())
    .addColumn('currency', 'varchar(3)', (col) => col.notNull())
    .addColumn('type', 'varchar(16)', (col) => col.notNull())
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('transactions_invoice').on('transactions').column('invoice_id').execute();
}

export async function down(db: AnyDb): Promise<void> {
  for (const table of ['transactions', 'invoice_items', 'invoices', 'order_history', 'orders', 'cart_items', 'products']) {
    await db.schema.dropTable(table).execute();
  }
}
