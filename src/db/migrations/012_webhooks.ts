// Webhooks (CONTRACT §11): the operator's endpoints, one delivery per (event, endpoint) and each attempt of it.
// A delivery is sent through the outbox (kind `webhook`): its row points at the current outbox item, which holds
// the schedule and status; `webhook_attempts` keeps what staff need to debug a receiver (status code, duration, error).
import { withId, type AnyDb } from './helpers.ts';

export async function up(db: AnyDb): Promise<void> {
  await withId(db, db.schema.createTable('webhooks'))
    .addColumn('url', 'varchar(2048)', (col) => col.notNull())
    .addColumn('description', 'varchar(255)')
    // JSON array of event types, or ["*"] for every event.
    .addColumn('events', 'text', (col) => col.notNull())
    // The signing secret (`whsec_…`), sealed with the instance secret.
    .addColumn('secret_enc', 'text', (col) => col.notNull())
    .addColumn('enabled', 'integer', (col) => col.notNull())
    // Why it was switched off (a receiver answering 410), shown to staff.
    .addColumn('disabled_reason', 'varchar(255)')
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .addColumn('updated_at', 'varchar(32)', (col) => col.notNull())
    .execute();

  await withId(db, db.schema.createTable('webhook_deliveries'))
    // No foreign key: the delivery log outlives a deleted endpoint.
    .addColumn('webhook_id', 'integer', (col) => col.notNull())
    // The current outbox item (a manual retry points it at a new one).
    .addColumn('outbox_id', 'integer', (col) => col.notNull().references('outbox_messages.id'))
    // The `webhook-id` header: the same on every attempt and retry, so receivers can drop repeats.
    .addColumn('message_id', 'varchar(64)', (col) => col.notNull().unique())
    .addColumn('event_type', 'varchar(64)', (col) => col.notNull())
    // The exact JSON body sent on every attempt.
    .addColumn('body', 'text', (col) => col.notNull())
    .addColumn('last_status_code', 'integer')
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .addColumn('updated_at', 'varchar(32)', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('webhook_deliveries_webhook').on('webhook_deliveries').columns(['webhook_id', 'id']).execute();
  await db.schema.createIndex('webhook_deliveries_outbox').on('webhook_deliveries').column('outbox_id').execute();

  await withId(db, db.schema.createTable('webhook_attempts'))
    .addColumn('delivery_id', 'integer', (col) => col.notNull().references('webhook_deliveries.id').onDelete('cascade'))
    .addColumn('status_code', 'integer')
    .addColumn('duration_ms', 'integer', (col) => col.notNull())
    .addColumn('error', 'varchar(1000)')
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('webhook_attempts_delivery').on('webhook_attempts').columns(['delivery_id', 'id']).execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('webhook_attempts').execute();
  await db.schema.dropTable('webhook_deliveries').execute();
  await db.schema.dropTable('webhooks').execute();
}
