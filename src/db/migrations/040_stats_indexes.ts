// The dashboard's sums (issue 25, src/modules/stats): indexes that answer them from the index alone, so a range's
// revenue, refunds and recurring revenue read the rows of that range, never the whole table. Each index leads with
// the column the range or filter is on and carries the columns the sum groups and adds.
import type { AnyDb } from './helpers.ts';

export async function up(db: AnyDb): Promise<void> {
  // Paid invoices by paid_at: revenue per range and month, top customers.
  await db.schema.createIndex('invoices_paid_stats').on('invoices').columns(['paid_at', 'status', 'currency', 'total', 'client_id']).execute();
  // Payments and refunds by type and time: money back, balance payments, failed payments.
  await db.schema.createIndex('transactions_stats').on('transactions').columns(['type', 'created_at', 'status', 'gateway', 'currency', 'amount', 'invoice_id']).execute();
  // Recurring revenue: the active orders grouped by what decides their monthly amount, in the index's order (so the
  // grouping reads the index without sorting); and the orders running at a past moment, by their dates.
  await db.schema
    .createIndex('orders_recurring_stats')
    .on('orders')
    .columns(['status', 'period', 'currency', 'trial_state', 'cancel_at_period_end', 'promo_id', 'product_id', 'price', 'quantity', 'next_price'])
    .execute();
  await db.schema
    .createIndex('orders_recurring_at')
    .on('orders')
    .columns(['period', 'currency', 'promo_id', 'product_id', 'price', 'quantity', 'status', 'activated_at', 'canceled_at', 'trial_ends_at', 'suspended_at'])
    .execute();
  // Churn: orders canceled in a range; MRR at a moment: orders by activation.
  await db.schema.createIndex('orders_canceled_at').on('orders').columns(['canceled_at', 'client_id']).execute();
  await db.schema.createIndex('orders_client_activated').on('orders').columns(['client_id', 'activated_at', 'canceled_at']).execute();
  // Usage and top-up lines of the invoices paid in a range.
  await db.schema.createIndex('invoice_items_task_stats').on('invoice_items').columns(['invoice_id', 'task', 'total']).execute();
  await db.schema.createIndex('credit_notes_created').on('credit_notes').columns(['created_at', 'method', 'currency', 'total']).execute();
}

export async function down(db: AnyDb): Promise<void> {
  for (const name of ['credit_notes_created', 'invoice_items_task_stats', 'orders_client_activated', 'orders_canceled_at', 'orders_recurring_at', 'orders_recurring_stats', 'transactions_stats', 'invoices_paid_stats']) {
    await db.schema.dropIndex(name).execute();
  }
}
