// Free trials (issue 24 item 7). An order on trial carries `trial_ends_at` and a `trial_state` the scheduler moves
// along (running → charging with a saved card → ended), and `trial_reminded` so the reminder goes once.
// `trial_claims` is what makes a trial once per client and product, and once per card fingerprint and product: two
// unique indexes, so two checkouts at once (two processes, two databases' worth of isolation) leave one trial.
// `payment_methods.fingerprint` is the card's fingerprint as the provider reports it (Stripe's card.fingerprint).
import { withId, type AnyDb } from './helpers.ts';

export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('orders').addColumn('trial_ends_at', 'varchar(32)').execute();
  await db.schema.alterTable('orders').addColumn('trial_state', 'varchar(16)').execute();
  await db.schema.alterTable('orders').addColumn('trial_reminded', 'integer', (col) => col.notNull().defaultTo(0)).execute();
  // The scheduler looks for trials still running or charging, by their end.
  await db.schema.createIndex('orders_trial').on('orders').columns(['trial_state', 'trial_ends_at']).execute();

  await withId(db, db.schema.createTable('trial_claims'))
    .addColumn('order_id', 'integer', (col) => col.notNull())
    .addColumn('client_id', 'integer', (col) => col.notNull())
    .addColumn('product_id', 'integer', (col) => col.notNull())
    .addColumn('card_fingerprint', 'varchar(64)')
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('trial_claims_client').on('trial_claims').columns(['client_id', 'product_id']).unique().execute();
  // NULL fingerprints (trials without a card) are distinct on both dialects, so they never collide.
  await db.schema.createIndex('trial_claims_card').on('trial_claims').columns(['product_id', 'card_fingerprint']).unique().execute();

  await db.schema.alterTable('payment_methods').addColumn('fingerprint', 'varchar(64)').execute();
}
