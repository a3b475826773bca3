// Card payments (CONTRACT §9): the transaction log grows the fields of transaction_get_list; payment gateways get
// their customers, saved payment methods, inbound events (stored by id before they are acted on) and the off-session
// charge attempts of renewal invoices (driven by the outbox); each client's auto-pay choice.
import { sql } from 'kysely';
import { withId, type AnyDb } from './helpers.ts';

export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('transactions').addColumn('client_id', 'integer').execute();
  await db.schema.alterTable('transactions').addColumn('gateway', 'varchar(32)').execute();
  await db.schema.alterTable('transactions').addColumn('status', 'varchar(16)', (col) => col.notNull().defaultTo('processed')).execute();
  await db.schema.alterTable('transactions').addColumn('message', 'text').execute();
  // Rows written before this migration: `paid`/`refunded` become the contract's `payment`/`refund`, refunds were
  // stored negative, and the client and gateway code come from the invoice and the manual gateway.
  await sql`update transactions set type = 'payment' where type = 'paid'`.execute(db);
  await sql`update transactions set type = 'refund', amount = -amount where type = 'refunded' and amount < 0`.execute(db);
  await sql`update transactions set type = 'refund' where type = 'refunded'`.execute(db);
  await sql`update transactions set client_id = (select client_id from invoices where invoices.id = transactions.invoice_id)`.execute(db);
  await sql`update transactions set gateway = 'custom' where gateway_id = 1`.execute(db);
  await db.schema.createIndex('transactions_client').on('transactions').columns(['client_id', 'id']).execute();
  await db.schema.createIndex('transactions_ref').on('transactions').columns(['gateway', 'transaction_id']).execute();

  await db.schema
    .createTable('payment_profiles')
    .addColumn('client_id', 'integer', (col) => col.primaryKey().references('clients.id').onDelete('cascade'))
    // null: the client never chose; the instance default applies.
    .addColumn('auto_pay', 'integer')
    .addColumn('updated_at', 'varchar(32)', (col) => col.notNull())
    .execute();

  await withId(db, db.schema.createTable('gateway_customers'))
    .addColumn('client_id', 'integer', (col) => col.notNull().references('clients.id').onDelete('cascade'))
    .addColumn('gateway', 'varchar(32)', (col) => col.notNull())
    .addColumn('customer_ref', 'varchar(255)', (col) => col.notNull())
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .addUniqueConstraint('gateway_customers_client', ['gateway', 'client_id'])
    .execute();

  await withId(db, db.schema.createTable('payment_methods'))
    .addColumn('client_id', 'integer', (col) => col.notNull().references('clients.id').onDelete('cascade'))
    .addColumn('gateway', 'varchar(32)', (col) => col.notNull())
    .addColumn('method_ref', 'varchar(255)', (col) => col.notNull())
    .addColumn('brand', 'varchar(32)', (col) => col.notNull())
    .addColumn('last4', 'varchar(4)', (col) => col.notNull())
    .addColumn('exp_month', 'integer', (col) => col.notNull())
    .addColumn('exp_year', 'integer', (col) => col.notNull())
    .addColumn('is_default', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .addUniqueConstraint('payment_methods_ref', ['gateway', 'method_ref'])
    .execute();
  await db.schema.createIndex('payment_methods_client').on('payment_methods').columns(['client_id', 'id']).execute();

  await withId(db, db.schema.createTable('gateway_events'))
    .addColumn('gateway', 'varchar(32)', (col) => col.notNull())
    .addColumn('event_id', 'varchar(255)', (col) => col.notNull())
    .addColumn('type', 'varchar(128)', (col) => col.notNull())
    .addColumn('payload', 'text', (col) => col.notNull())
    .addColumn('received_at', 'varchar(32)', (col) => col.notNull())
    // null until the event's effects are committed (in the same transaction that sets it).
    .addColumn('processed_at', 'varchar(32)')
    .addColumn('attempts', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('last_error', 'text')
    .addUniqueConstraint('gateway_events_id', ['gateway', 'event_id'])
    .execute();
  await db.schema.createIndex('gateway_events_pending').on('gateway_events').columns(['processed_at', 'id']).execute();

  // One row per off-session charge of an invoice; the outbox item (kind `card_charge`) drives them.
  await withId(db, db.schema.createTable('payment_attempts'))
    .addColumn('invoice_id', 'integer', (col) => col.notNull().references('invoices.id').onDelete('cascade'))
    .addColumn('client_id', 'integer', (col) => col.notNull())
    .addColumn('attempt', 'integer', (col) => col.notNull())
    // processing → succeeded | failed | requires_action | canceled
    .addColumn('status', 'varchar(16)', (col) => col.notNull())
    .addColumn('txn_ref', 'varchar(255)')
    .addColumn('message', 'text')
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .addColumn('updated_at', 'varchar(32)', (col) => col.notNull())
    .addUniqueConstraint('payment_attempts_invoice', ['invoice_id', 'attempt'])
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  for (const table of ['payment_attempts', 'gateway_events', 'payment_methods', 'gateway_customers', 'payment_profiles']) {
    await db.schema.dropTable(table).execute();
  }
  await db.schema.dropIndex('transactions_ref').execute();
  await db.schema.dropIndex('transactions_client').execute();
  for (const column of ['message', 'status', 'gateway', 'client_id']) {
    await db.schema.alterTable('transactions').dropColumn(column).execute();
  }
}
