// Key analytics (issue 25): every check, get_info and verifier answer counted per key, outcome and time bucket (one
// row per key, unit and bucket; a column per outcome), and each key's last use. Rows of a deleted key go with it.
import type { AnyDb } from './helpers.ts';

const OUTCOME_COLUMNS = ['valid', 'not_active', 'disabled', 'client_inactive', 'rate_limited', 'limit_exceeded', 'no_credit', 'trial_ended', 'expired'];

export async function up(db: AnyDb): Promise<void> {
  let table = db.schema
    .createTable('api_key_outcomes')
    .addColumn('api_key_id', 'integer', (col) => col.notNull().references('api_keys.id').onDelete('cascade'))
    .addColumn('unit', 'varchar(6)', (col) => col.notNull())
    .addColumn('at', 'varchar(20)', (col) => col.notNull());
  // bigint: a day of a busy key can pass 2^31 answers.
  for (const column of OUTCOME_COLUMNS) table = table.addColumn(column, 'bigint', (col) => col.notNull().defaultTo(0));
  await table.addPrimaryKeyConstraint('api_key_outcomes_pk', ['api_key_id', 'unit', 'at']).execute();
  // The retention prune deletes by unit and age.
  await db.schema.createIndex('api_key_outcomes_unit_at').on('api_key_outcomes').columns(['unit', 'at']).execute();

  await db.schema
    .createTable('api_key_last_use')
    .addColumn('api_key_id', 'integer', (col) => col.primaryKey().references('api_keys.id').onDelete('cascade'))
    .addColumn('at', 'varchar(32)', (col) => col.notNull())
    .addColumn('ip', 'varchar(45)')
    .execute();
  // The staff keys list sorts by last use.
  await db.schema.createIndex('api_key_last_use_at').on('api_key_last_use').column('at').execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('api_key_last_use').execute();
  await db.schema.dropTable('api_key_outcomes').execute();
}
