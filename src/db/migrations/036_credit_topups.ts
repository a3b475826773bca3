// Buying credits (issue 24 items 3 and 6): top-up packs staff define, the pack (and its bonus) each top-up invoice
// was bought for, each account's auto-recharge and low-balance settings with a counter per kind of crossing, and one
// row per auto-recharge crossing. The counters are bumped in the transaction of the debit that crossed, so a crossing
// is counted once whatever process wrote the debit; the number names the crossing's charge (its idempotency key).
import { withId, type AnyDb } from './helpers.ts';

export async function up(db: AnyDb): Promise<void> {
  await withId(db, db.schema.createTable('credit_packs'))
    .addColumn('title', 'varchar(100)', (col) => col.notNull())
    // Minor units credited as a paid top-up.
    .addColumn('amount', 'bigint', (col) => col.notNull())
    // Minor units credited beside it as a promotional grant (0: none).
    .addColumn('bonus', 'bigint', (col) => col.notNull().defaultTo(0))
    // The grant expires this many days after the payment (null: never).
    .addColumn('bonus_days', 'integer')
    .addColumn('enabled', 'integer', (col) => col.notNull().defaultTo(1))
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .addColumn('updated_at', 'varchar(32)', (col) => col.notNull())
    .execute();

  // The pack as it was bought: a pack edited or deleted later changes nothing about an invoice already issued.
  await db.schema
    .createTable('credit_pack_invoices')
    .addColumn('invoice_id', 'integer', (col) => col.primaryKey())
    .addColumn('pack_id', 'integer', (col) => col.notNull())
    .addColumn('client_id', 'integer', (col) => col.notNull())
    .addColumn('bonus', 'bigint', (col) => col.notNull())
    .addColumn('bonus_days', 'integer')
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .execute();

  await db.schema
    .createTable('credit_watches')
    .addColumn('client_id', 'integer', (col) => col.notNull())
    .addColumn('currency', 'varchar(3)', (col) => col.notNull())
    .addColumn('recharge_enabled', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('recharge_threshold', 'bigint')
    .addColumn('recharge_amount', 'bigint')
    .addColumn('recharge_crossings', 'integer', (col) => col.notNull().defaultTo(0))
    // Low-balance alert amount (null: off).
    .addColumn('alert_amount', 'bigint')
    .addColumn('alert_crossings', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('updated_at', 'varchar(32)', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('credit_watches_key').on('credit_watches').columns(['client_id', 'currency']).unique().execute();

  await withId(db, db.schema.createTable('credit_recharges'))
    .addColumn('client_id', 'integer', (col) => col.notNull())
    .addColumn('currency', 'varchar(3)', (col) => col.notNull())
    .addColumn('crossing', 'integer', (col) => col.notNull())
    .addColumn('amount', 'bigint', (col) => col.notNull())
    // pending (crossed, no invoice yet) | invoiced (its card charge queued) | stopped (auto-recharge turned off first)
    .addColumn('status', 'varchar(16)', (col) => col.notNull())
    .addColumn('invoice_id', 'integer')
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .addColumn('updated_at', 'varchar(32)', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('credit_recharges_crossing').on('credit_recharges').columns(['client_id', 'currency', 'crossing']).unique().execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('credit_recharges').execute();
  await db.schema.dropTable('credit_watches').execute();
  await db.schema.dropTable('credit_pack_invoices').execute();
  await db.schema.dropTable('credit_packs').execute();
}
