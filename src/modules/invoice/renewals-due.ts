// The orders that need a renewal invoice, for the scheduled jobs (src/modules/cron/service.ts). Read here, not in
// the scheduler, because whether an order already has an unpaid renewal is the invoice module's to say; the order
// columns it filters on are a first pick by text, re-checked by the job (and by renewalFor) before an invoice is made.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';

export function createRenewalsDue({ db }: { db: Kysely<Database> }) {
  return {
    /**
     * Paid recurrent active orders expiring by `horizon` (ISO text) that have no unpaid renewal or plan-change
     * invoice, by id.
     */
    async ordersAwaitingRenewalInvoice(horizon: string): Promise<number[]> {
      const rows = await db
        .selectFrom('orders')
        .select('id')
        .where('status', '=', 'active')
        .where('period', 'is not', null)
        .where('price', '>', 0)
        .where('cancel_at_period_end', '=', 0)
        .where('expires_at', 'is not', null)
        .where('expires_at', '<=', horizon)
        .where((eb) =>
          eb.not(
            eb.exists(
              eb
                .selectFrom('invoice_items')
                .innerJoin('invoices', 'invoices.id', 'invoice_items.invoice_id')
                .select('invoice_items.id')
                .whereRef('invoice_items.order_id', '=', 'orders.id')
                // One unpaid invoice buys an order time: none while a renewal or a plan change is unpaid.
                .where('invoice_items.task', 'in', ['renew', 'change'])
                .where('invoices.status', '=', 'unpaid'),
            ),
          ),
        )
        .orderBy('id')
        .execute();
      return rows.map((row) => row.id);
    },
  };
}

export type RenewalsDue = ReturnType<typeof createRenewalsDue>;
