// Self-service on an order (CONTRACT §8): the client cancels at period end (and takes it back), lists the plans it
// can move to, and changes plan: an upgrade is invoiced at once with the unused part of the current period credited
// and applies when that invoice is paid (at once when nothing is owed); a downgrade waits for the next renewal.
// Each call locks the order first, so two changes of one order never interleave.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { inTransaction } from '../../platform/transaction.ts';
import type { EventBus } from '../../platform/events.ts';
import { errors } from '../../platform/errors.ts';
import { invoiceLabel } from '../../lib/invoice-label.ts';
import { moneyFor } from '../../lib/money.ts';
import type { Selling } from '../currency/selling.ts';
import { quoteIn } from '../product/currency-prices.ts';
import { periodLabel } from '../../lib/periods.ts';
import { isUpgrade, unusedCredit, upgradeCharge } from '../../lib/proration.ts';
import { isoSeconds } from '../../lib/time.ts';
import type { InvoiceService } from '../invoice/service.ts';
import type { ProductService, PublicProduct } from '../product/service.ts';
import type { OrderRow, OrderService } from './service.ts';

export interface PlanChangeResult {
  /** `upgrade`: invoiced now, applies when paid (`effective: "now"` when nothing is owed); `downgrade`: at renewal. */
  change: 'upgrade' | 'downgrade';
  effective: 'now' | 'on_payment' | 'at_renewal';
  invoice_id: number | null;
  /** The unused part of the current period credited against the upgrade, and what is charged. */
  credit: string;
  amount: string;
}

export interface SelfServiceDeps {
  db: Kysely<Database>;
  events: EventBus;
  orders: Pick<OrderService, 'requireRow' | 'lock' | 'setSelfService' | 'applyPlanChange' | 'transition'>;
  products: Pick<ProductService, 'pricingOf' | 'publicOfType'>;
  invoices: Pick<InvoiceService, 'create' | 'paidForCurrentPeriod'>;
  /** The order's currency: the new plan is priced in it (its own price there, else converted). */
  selling: Pick<Selling, 'describe' | 'forClient'>;
}

export function createSelfService({ db, events, orders, products, invoices, selling }: SelfServiceDeps) {
  /** The caller's order, locked for the rest of `trx` (404 for another client's order). */
  async function lockedOwn(trx: Kysely<Database>, id: number, clientId: number): Promise<OrderRow> {
    await orders.requireRow(trx, id, clientId);
    await orders.lock(trx, id);
    return orders.requireRow(trx, id, clientId);
  }

  function requireRunning(row: OrderRow, now: Date, verb: string): asserts row is OrderRow & { period: string; expires_at: string } {
    if (row.status !== 'active') throw errors.conflict(`The order is ${row.status}; only an active order can be ${verb}`);
    if (row.period === null || row.expires_at === null) throw errors.conflict(`The order does not renew; it cannot be ${verb}`);
    if (row.expires_at <= isoSeconds(now)) throw errors.conflict(`The order has expired; renew it before it can be ${verb}`);
  }

  async function hasUnpaidInvoice(trx: Kysely<Database>, orderId: number): Promise<number | null> {
    const row = await trx
      .selectFrom('invoice_items')
      .innerJoin('invoices', 'invoices.id', 'invoice_items.invoice_id')
      .select('invoices.id')
      .where('invoice_items.order_id', '=', orderId)
      .where('invoices.status', '=', 'unpaid')
      .executeTakeFirst();
    return row?.id ?? null;
  }

  const eventOf = (row: OrderRow) => ({ orderId: row.id, clientId: row.client_id, productId: row.product_id, status: row.status });

  return {
    /** Cancels at period end: the order stays active until expires_at; the scheduler cancels it then. */
    async cancel(id: number, clientId: number, now = new Date()): Promise<void> {
      await inTransaction(db, async (trx) => {
        const row = await lockedOwn(trx, id, clientId);
        // A free trial still waiting for its card has nothing to run to: it is canceled now, never started.
        if (row.status === 'pending_setup' && row.trial_state === 'awaiting_card') {
          await trx.updateTable('orders').set({ trial_state: null }).where('id', '=', row.id).where('trial_state', '=', 'awaiting_card').execute();
          await orders.transition(trx, row.id, 'cancel', { reason: 'Canceled by the client before the free trial started', now });
          return;
        }
        requireRunning(row, now, 'canceled at period end');
        if (row.cancel_at_period_end === 1) throw errors.conflict('The order is already canceled at the end of its period');
        await orders.setSelfService(trx, row, { cancel_at_period_end: 1, next_product_id: null, next_period: null, next_price: null }, 'canceled by the client at period end', now);
        await events.emit('order.cancel_scheduled', { ...eventOf(row), canceling: true }, trx);
      });
    },

    /** Takes a cancellation at period end back, before the period ends. */
    async uncancel(id: number, clientId: number, now = new Date()): Promise<void> {
      await inTransaction(db, async (trx) => {
        const row = await lockedOwn(trx, id, clientId);
        if (row.cancel_at_period_end !== 1) throw errors.conflict('The order is not canceled at period end');
        requireRunning(row, now, 'uncanceled');
        await orders.setSelfService(trx, row, { cancel_at_period_end: 0 }, 'cancellation taken back by the client', now);
        await events.emit('order.cancel_scheduled', { ...eventOf(row), canceling: false }, trx);
      });
    },

    /** Enabled, listed products of the order's type, other than its own, that offer a recurring price. */
    async upgradables(id: number, clientId: number): Promise<PublicProduct[]> {
      const row = await orders.requireRow(db, id, clientId);
      const candidates = await products.publicOfType(row.type, row.product_id, await selling.describe(db, row.currency));
      return row.period === null ? candidates : candidates.filter((product) => Object.keys(product.pricing.recurrent).length > 0 && product.pricing.type === 'recurrent');
    },

    async changePlan(id: number, clientId: number, target: { product_id: number; period: string }, now = new Date()): Promise<PlanChangeResult> {
      return inTransaction(db, async (trx) => {
        const row = await lockedOwn(trx, id, clientId);
        requireRunning(row, now, 'moved to another plan');
        if (row.cancel_at_period_end === 1) throw errors.conflict('The order is canceled at period end; uncancel it first');
        // A trial is of one plan, and proration needs a paid period to credit: the plan changes after the trial.
        if (row.trial_state === 'running' || row.trial_state === 'charging') {
          throw errors.conflict(`The plan cannot be changed during the free trial; it ends on ${row.trial_ends_at?.slice(0, 10) ?? 'its end date'}, after which you can change it`);
        }
        const unpaid = await hasUnpaidInvoice(trx, row.id);
        if (unpaid !== null) throw errors.conflict(`${invoiceLabel({ id: unpaid, number: null })} of this order is unpaid; pay or wait for it before changing plan`);
        const product = await trx.selectFrom('products').selectAll().where('id', '=', target.product_id).executeTakeFirst();
        if (product === undefined || product.status !== 'enabled') throw errors.notFound('Product');
        if (product.type !== row.type) throw errors.invalid('product_id', `is not a plan of the order's type (${row.type})`);
        // The order's currency is the client's, fixed at their first order: the new plan costs what it costs in it.
        const money = moneyFor(row.currency);
        const offer = quoteIn(products.pricingOf(product), target.period, await selling.describe(trx, row.currency));
        if (offer.period === null) throw errors.invalid('product_id', 'is not a recurring plan');
        if (product.id === row.product_id && offer.period === row.period) {
          if (row.next_product_id === null) throw errors.invalid('product_id', "is already the order's plan and period");
          // Choosing the current plan again takes a waiting downgrade back.
          await orders.setSelfService(trx, row, { next_product_id: null, next_period: null, next_price: null }, 'plan change taken back', now);
          return { change: 'downgrade', effective: 'now', invoice_id: null, credit: money.format(0), amount: money.format(0) };
        }

        if (!isUpgrade(row.price, row.period, offer.price, offer.period, now)) {
          await orders.setSelfService(
            trx,
            row,
            { next_product_id: product.id, next_period: offer.period, next_price: offer.price },
            `plan change to ${product.title} (${offer.period}) at renewal`,
            now,
          );
          return { change: 'downgrade', effective: 'at_renewal', invoice_id: null, credit: money.format(0), amount: money.format(0) };
        }

        // The credit is what was actually paid for the current period (after coupons, net of refunds; nothing for a
        // period granted free), prorated to the part left — never the list price (issue 20, M1 and M8).
        const paid = await invoices.paidForCurrentPeriod(trx, row);
        const credit = unusedCredit(paid, row.period, new Date(row.expires_at), now);
        const newTotal = offer.price * row.quantity;
        if (!Number.isSafeInteger(newTotal)) throw errors.invalid('product_id', 'makes the total too large');
        const charge = upgradeCharge(newTotal, credit);
        if (charge === 0) {
          await orders.applyPlanChange(trx, row.id, { productId: product.id, period: offer.period, price: offer.price }, now);
          return { change: 'upgrade', effective: 'now', invoice_id: null, credit: money.format(credit), amount: money.format(0) };
        }
        const invoice = await invoices.create(
          trx,
          row.client_id,
          [
            {
              orderId: row.id,
              task: 'change',
              title: `${product.title} (${periodLabel(offer.period)}) — upgrade from ${row.title}, ${money.format(credit)} credited for the unused period`,
              period: offer.period,
              quantity: row.quantity,
              price: offer.price,
              total: charge,
              productId: product.id,
              // The credit holds for the period it was computed from: the scheduler voids the invoice at its end.
              credit,
              pricedUntil: row.expires_at,
            },
          ],
          { now },
        );
        return { change: 'upgrade', effective: 'on_payment', invoice_id: invoice.id, credit: money.format(credit), amount: money.format(charge) };
      });
    },
  };
}

export type SelfService = ReturnType<typeof createSelfService>;
