// Prepaid credits (issue 24): a ledger per client and currency. The balance is the sum of `credit_entries`, which are
// never updated or deleted; `credit_allocations` records which credit (a positive entry, a "lot") each debit took
// from, so an expiry takes only what is left of a grant; `credit_accounts` holds one row per client and currency that
// writers lock (a no-op update) so two payments from one balance run one after the other.
import { withId, type AnyDb } from './helpers.ts';

export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('credit_accounts')
    .addColumn('client_id', 'integer', (col) => col.notNull())
    .addColumn('currency', 'varchar(3)', (col) => col.notNull())
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .addColumn('locked_at', 'varchar(32)')
    .execute();
  await db.schema.createIndex('credit_accounts_key').on('credit_accounts').columns(['client_id', 'currency']).unique().execute();

  await withId(db, db.schema.createTable('credit_entries'))
    .addColumn('client_id', 'integer', (col) => col.notNull())
    .addColumn('currency', 'varchar(3)', (col) => col.notNull())
    // top_up | grant | consume | expire | refund | adjust
    .addColumn('kind', 'varchar(16)', (col) => col.notNull())
    // Signed minor units: credits are positive, debits negative.
    .addColumn('amount', 'bigint', (col) => col.notNull())
    // 1 for promotional credit (grants): spent before paid credit that expires no sooner.
    .addColumn('promotional', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('expires_at', 'varchar(32)')
    // The source's key ("invoice:12:top_up", "expire:40", …): the same source never writes twice.
    .addColumn('idempotency_key', 'varchar(160)', (col) => col.notNull())
    .addColumn('invoice_id', 'integer')
    .addColumn('staff_id', 'integer')
    .addColumn('note', 'varchar(255)')
    // An adjust written by admin/client/balance_delete names the entry it compensates.
    .addColumn('reverses_id', 'integer')
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('credit_entries_idempotency').on('credit_entries').column('idempotency_key').unique().execute();
  await db.schema.createIndex('credit_entries_account').on('credit_entries').columns(['client_id', 'currency', 'id']).execute();
  // The expiry pass looks for grants past their expiry.
  await db.schema.createIndex('credit_entries_expiry').on('credit_entries').columns(['kind', 'expires_at']).execute();

  await withId(db, db.schema.createTable('credit_allocations'))
    .addColumn('debit_id', 'integer', (col) => col.notNull())
    .addColumn('lot_id', 'integer', (col) => col.notNull())
    // Positive minor units taken from the lot.
    .addColumn('amount', 'bigint', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('credit_allocations_lot').on('credit_allocations').column('lot_id').execute();
  await db.schema.createIndex('credit_allocations_debit').on('credit_allocations').column('debit_id').execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('credit_allocations').execute();
  await db.schema.dropTable('credit_entries').execute();
  await db.schema.dropTable('credit_accounts').execute();
}
