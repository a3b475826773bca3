// Late payments refunded automatically (issue 20, M2): a refund names the payment it gives back when that payment was
// never applied (a card payment of a voided, canceled, stale or already paid invoice). Such refunds are the late
// payment's, not the invoice's: the invoice's own refunds (what a plan change credits, what staff may still refund)
// are the ones with `refund_of` null, as every refund written before this migration is.
import type { AnyDb } from './helpers.ts';

export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('transactions').addColumn('refund_of', 'integer').execute();
  await db.schema.createIndex('transactions_refund_of').on('transactions').column('refund_of').execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropIndex('transactions_refund_of').execute();
  await db.schema.alterTable('transactions').dropColumn('refund_of').execute();
}
