// Account security (CONTRACT §10): single-use tokens for password reset and e-mail confirmation, TOTP second factor
// with recovery codes, and whether a client's e-mail address has been confirmed.
import { sql } from 'kysely';
import { withId, type AnyDb } from './helpers.ts';

export async function up(db: AnyDb): Promise<void> {
  await withId(db, db.schema.createTable('account_tokens'))
    .addColumn('purpose', 'varchar(32)', (col) => col.notNull())
    .addColumn('subject_type', 'varchar(16)', (col) => col.notNull())
    .addColumn('subject_id', 'integer', (col) => col.notNull())
    .addColumn('token_hash', 'varchar(64)', (col) => col.notNull().unique())
    .addColumn('new_email', 'varchar(255)')
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .addColumn('expires_at', 'varchar(32)', (col) => col.notNull())
    .addColumn('used_at', 'varchar(32)')
    .execute();
  await db.schema.createIndex('account_tokens_subject').on('account_tokens').columns(['subject_type', 'subject_id', 'purpose']).execute();

  await db.schema
    .createTable('account_totp')
    .addColumn('subject_type', 'varchar(16)', (col) => col.notNull())
    .addColumn('subject_id', 'integer', (col) => col.notNull())
    .addColumn('secret_enc', 'text', (col) => col.notNull())
    .addColumn('enabled_at', 'varchar(32)')
    .addColumn('last_step', 'integer')
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .addColumn('updated_at', 'varchar(32)', (col) => col.notNull())
    .addPrimaryKeyConstraint('account_totp_pk', ['subject_type', 'subject_id'])
    .execute();

  await withId(db, db.schema.createTable('account_recovery_codes'))
    .addColumn('subject_type', 'varchar(16)', (col) => col.notNull())
    .addColumn('subject_id', 'integer', (col) => col.notNull())
    .addColumn('code_hash', 'varchar(64)', (col) => col.notNull())
    .addColumn('used_at', 'varchar(32)')
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .execute();
  await db.schema
    .createIndex('account_recovery_codes_subject')
    .on('account_recovery_codes')
    .columns(['subject_type', 'subject_id', 'code_hash'])
    .unique()
    .execute();

  await db.schema.alterTable('clients').addColumn('email_verified_at', 'varchar(32)').execute();
  // Accounts that exist before verification existed are taken as confirmed: nobody can ask them to prove it now.
  await sql`update clients set email_verified_at = created_at`.execute(db);
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.alterTable('clients').dropColumn('email_verified_at').execute();
  await db.schema.dropTable('account_recovery_codes').execute();
  await db.schema.dropTable('account_totp').execute();
  await db.schema.dropTable('account_tokens').execute();
}
