// The projected overage of the usage periods open now: for each order (any status: the close bills them all) on a plan with an overage price, what
// the close of its open period (serviceapikey/usage/overage.ts) would bill if the period closed now — the built-in
// `calls` and every meter of the plan, each priced by the close's own billIn (close-lines.ts): in the default currency
// as the plan prices it, in another priced to the micro-unit and converted at the currency's rate. Prepaid plans draw
// their usage from the balance and the close bills them nothing, so they project nothing.
//
// Three reads for all orders at once, never one per order: the candidate orders' plans (the options of each order's
// first key, as the close reads them), the uses of their open periods grouped per order and period, and their meters'
// day rows of the open periods, folded per order and period as the close folds them (usage/quantities.ts
// foldPeriodQuantities). Only orders with a key whose options mention an overage rule are read, so instances whose
// plans have none (the benchmark's 100,000 orders) pay for one scan of the keys' options.
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { parseObject } from '../../lib/json.ts';
import type { SaleCurrency } from '../currency/selling.ts';
import { billIn, billMeter, callsMeter, type BilledMeter, type PricedMeter } from '../serviceapikey/usage/close-lines.ts';
import { planOf, usageOptionsOf } from '../serviceapikey/usage/usage-plan.ts';
import { foldPeriodQuantities, type MeterDayRow } from '../usage/quantities.ts';
import type { StatsSelling } from './convert.ts';
import type { DbNumber } from './list-types.ts';

export interface OverageProjection {
  currency: string;
  /** Orders whose open period would be billed something. */
  orders: number;
  /** Minor units of `currency`: what the closes would bill. */
  amount: number;
  /** Minor units of the default currency: the same meters priced in it, before any conversion. */
  default_amount: number;
}

/** One order's open period as its close would bill it now. */
export interface OrderOverage {
  order_id: number;
  client_id: number;
  currency: string;
  period_start: string;
  period_end: string;
  /** The built-in `calls` meter's figures. */
  used: number;
  included: number | null;
  overage_units: number;
  /** Minor units of the order's currency: calls and every meter, each rounded once as the close rounds it. */
  amount: number;
  /** Minor units of the default currency: the same meters priced in it (equal to `amount` for an order in it). */
  default_amount: number;
  /** The plan's own meters as the close would bill them (amounts in the order's currency), in the plan's order. */
  meters: BilledMeter[];
}

/** Matches the stored options of a key whose plan may price overage (calls' or a meter's); the plan then decides. */
const MAY_PRICE_OVERAGE = '%"overage"%';

/** What the projection knows of an order's plan: the first key's options, as the close reads them. */
interface OrderPlan {
  client_id: number;
  currency: string;
  calls: PricedMeter;
  meters: PricedMeter[];
}

/** An order's open period: its uses and its meters' day rows. */
interface OpenPeriod {
  order_id: number;
  period_start: string;
  period_end: string;
  calls: number;
  days: MeterDayRow[];
}

function candidateOrders(db: Kysely<Database>) {
  return db.selectFrom('api_keys').select('api_keys.order_id').where(sql<boolean>`${sql.ref('api_keys.options')} like ${MAY_PRICE_OVERAGE}`);
}

/**
 * The plans of the candidate orders that can bill overage, by order id (prepaid plans left out: they bill nothing).
 * Whatever the order's status: the close bills a suspended or cancelled order's period too — its uses were made.
 */
async function orderPlans(db: Kysely<Database>): Promise<Map<number, OrderPlan>> {
  const keys = await db
    .selectFrom('api_keys as key')
    .innerJoin('orders', 'orders.id', 'key.order_id')
    .select(['key.order_id as order_id', 'orders.client_id as client_id', 'orders.currency as currency', 'key.options as options', 'key.config as config'])
    .where('orders.id', 'in', candidateOrders(db))
    .orderBy('key.id')
    .execute();
  const plans = new Map<number, OrderPlan | null>();
  for (const key of keys) {
    // The close prices an order by its first key's options (the keys of an order share its plan).
    if (plans.has(key.order_id)) continue;
    const options = usageOptionsOf(parseObject(key.options));
    const meters = options.meters ?? [];
    const calls = callsMeter(planOf(options, parseObject(key.config)));
    const priced = calls.overage !== null || meters.some((meter) => meter.overage !== null);
    plans.set(key.order_id, options.prepaid === true || !priced ? null : { client_id: key.client_id, currency: key.currency, calls, meters });
  }
  return new Map([...plans].filter((entry): entry is [number, OrderPlan] => entry[1] !== null));
}

/** The open periods (holding `now`) of the candidate orders, with their uses and their meters' day rows. */
async function openPeriods(db: Kysely<Database>, now: string): Promise<OpenPeriod[]> {
  const [uses, days] = await Promise.all([
    db
      .selectFrom('api_key_period_usage as usage')
      .innerJoin('api_keys as key', 'key.id', 'usage.api_key_id')
      .select((eb) => ['key.order_id as order_id', 'usage.period_start as period_start', eb.fn.max('usage.period_end').as('period_end'), eb.fn.sum<DbNumber>('usage.count').as('used')])
      .where('usage.period_start', '<=', now)
      .where('usage.period_end', '>', now)
      .where('key.order_id', 'in', candidateOrders(db))
      .groupBy(['key.order_id', 'usage.period_start'])
      .execute(),
    db
      .selectFrom('usage_meter_days as day')
      .select(['day.order_id as order_id', 'day.period_start as period_start', 'day.period_end as period_end', 'day.meter as meter', 'day.quantity as quantity', 'day.latest_at as latest_at'])
      .where('day.period_start', '<=', now)
      .where('day.period_end', '>', now)
      .where('day.order_id', 'in', candidateOrders(db))
      .execute(),
  ]);
  // One close per order and period start (usage_closes' unique key), whichever side its rows are on; the rows of one
  // period agree on its end, the latest is taken should they not (close-due.ts does the same).
  const periods = new Map<string, OpenPeriod>();
  const periodOf = (orderId: number, start: string, end: string): OpenPeriod => {
    const key = `${orderId} ${start}`;
    const found = periods.get(key);
    if (found !== undefined) {
      if (end > found.period_end) found.period_end = end;
      return found;
    }
    const created: OpenPeriod = { order_id: orderId, period_start: start, period_end: end, calls: 0, days: [] };
    periods.set(key, created);
    return created;
  };
  for (const row of uses) periodOf(row.order_id, row.period_start, row.period_end).calls += Number(row.used ?? 0);
  for (const row of days) periodOf(row.order_id, row.period_start, row.period_end).days.push(row);
  return [...periods.values()].toSorted((a, b) => a.order_id - b.order_id || a.period_start.localeCompare(b.period_start));
}

const sum = (amounts: readonly number[]): number => amounts.reduce((total, amount) => total + amount, 0);

/** Each currency of `codes` as sales use it, described once. */
async function salesOf(db: Kysely<Database>, selling: StatsSelling, codes: Iterable<string>): Promise<Map<string, SaleCurrency>> {
  const described = await Promise.all([...new Set(codes)].map(async (code) => [code, await selling.describe(db, code)] as const));
  return new Map(described);
}

/** Each order's open period that its close would bill something now, by order id and period start. */
export async function overageByOrder(db: Kysely<Database>, selling: StatsSelling, now: string): Promise<OrderOverage[]> {
  const [plans, periods] = await Promise.all([orderPlans(db), openPeriods(db, now)]);
  const priced = periods.filter((period) => plans.has(period.order_id));
  const sales = await salesOf(db, selling, priced.map((period) => plans.get(period.order_id)!.currency));
  const out: OrderOverage[] = [];
  for (const period of priced) {
    const plan = plans.get(period.order_id)!;
    const sale = sales.get(plan.currency)!;
    const quantities = foldPeriodQuantities(period.days, plan.meters);
    const calls = billIn(plan.calls, period.calls, sale);
    const meters = plan.meters.map((meter) => billIn(meter, quantities.get(meter.code) ?? 0, sale));
    const amount = calls.amount + sum(meters.map((meter) => meter.amount));
    if (amount <= 0) continue;
    // Before conversion: each meter priced in the default currency's minor unit, rounded once, as the plan prices it.
    const defaultAmount = sum([plan.calls, ...plan.meters].map((meter, index) => billMeter(meter, [calls, ...meters][index]!.used, sale.defaultMinorUnit).amount));
    out.push({
      order_id: period.order_id,
      client_id: plan.client_id,
      currency: plan.currency,
      period_start: period.period_start,
      period_end: period.period_end,
      used: calls.used,
      included: calls.included,
      overage_units: calls.overage_units,
      amount,
      default_amount: defaultAmount,
      meters,
    });
  }
  return out;
}

/** The projected overage per currency, each with the same in the default currency before conversion. */
export async function projectedOverage(db: Kysely<Database>, selling: StatsSelling, now: string): Promise<OverageProjection[]> {
  const totals = new Map<string, OverageProjection>();
  const orderIds = new Map<string, Set<number>>();
  for (const order of await overageByOrder(db, selling, now)) {
    const entry = totals.get(order.currency) ?? { currency: order.currency, orders: 0, amount: 0, default_amount: 0 };
    // An order counts once, should it have two open periods.
    const ids = orderIds.get(order.currency) ?? new Set<number>();
    ids.add(order.order_id);
    orderIds.set(order.currency, ids);
    entry.orders = ids.size;
    entry.amount += order.amount;
    entry.default_amount += order.default_amount;
    totals.set(order.currency, entry);
  }
  return [...totals.values()].toSorted((a, b) => a.currency.localeCompare(b.currency));
}
