// The orders behind the recurring figures: MRR, renewals due, cancellations scheduled, and the projected overage. The
// filters are the ones recurring-orders.ts (and projected-overage.ts) group by, so a list's rows add up to its figure.
import { sql, type SelectQueryBuilder } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { discountOf } from '../product/promos.ts';
import { monthlyOf, roundedHalfUp } from '../../lib/recurring.ts';
import { amountOf, type FigureList, type ListContext, type Row } from './list-types.ts';
import { overageByOrder } from './projected-overage.ts';
import type { BilledMeter } from '../serviceapikey/usage/close-lines.ts';
import { unitWords } from '../../lib/usage-terms.ts';
import type { DbNumber } from './list-types.ts';

const DAY_MS = 86_400_000;
/** Renewals are looked for this far ahead. */
export const RENEWAL_WINDOW_DAYS = 30;

type OrderQuery = SelectQueryBuilder<Database, 'orders', object>;

const running = (query: OrderQuery): OrderQuery =>
  query
    .where('orders.period', 'is not', null)
    .where('orders.status', '=', 'active')
    .where((eb) => eb.or([eb('orders.trial_state', 'is', null), eb('orders.trial_state', '=', 'ended')]));

/** The end of the renewal window that starts at `now`. */
export function renewalWindowEnd(now: string): string {
  return new Date(Date.parse(now) + RENEWAL_WINDOW_DAYS * DAY_MS).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function orderList(filter: (query: OrderQuery, context: ListContext) => OrderQuery, renewing: boolean): FigureList {
  return {
    columns: ['order_id', 'client_id', 'title', 'period', 'currency', 'quantity', 'price', 'discount', 'amount', 'mrr', 'expires_at', 'default_currency', 'amount_in_default', 'mrr_in_default'],
    async read(context, offset, limit) {
      const { db } = context;
      const base = filter(running(db.selectFrom('orders')), context);
      const [rows, total] = await Promise.all([
        base
          .select([
            'orders.id',
            'orders.client_id',
            'orders.title',
            'orders.period',
            'orders.currency',
            'orders.quantity',
            'orders.promo_id',
            'orders.product_id',
            'orders.expires_at',
            (renewing ? sql<DbNumber>`coalesce(orders.next_price, orders.price)` : sql<DbNumber>`orders.price`).as('price'),
          ])
          .orderBy('orders.id')
          .offset(offset)
          .limit(limit)
          .execute(),
        base.select((eb) => eb.fn.countAll<DbNumber>().as('n')).executeTakeFirstOrThrow(),
      ]);
      const promoIds = [...new Set(rows.map((row) => row.promo_id).filter((id): id is number => id !== null))];
      const coupons =
        promoIds.length === 0
          ? new Map<number, never>()
          : new Map((await db.selectFrom('promos').select(['id', 'type', 'value', 'products', 'periods']).where('id', 'in', promoIds).where('recurring', '=', 1).execute()).map((p) => [p.id, p]));
      const list: Row[] = rows.map((row) => {
        const line = Number(row.price) * row.quantity;
        const coupon = row.promo_id === null ? undefined : coupons.get(row.promo_id);
        const discount = coupon === undefined ? 0 : discountOf(coupon, [{ productId: row.product_id, period: row.period, total: line }]);
        const amount = line - discount;
        const mrr = row.period === null ? 0 : roundedHalfUp(monthlyOf(amount, row.period));
        // Not invoiced yet: in the default currency at today's rate (convert.ts).
        const { into } = context;
        return {
          order_id: row.id,
          client_id: row.client_id,
          title: row.title,
          period: row.period,
          currency: row.currency,
          quantity: row.quantity,
          price: amountOf(row.price, row.currency),
          discount: amountOf(discount, row.currency),
          amount: amountOf(amount, row.currency),
          mrr: amountOf(mrr, row.currency),
          expires_at: row.expires_at,
          default_currency: into.code,
          amount_in_default: amountOf(into.atTodaysRate(amount, row.currency), into.code),
          mrr_in_default: amountOf(into.atTodaysRate(mrr, row.currency), into.code),
        };
      });
      return { rows: list, total: Number(total.n) };
    },
  };
}

export const orderLists: Record<'mrr' | 'renewals_due' | 'cancellations_scheduled', FigureList> = {
  mrr: orderList((query) => query, false),
  renewals_due: orderList(
    (query, { now }) => query.where('orders.cancel_at_period_end', '=', 0).where('orders.expires_at', '>=', now).where('orders.expires_at', '<', renewalWindowEnd(now)),
    true,
  ),
  cancellations_scheduled: orderList((query) => query.where('orders.cancel_at_period_end', '=', 1), false),
};

const quantity = (n: number): string => n.toLocaleString('en-US', { maximumFractionDigits: 6 });

/**
 * What an order's projected amount is made of beyond its calls (which have columns of their own): each of the plan's
 * meters that would bill something, "Tokens: 2,500,000 tokens used, 1,000,000 included, 1,500,000 over = 3.00",
 * separated by "; ", amounts in the order's currency; empty when only the calls bill.
 */
export function metersText(meters: readonly BilledMeter[], currency: string): string {
  return meters
    .filter((meter) => meter.amount > 0)
    .map((meter) => {
      const words = unitWords(meter.unit);
      return `${meter.name}: ${quantity(meter.used)} ${meter.used === 1 ? words.one : words.many} used, ${quantity(meter.included ?? 0)} included, ${quantity(meter.overage_units)} over = ${amountOf(meter.amount, currency)}`;
    })
    .join('; ');
}

/** The orders behind the projected overage: the calls' figures, the amount the close would bill, and the meters in it. */
export const overageList: FigureList = {
  columns: ['order_id', 'client_id', 'currency', 'used', 'included', 'overage_units', 'amount', 'meters', 'default_currency', 'amount_in_default'],
  async read({ db, selling, into, now }, offset, limit) {
    const all = await overageByOrder(db, selling, now);
    return {
      rows: all.slice(offset, offset + limit).map((row) => ({
        order_id: row.order_id,
        client_id: row.client_id,
        currency: row.currency,
        used: row.used,
        included: row.included,
        overage_units: row.overage_units,
        amount: amountOf(row.amount, row.currency),
        meters: metersText(row.meters, row.currency),
        // The plan's own price of the same units: overage is priced in the default currency (convert.ts).
        default_currency: into.code,
        amount_in_default: amountOf(row.default_amount, into.code),
      })),
      total: all.length,
    };
  },
};
