// Recurring revenue from the orders table (read only): MRR and ARR, the renewals due soon and the cancellations
// scheduled. Orders are grouped in SQL by what decides their monthly amount (currency, period, coupon, product, line
// total), so the rows that come back are a few per plan, never one per order; each group's recurring coupon is taken
// off exactly as a renewal invoice takes it (product/promos.ts discountOf, per order), then restated per month
// (lib/recurring.ts) and summed exactly, rounded once per currency.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { discountOf } from '../product/promos.ts';
import { addFractions, monthlyOf, roundedHalfUp, timesFraction, ZERO, type Fraction } from '../../lib/recurring.ts';
import type { DbNumber } from './list-types.ts';

interface OrderGroup {
  currency: string;
  period: string | null;
  promo_id: number | null;
  product_id: number;
  /** What one order of the group charges per period before its coupon (quantity × unit price). */
  line: number;
  n: number;
  /** Set on the groups of active orders: 1 when their client canceled at period end. */
  cancel_at_period_end?: number;
}

export interface RecurringAmount {
  currency: string;
  /** Orders counted. */
  orders: number;
  /** What they charge per period, summed (discounts taken off), minor units. */
  amount: number;
  /** Per month, rounded half up once. */
  mrr: number;
  /** 12 × the exact monthly sum, rounded half up once. */
  arr: number;
}

type OrderFilter = 'active' | 'scheduled_cancel' | { at: string } | { renewsFrom: string; renewsTo: string };

/** The columns that decide an order's monthly amount, in the order of the indexes (migration 040), so SQL groups
 * them as it reads the index, without sorting. */
const STATUS_GROUP = ['period', 'currency', 'trial_state', 'cancel_at_period_end', 'promo_id', 'product_id', 'price', 'quantity'] as const;
const DATED_GROUP = ['period', 'currency', 'promo_id', 'product_id', 'price', 'quantity'] as const;

/**
 * The orders' groups: `active` — every active recurring order out of its trial (suspended, canceled and pending
 * orders pay nothing); `scheduled_cancel` — active orders whose client canceled at period end; `{at}` — the orders that
 * were running at that moment by their activation and cancellation dates (at today's prices: the table keeps no
 * price history); `{renewsFrom, renewsTo}` — active orders renewing in that window (a downgrade waiting for the
 * renewal renews at its next price).
 */
async function groups(db: Kysely<Database>, filter: OrderFilter): Promise<OrderGroup[]> {
  if (typeof filter === 'object' && 'at' in filter) {
    const { at } = filter;
    const rows = await db
      .selectFrom('orders')
      .select((eb) => [...DATED_GROUP, eb.fn.countAll<DbNumber>().as('n')])
      .where('period', 'is not', null)
      .where('status', 'in', ['active', 'suspended', 'canceled'])
      .where('activated_at', '<=', at)
      .where((eb) => eb.or([eb('canceled_at', 'is', null), eb('canceled_at', '>', at)]))
      .where((eb) => eb.or([eb('trial_ends_at', 'is', null), eb('trial_ends_at', '<=', at)]))
      .where((eb) => eb.or([eb('status', '<>', 'suspended'), eb('suspended_at', 'is', null), eb('suspended_at', '>', at)]))
      .groupBy([...DATED_GROUP])
      .execute();
    return rows.map((row) => ({ ...row, line: row.price * row.quantity, n: Number(row.n) }));
  }
  let query = db
    .selectFrom('orders')
    .select((eb) => [...STATUS_GROUP, 'next_price', eb.fn.countAll<DbNumber>().as('n')])
    .where('status', '=', 'active')
    .where('period', 'is not', null)
    .where((eb) => eb.or([eb('trial_state', 'is', null), eb('trial_state', '=', 'ended')]));
  const renewing = typeof filter === 'object';
  if (filter === 'scheduled_cancel') query = query.where('cancel_at_period_end', '=', 1);
  if (typeof filter === 'object') {
    query = query.where('cancel_at_period_end', '=', 0).where('expires_at', '>=', filter.renewsFrom).where('expires_at', '<', filter.renewsTo);
  }
  // next_price only splits groups when it is set (a downgrade waiting for the renewal): rare, so the rows stay few.
  const rows = await query.groupBy([...STATUS_GROUP, 'next_price']).execute();
  return rows.map((row) => ({ ...row, line: (renewing ? (row.next_price ?? row.price) : row.price) * row.quantity, n: Number(row.n) }));
}

/** The recurring coupons the groups name, by id (a coupon gone, or not recurring, discounts nothing). */
async function couponsOf(db: Kysely<Database>, found: readonly OrderGroup[]) {
  const ids = [...new Set(found.map((group) => group.promo_id).filter((id): id is number => id !== null))];
  if (ids.length === 0) return new Map();
  const rows = await db.selectFrom('promos').select(['id', 'type', 'value', 'products', 'periods']).where('id', 'in', ids).where('recurring', '=', 1).execute();
  return new Map(rows.map((row) => [row.id, row]));
}

/** The groups' per-period and monthly amounts, per currency. */
async function summed(db: Kysely<Database>, found: readonly OrderGroup[]): Promise<RecurringAmount[]> {
  const coupons = await couponsOf(db, found);
  const totals = new Map<string, { orders: number; amount: number; monthly: Fraction }>();
  for (const group of found) {
    if (group.period === null) continue;
    const { n, line } = group;
    const coupon = group.promo_id === null ? undefined : coupons.get(group.promo_id);
    const discount = coupon === undefined ? 0 : discountOf(coupon, [{ productId: group.product_id, period: group.period, total: line }]);
    const perOrder = line - discount;
    const entry = totals.get(group.currency) ?? { orders: 0, amount: 0, monthly: ZERO };
    entry.orders += n;
    entry.amount += perOrder * n;
    entry.monthly = addFractions(entry.monthly, timesFraction(monthlyOf(perOrder, group.period), n));
    totals.set(group.currency, entry);
  }
  return [...totals]
    .map(([currency, entry]) => ({ currency, orders: entry.orders, amount: entry.amount, mrr: roundedHalfUp(entry.monthly), arr: roundedHalfUp(timesFraction(entry.monthly, 12)) }))
    .toSorted((a, b) => a.currency.localeCompare(b.currency));
}

/** MRR and ARR of the orders running at `at` (by their dates, at today's prices). */
export async function recurringAt(db: Kysely<Database>, at: string): Promise<RecurringAmount[]> {
  return summed(db, await groups(db, { at }));
}

/**
 * MRR now and the cancellations scheduled, from one read of the active orders: a group's key holds
 * cancel_at_period_end, so the scheduled ones are a subset of the same rows (one index scan instead of two).
 */
export async function recurringNowAndScheduled(db: Kysely<Database>): Promise<{ active: RecurringAmount[]; scheduled: RecurringAmount[] }> {
  const found = await groups(db, 'active');
  const [active, scheduled] = await Promise.all([summed(db, found), summed(db, found.filter((group) => group.cancel_at_period_end === 1))]);
  return { active, scheduled };
}

/** Active orders whose client canceled at period end: what they would have brought per month. */
export async function scheduledCancellations(db: Kysely<Database>): Promise<RecurringAmount[]> {
  return summed(db, await groups(db, 'scheduled_cancel'));
}

/** Active orders renewing in [from, to): how many, and what their renewals charge (coupons taken off, before tax). */
export async function renewalsDue(db: Kysely<Database>, from: string, to: string): Promise<RecurringAmount[]> {
  return summed(db, await groups(db, { renewsFrom: from, renewsTo: to }));
}
