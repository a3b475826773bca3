// What a client actually paid for an order's current period (issue 20, M1 and M8): the base of a plan change's
// credit. Never the list price: a period bought with a 100% coupon, granted by staff, or whose invoice was refunded
// was not paid (or not all of it), and its unused part is worth only what was paid for it.
import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { addPeriod } from '../../lib/periods.ts';
import { paidForPeriod } from '../../lib/proration.ts';
import { isoSeconds, timeOf } from '../../lib/time.ts';
import type { OrderRow } from '../order/service.ts';

function paidLines(trx: Kysely<Database>, orderId: number) {
  return trx
    .selectFrom('invoice_items as ii')
    .innerJoin('invoices as i', 'i.id', 'ii.invoice_id')
    .select(['ii.invoice_id', 'ii.task', 'ii.quantity', 'ii.price', 'ii.total', 'ii.credit', 'i.subtotal', 'i.discount', 'i.total as invoice_total'])
    .where('ii.order_id', '=', orderId)
    .where('i.status', 'in', ['paid', 'refunded'])
    .orderBy('ii.id', 'desc');
}

/**
 * Minor units, before tax, paid for the period ending at the order's `expires_at`: found through the renewal or
 * plan change that bought that expiry (`covers_until`), or, while the order still runs on its first period, through
 * its activation. No such line (staff renewed it, moved its expiry, or the checkout cost nothing) → 0.
 */
export async function paidForCurrentPeriod(trx: Kysely<Database>, order: OrderRow): Promise<number> {
  if (order.expires_at === null || order.period === null) return 0;
  let line = await paidLines(trx, order.id).where('ii.task', 'in', ['renew', 'change']).where('ii.covers_until', '=', order.expires_at).executeTakeFirst();
  const firstPeriod = order.activated_at !== null && isoSeconds(addPeriod(new Date(timeOf(order.activated_at)), order.period)) === order.expires_at;
  if (line === undefined && firstPeriod) line = await paidLines(trx, order.id).where('ii.task', '=', 'activate').executeTakeFirst();
  if (line === undefined) return 0;
  const refunds = await trx
    .selectFrom('transactions')
    .select(sql<string | number | null>`sum(amount)`.as('total'))
    .where('invoice_id', '=', line.invoice_id)
    .where('type', '=', 'refund')
    .where('status', '=', 'refunded')
    // A late payment's refund (late-refunds.ts) gives back money that never paid for this period.
    .where('refund_of', 'is', null)
    .executeTakeFirst();
  return paidForPeriod({
    lineTotal: line.total,
    // An activation's line may carry a setup fee on top of the period; a renewal or change is all period.
    periodTotal: line.task === 'activate' ? line.price * line.quantity : line.total,
    subtotal: line.subtotal,
    discount: line.discount,
    invoiceTotal: line.invoice_total,
    // PostgreSQL sums bigints as numeric, which arrives as text.
    refunded: Number(refunds?.total ?? 0),
    carried: line.credit,
  });
}
