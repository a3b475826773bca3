// Prepaid plans (issue 24 item 2): usage drawn from the client's balance as it is measured.
// - `credit_usage_draws`: per order, meter and usage period, what the balance has been drawn for so far (minor units,
//   a high-water mark). A draw prices the period's cumulative quantity and takes only the difference from this row,
//   in the transaction that writes the `consume` entry, so a retry or a second process never draws twice.
// - `credit_depletions`: one row per depletion of a balance (named by the last credit before it), so the
//   `wallet.depleted` webhook goes once however many processes refuse the keys.
import type { AnyDb } from './helpers.ts';

export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('credit_usage_draws')
    .addColumn('order_id', 'integer', (col) => col.notNull())
    .addColumn('meter', 'varchar(40)', (col) => col.notNull())
    .addColumn('period_start', 'varchar(32)', (col) => col.notNull())
    .addColumn('client_id', 'integer', (col) => col.notNull())
    .addColumn('drawn', 'bigint', (col) => col.notNull())
    .addColumn('updated_at', 'varchar(32)', (col) => col.notNull())
    .addPrimaryKeyConstraint('credit_usage_draws_pk', ['order_id', 'meter', 'period_start'])
    .execute();

  await db.schema
    .createTable('credit_depletions')
    .addColumn('client_id', 'integer', (col) => col.notNull())
    .addColumn('currency', 'varchar(3)', (col) => col.notNull())
    // The account's latest credit entry when the balance ran out (0: none yet): a top-up after it starts a new depletion.
    .addColumn('after_entry_id', 'integer', (col) => col.notNull())
    .addColumn('order_id', 'integer', (col) => col.notNull())
    .addColumn('balance', 'bigint', (col) => col.notNull())
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .addPrimaryKeyConstraint('credit_depletions_pk', ['client_id', 'currency', 'after_entry_id'])
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('credit_depletions').execute();
  await db.schema.dropTable('credit_usage_draws').execute();
}
