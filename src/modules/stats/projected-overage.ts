// The projected overage of the usage periods open now: for each active order on a plan with an overage price, the
// calls counted so far in its open period priced as the close will price them (the same functions get_info's
// projection uses: usage-plan.ts planOf, lib/usage-pricing.ts), summed per currency. "Projected" as in get_info: the
// charge at today's count if the period closed now. SQL sums the period's uses per order; only orders whose key
// options carry an overage rule come back, so the pricing runs once per such order.
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { precisionOf } from '../../lib/currency.ts';
import { parseObject } from '../../lib/json.ts';
import { overageMinor, overageUnits } from '../../lib/usage-pricing.ts';
import { planOf, usageOptionsOf } from '../serviceapikey/usage/usage-plan.ts';
import type { DbNumber } from './list-types.ts';

export interface OverageProjection {
  currency: string;
  /** Orders past their included calls in their open period. */
  orders: number;
  /** Minor units. */
  amount: number;
}

export interface OrderOverage {
  order_id: number;
  client_id: number;
  currency: string;
  used: number;
  included: number | null;
  overage_units: number;
  /** Minor units. */
  amount: number;
}

/** Each active order past its included calls in its open period, with the charge at today's count, by order id. */
export async function overageByOrder(db: Kysely<Database>, now: string): Promise<OrderOverage[]> {
  const rows = await db
    .selectFrom('api_key_period_usage as usage')
    .innerJoin('api_keys as key', 'key.id', 'usage.api_key_id')
    .innerJoin('orders', 'orders.id', 'key.order_id')
    .select((eb) => [
      'key.order_id as order_id',
      'orders.client_id as client_id',
      'orders.currency as currency',
      eb.fn.sum<DbNumber>('usage.count').as('used'),
      // The keys of an order share its plan: any one's options and parameters price the order's uses.
      eb.fn.min<string>('key.options').as('options'),
      eb.fn.min<string>('key.config').as('config'),
    ])
    .where('usage.period_start', '<=', now)
    .where('usage.period_end', '>', now)
    .where('orders.status', '=', 'active')
    .where(sql<boolean>`${sql.ref('key.options')} like ${'%"overage"%'}`)
    .groupBy(['key.order_id', 'orders.client_id', 'orders.currency'])
    .orderBy('key.order_id')
    .execute();
  const out: OrderOverage[] = [];
  for (const row of rows) {
    const plan = planOf(usageOptionsOf(parseObject(row.options)), parseObject(row.config));
    if (plan.overage === null) continue;
    const used = Number(row.used ?? 0);
    const units = overageUnits(used, plan.included);
    if (units <= 0) continue;
    out.push({ order_id: row.order_id, client_id: row.client_id, currency: row.currency, used, included: plan.included, overage_units: units, amount: overageMinor(plan.overage, units, precisionOf(row.currency)) });
  }
  return out;
}

/** The projected overage per currency. */
export async function projectedOverage(db: Kysely<Database>, now: string): Promise<OverageProjection[]> {
  const totals = new Map<string, OverageProjection>();
  for (const order of await overageByOrder(db, now)) {
    const entry = totals.get(order.currency) ?? { currency: order.currency, orders: 0, amount: 0 };
    entry.orders += 1;
    entry.amount += order.amount;
    totals.set(order.currency, entry);
  }
  return [...totals.values()].toSorted((a, b) => a.currency.localeCompare(b.currency));
}
