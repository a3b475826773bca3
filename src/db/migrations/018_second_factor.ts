// Second-factor lockout (issue 20, M5): failed two-factor codes counted per account in the database, so the ceiling
// holds whatever address or process the guesses come from.
import type { AnyDb } from './helpers.ts';

export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('account_second_factor_failures')
    .addColumn('subject_type', 'varchar(16)', (col) => col.notNull())
    .addColumn('subject_id', 'integer', (col) => col.notNull())
    .addColumn('window_started_at', 'varchar(32)', (col) => col.notNull())
    .addColumn('failures', 'integer', (col) => col.notNull())
    .addColumn('locked_until', 'varchar(32)')
    .addPrimaryKeyConstraint('account_second_factor_failures_pk', ['subject_type', 'subject_id'])
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('account_second_factor_failures').execute();
}
