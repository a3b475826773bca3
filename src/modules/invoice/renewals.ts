// Renewal invoices and the plan-change invoices beside them (CONTRACT §6 scheduled jobs, §8; issue 20, H1, M2, L6).
// One order has at most one unpaid invoice that buys it time: a renewal is not issued while a plan change is unpaid
// (and change_plan refuses while any invoice of the order is unpaid), nor for an order canceled at period end. A
// renewal line records the plan it renews; when the order stops renewing onto that plan (staff edit it, the client
// cancels) the unpaid renewal is canceled, and a payment arriving for it anyway is refused (order-tasks.ts). An
// unpaid plan change lapses at the end of the period its credit was priced for: the scheduler voids it then.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { InvoiceStatus, InvoiceTask } from './tables.ts';
import { inTransaction } from '../../platform/transaction.ts';
import type { EventBus } from '../../platform/events.ts';
import { ApiError, errors } from '../../platform/errors.ts';
import { periodLabel } from '../../lib/periods.ts';
import { isoSeconds } from '../../lib/time.ts';
import type { OrderRow, OrderService } from '../order/service.ts';
import type { PromoService } from '../product/promos.ts';
import { amountIn, type Selling } from '../currency/selling.ts';
import { renewedPlan, staleReason } from './order-tasks.ts';
import type { InvoiceLine, InvoiceRow } from './types.ts';
import './events.ts';

/** Line title of a renewal: "Pro plan — renewal (Every month)". */
export function renewalTitle(order: Pick<OrderRow, 'title' | 'period'>): string {
  return `${order.title} — renewal${order.period === null ? '' : ` (${periodLabel(order.period)})`}`.slice(0, 255);
}

export interface RenewalDeps {
  db: Kysely<Database>;
  events: EventBus;
  orders: Pick<OrderService, 'lock'>;
  promos: Pick<PromoService, 'renewalDiscount'>;
  /** The order's currency: an absolute coupon's value is converted into it. */
  selling: Pick<Selling, 'describe'>;
  create: (trx: Kysely<Database>, clientId: number, lines: InvoiceLine[], options: { now?: Date; dueAt?: string | null; discount?: { amount: number; code: string } | null }) => Promise<InvoiceRow>;
  setStatus: (trx: Kysely<Database>, row: InvoiceRow, from: InvoiceStatus, to: InvoiceStatus, now: Date, verb: string) => Promise<void>;
}

export function createRenewals({ db, events, orders, promos, selling, create, setStatus }: RenewalDeps) {
  /** The order's unpaid invoices with a line of one of `tasks`, oldest first. */
  async function unpaidWith(trx: Kysely<Database>, orderId: number, tasks: InvoiceTask[]): Promise<number[]> {
    const rows = await trx
      .selectFrom('invoice_items')
      .innerJoin('invoices', 'invoices.id', 'invoice_items.invoice_id')
      .select('invoices.id')
      .distinct()
      .where('invoice_items.order_id', '=', orderId)
      .where('invoice_items.task', 'in', tasks)
      .where('invoices.status', '=', 'unpaid')
      .orderBy('invoices.id')
      .execute();
    return rows.map((row) => row.id);
  }

  /** Cancels the order's unpaid invoices of `tasks` that bill nothing else (and, with `onlyStale`, are stale). */
  async function cancelUnpaid(trx: Kysely<Database>, orderId: number, tasks: InvoiceTask[], onlyStale = false): Promise<void> {
    const now = new Date();
    const order = onlyStale ? await trx.selectFrom('orders').selectAll().where('id', '=', orderId).executeTakeFirst() : undefined;
    for (const id of await unpaidWith(trx, orderId, tasks)) {
      const lines = await trx.selectFrom('invoice_items').selectAll().where('invoice_id', '=', id).execute();
      if (lines.some((line) => line.order_id !== orderId)) continue;
      if (onlyStale && (order === undefined || lines.every((line) => staleReason(line, order, now) === null))) continue;
      await trx.updateTable('invoices').set({ status: 'canceled', updated_at: isoSeconds(now) }).where('id', '=', id).where('status', '=', 'unpaid').execute();
    }
  }

  // An order canceled for good, or by its client at period end, no longer owes its renewal, nor wants its upgrade.
  events.on('order.cancel_scheduled', async ({ orderId, canceling }, trx) => {
    if (canceling) await cancelUnpaid(trx, orderId, ['renew', 'change']);
  });
  events.on('order.canceled', ({ orderId }, trx) => cancelUnpaid(trx, orderId, ['renew', 'change']));
  // Staff changed the order's price or period, or its plan changed: a renewal issued for the old plan is void.
  events.on('order.updated', ({ orderId }, trx) => cancelUnpaid(trx, orderId, ['renew'], true));
  events.on('order.plan_changed', ({ orderId }, trx) => cancelUnpaid(trx, orderId, ['renew'], true));
  // A refund takes back money an unpaid plan change of the same order may have credited: that change is void (the
  // client asks again and is credited what is left).
  events.on('invoice.refunded', async ({ invoiceId }, trx) => {
    const lines = await trx.selectFrom('invoice_items').select('order_id').distinct().where('invoice_id', '=', invoiceId).where('order_id', 'is not', null).execute();
    for (const { order_id } of lines) await cancelUnpaid(trx, order_id!, ['change']);
  });

  /**
   * Finds the unpaid renewal invoice of an order, or issues one, inside `trx`; returns its id and whether it is
   * new. 409 while a plan change of the order is unpaid, and for an order canceled at the end of its period.
   */
  async function renewalFor(trx: Kysely<Database>, order: OrderRow, now: Date): Promise<{ id: number; created: boolean }> {
    // Lock the order first, so two concurrent callers (or a change_plan) cannot both issue one.
    await orders.lock(trx, order.id);
    const current = await trx.selectFrom('orders').selectAll().where('id', '=', order.id).executeTakeFirstOrThrow();
    const [change] = await unpaidWith(trx, current.id, ['change']);
    if (change !== undefined) throw errors.conflict(`Invoice #${change} changes this order's plan and is unpaid; pay it, or wait for it to lapse, before renewing`);
    if (current.cancel_at_period_end === 1) throw errors.conflict('The order is canceled at the end of its period; uncancel it before renewing');
    const [existing] = await unpaidWith(trx, current.id, ['renew']);
    if (existing !== undefined) return { id: existing, created: false };
    // A downgrade waiting for this renewal is what the renewal buys; the line records that plan.
    const plan = renewedPlan(current);
    const title = plan.productId === current.product_id ? current.title : ((await trx.selectFrom('products').select('title').where('id', '=', plan.productId).executeTakeFirst())?.title ?? current.title);
    // A recurring coupon taken at checkout also discounts each renewal.
    const total = plan.price * current.quantity;
    const sale = await selling.describe(trx, current.currency);
    const discount = current.promo_id === null ? null : await promos.renewalDiscount(trx, current.promo_id, { productId: plan.productId, period: plan.period, total }, (value) => amountIn(value, sale));
    const line: InvoiceLine = { orderId: current.id, task: 'renew', title: renewalTitle({ title, period: plan.period }), period: plan.period, quantity: current.quantity, price: plan.price, total, productId: plan.productId };
    const invoice = await create(trx, current.client_id, [line], { now, dueAt: current.expires_at ?? isoSeconds(now), discount });
    return { id: invoice.id, created: true };
  }

  /** Voids each unpaid plan-change invoice whose priced period has ended (scheduler); returns how many. */
  async function voidLapsedPlanChanges(now: Date): Promise<number> {
    const rows = await db
      .selectFrom('invoice_items')
      .innerJoin('invoices', 'invoices.id', 'invoice_items.invoice_id')
      .select('invoices.id')
      .distinct()
      .where('invoice_items.task', '=', 'change')
      .where('invoice_items.priced_until', '<=', isoSeconds(now))
      .where('invoices.status', '=', 'unpaid')
      .orderBy('invoices.id')
      .execute();
    let voided = 0;
    for (const { id } of rows) {
      const done = await inTransaction(db, async (trx) => {
        const row = await trx.selectFrom('invoices').selectAll().where('id', '=', id).executeTakeFirst();
        if (row?.status !== 'unpaid') return false;
        await setStatus(trx, row, 'unpaid', 'canceled', now, 'voided');
        await events.emit('invoice.canceled', { invoiceId: row.id, clientId: row.client_id, total: row.total }, trx);
        return true;
      }).catch((error: unknown) => {
        // Paid meanwhile (the compare-and-set answered 409): nothing to void. Anything else is the job's failure.
        if (error instanceof ApiError && error.status === 409) return false;
        throw error;
      });
      if (done) voided += 1;
    }
    return voided;
  }

  return { renewalFor, voidLapsedPlanChanges };
}

export type Renewals = ReturnType<typeof createRenewals>;
