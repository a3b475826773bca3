// What paying an invoice does to its orders (CONTRACT §6, §8), and whether it still may (issue 20, H1, M2, L6).
// Each line that buys service says what it buys: a 'renew' line the plan, period and unit price it renews; a
// 'change' line the plan it moves to and the period its credit was priced for. A payment is applied only while that
// is still true of the order; otherwise it is refused (staff: 409; a provider's payment: recorded, never applied, the
// invoice voided — gateway-payments.ts). Refusing rather than re-pricing: the amount was agreed and, for a card, is
// already taken; charging a different one is a new invoice's job.
import type { Kysely, Selectable } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { timeOf } from '../../lib/time.ts';
import type { OrderRow, OrderService } from '../order/service.ts';

type ItemRow = Selectable<Database['invoice_items']>;

/** The plan a renewal of `order` buys now: a downgrade waiting for it, else the order's own plan. */
export function renewedPlan(order: OrderRow): { productId: number; period: string | null; price: number } {
  if (order.next_product_id !== null && order.next_period !== null && order.next_price !== null) {
    return { productId: order.next_product_id, period: order.next_period, price: order.next_price };
  }
  return { productId: order.product_id, period: order.period, price: order.price };
}

/** Why `line` may no longer be applied to `order` at `now`, or null when it may. */
export function staleReason(line: ItemRow, order: OrderRow, now: Date): string | null {
  if (line.task === 'renew') {
    if (order.status !== 'active' && order.status !== 'suspended') return `order #${order.id} is ${order.status}; it is not renewed`;
    if (order.cancel_at_period_end === 1) return `order #${order.id} is canceled at the end of its period; it is not renewed`;
    const plan = renewedPlan(order);
    if (line.product_id !== plan.productId || line.period !== plan.period || line.price !== plan.price || line.quantity !== order.quantity) {
      return `the plan of order #${order.id} changed after this renewal was issued`;
    }
    return null;
  }
  if (line.task === 'change') {
    if (order.status !== 'active') return `order #${order.id} is ${order.status}; its plan is not changed`;
    if (order.cancel_at_period_end === 1) return `order #${order.id} is canceled at the end of its period; its plan is not changed`;
    if (line.priced_until === null || timeOf(line.priced_until) <= now.getTime()) return 'this plan change lapsed at the end of the period it was priced for';
    if (order.expires_at !== line.priced_until) return `the period of order #${order.id} changed after this plan change was priced`;
  }
  return null;
}

export function createOrderTasks({ orders }: { orders: Pick<OrderService, 'transition' | 'applyPlanChange'> }) {
  async function pendingLines(trx: Kysely<Database>, invoiceId: number): Promise<ItemRow[]> {
    return trx.selectFrom('invoice_items').selectAll().where('invoice_id', '=', invoiceId).where('executed', '=', 0).orderBy('id').execute();
  }

  async function orderOf(trx: Kysely<Database>, line: ItemRow): Promise<OrderRow | undefined> {
    return line.order_id === null ? undefined : trx.selectFrom('orders').selectAll().where('id', '=', line.order_id).executeTakeFirst();
  }

  /** Why paying the invoice must not apply now (the first stale line's reason), or null. */
  async function unpayableReason(trx: Kysely<Database>, invoiceId: number, now: Date): Promise<string | null> {
    for (const line of await pendingLines(trx, invoiceId)) {
      // Only a line that buys a running order time can go stale; a first activation or usage line cannot.
      if (line.task !== 'renew' && line.task !== 'change') continue;
      const order = await orderOf(trx, line);
      const reason = order === undefined ? null : staleReason(line, order, now);
      if (reason !== null) return reason;
    }
    return null;
  }

  /**
   * Runs the invoice's activate, renew and change tasks that have not run yet. A renew or change line that ran
   * records the expiry it bought (`covers_until`), which is what a later plan change credits (period-paid.ts).
   */
  async function execute(trx: Kysely<Database>, invoiceId: number, now: Date): Promise<void> {
    for (const item of await pendingLines(trx, invoiceId)) {
      const order = await orderOf(trx, item);
      let ran = false;
      if (order !== undefined) {
        if (item.task === 'activate' && (order.status === 'pending_setup' || order.status === 'failed_setup')) {
          const product = await trx.selectFrom('products').select('setup').where('id', '=', order.product_id).executeTakeFirst();
          if (product?.setup !== 'manual') await orders.transition(trx, order.id, 'activate', { now });
        } else if (item.task === 'change' && item.product_id !== null && item.period !== null) {
          ran = await orders.applyPlanChange(trx, order.id, { productId: item.product_id, period: item.period, price: item.price }, now);
        } else if (item.task === 'renew' && (order.status === 'active' || order.status === 'suspended')) {
          await orders.transition(trx, order.id, 'renew', { now });
          if (order.status === 'suspended') await orders.transition(trx, order.id, 'unsuspend', { now });
          ran = true;
        }
      }
      const coversUntil = ran && order !== undefined ? ((await orderOf(trx, item))?.expires_at ?? null) : null;
      await trx.updateTable('invoice_items').set({ executed: 1, covers_until: coversUntil }).where('id', '=', item.id).execute();
    }
  }

  return { unpayableReason, execute };
}

export type OrderTasks = ReturnType<typeof createOrderTasks>;
