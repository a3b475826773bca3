// The outbox (CONTRACT §10, DESIGN "Growing the house"): every side effect that leaves the process (e-mail first,
// later webhook deliveries and off-session charges) is a row written in the same transaction as the change that
// causes it, then delivered by one sender loop. `outbox_attempts` records each try. The e-mail module keeps what it
// sends in `emails` (one row per message, pointing at its outbox item) and staff-edited templates in
// `email_templates` (a code without a row uses the default written in the code).
import { withId, type AnyDb } from './helpers.ts';

export async function up(db: AnyDb): Promise<void> {
  await withId(db, db.schema.createTable('outbox_messages'))
    .addColumn('kind', 'varchar(64)', (col) => col.notNull())
    .addColumn('payload', 'text', (col) => col.notNull())
    // Optional idempotency key: a second enqueue with the same key returns the first item instead of adding one.
    .addColumn('dedupe_key', 'varchar(191)', (col) => col.unique())
    // pending (waiting or being sent) | sent | failed (gave up) | not_sent (no transport configured)
    .addColumn('status', 'varchar(16)', (col) => col.notNull())
    .addColumn('attempts', 'integer', (col) => col.notNull().defaultTo(0))
    // When the next attempt is due (ISO 8601 with milliseconds, so it sorts as text).
    .addColumn('run_at', 'varchar(32)', (col) => col.notNull())
    // The claim of the sender working on it, and the end of its lease: past it, another sender may take it over.
    .addColumn('claim_token', 'varchar(32)')
    .addColumn('claimed_until', 'varchar(32)')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .addColumn('updated_at', 'varchar(32)', (col) => col.notNull())
    .addColumn('done_at', 'varchar(32)')
    .execute();
  await db.schema.createIndex('outbox_messages_due').on('outbox_messages').columns(['status', 'run_at']).execute();
  await db.schema.createIndex('outbox_messages_kind').on('outbox_messages').columns(['kind', 'status', 'id']).execute();

  await withId(db, db.schema.createTable('outbox_attempts'))
    .addColumn('outbox_id', 'integer', (col) => col.notNull().references('outbox_messages.id').onDelete('cascade'))
    .addColumn('attempt', 'integer', (col) => col.notNull())
    // sent | error | not_sent
    .addColumn('outcome', 'varchar(16)', (col) => col.notNull())
    .addColumn('error', 'text')
    .addColumn('started_at', 'varchar(32)', (col) => col.notNull())
    .addColumn('finished_at', 'varchar(32)', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('outbox_attempts_item').on('outbox_attempts').columns(['outbox_id', 'attempt']).execute();

  await withId(db, db.schema.createTable('emails'))
    .addColumn('outbox_id', 'integer', (col) => col.notNull().unique().references('outbox_messages.id'))
    .addColumn('template', 'varchar(64)', (col) => col.notNull())
    // No foreign keys: the log outlives a deleted client or staff member.
    .addColumn('client_id', 'integer')
    .addColumn('staff_id', 'integer')
    .addColumn('sender', 'varchar(320)', (col) => col.notNull())
    .addColumn('to_email', 'varchar(320)', (col) => col.notNull())
    .addColumn('to_name', 'varchar(255)')
    .addColumn('subject', 'varchar(998)', (col) => col.notNull())
    .addColumn('html', 'text', (col) => col.notNull())
    .addColumn('text', 'text', (col) => col.notNull())
    // JSON object of link values that must not be readable from the database or by staff (reset and confirmation
    // links), sealed with the instance secret; the stored html/text hold markers that are replaced at send time.
    .addColumn('sealed', 'text')
    // JSON array of attachments rendered at send time, e.g. [{"type":"invoice_pdf","invoice_id":7}].
    .addColumn('attachments', 'text', (col) => col.notNull().defaultTo('[]'))
    .addColumn('message_id', 'varchar(255)', (col) => col.notNull())
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('emails_client').on('emails').columns(['client_id', 'id']).execute();

  await db.schema
    .createTable('email_templates')
    .addColumn('code', 'varchar(64)', (col) => col.primaryKey())
    .addColumn('subject', 'varchar(998)', (col) => col.notNull())
    .addColumn('content', 'text', (col) => col.notNull())
    .addColumn('enabled', 'integer', (col) => col.notNull())
    .addColumn('updated_at', 'varchar(32)', (col) => col.notNull())
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('email_templates').execute();
  await db.schema.dropTable('emails').execute();
  await db.schema.dropTable('outbox_attempts').execute();
  await db.schema.dropTable('outbox_messages').execute();
}
