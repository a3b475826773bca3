// What ingestion needs to know of each order an event names: whether its client may use it, its meters and usage
// period as the plan in force has them, and the key its `calls` events are counted on. The plan is read where the
// close reads it (overage.ts): the options of the order's first key, which every key of the order shares and a plan
// change replaces in its own transaction — so an event is judged by the meters it will be billed by.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { parseObject } from '../../lib/json.ts';
import type { MeterOptions } from '../serviceapikey/usage/meters-config.ts';
import { usagePeriodAt, type UsagePeriod } from '../serviceapikey/usage/usage-period.ts';
import { planOf, usageOptionsOf, type UsagePlan } from '../serviceapikey/usage/usage-plan.ts';
import type { DialectName } from '../../db/database.ts';
import { chunks } from './chunks.ts';

/** The built-in meter: every accepted check and each use reported by report_usage; an ingested `calls` event is one more use. */
export const CALLS_METER = 'calls';

/** A meter as ingestion applies it: the plan's meters, and `calls` (a count with no prices of its own here). */
export type IngestMeter = Pick<MeterOptions, 'code' | 'aggregation' | 'property' | 'filter'>;
const CALLS: IngestMeter = { code: CALLS_METER, aggregation: 'count' };

export interface OrderPlan {
  clientActive: boolean;
  /** The live key an event sent by order_id counts its `calls` on (the order's first live key); null: none left. */
  callsKeyId: number | null;
  meters: Map<string, IngestMeter>;
  /** Whether a meter of the plan has included units (so its alerts may be due; service.ts `Measured.mayAlert`). */
  hasIncluded: boolean;
  /** The usage period holding an instant (ms), as the order's keys count it. */
  periodAt: (at: number) => UsagePeriod;
}

const LOOKUP_CHUNK = 500;

/** The plans of these orders (absent: no such order, or an order without a key). */
export async function orderPlans(db: Kysely<Database>, orderIds: readonly number[]): Promise<Map<number, OrderPlan>> {
  const plans = new Map<number, OrderPlan>();
  for (const part of chunks(orderIds, LOOKUP_CHUNK)) {
    const orders = await db
      .selectFrom('orders')
      .innerJoin('clients', 'clients.id', 'orders.client_id')
      .select(['orders.id', 'orders.period', 'orders.expires_at', 'clients.status as client_status'])
      .where('orders.id', 'in', part)
      .execute();
    const keys = await db.selectFrom('api_keys').select(['id', 'order_id', 'options', 'config', 'deleted_at']).where('order_id', 'in', part).orderBy('id').execute();
    for (const order of orders) {
      const own = keys.filter((key) => key.order_id === order.id);
      const first = own[0];
      if (first === undefined) continue;
      const options = usageOptionsOf(parseObject(first.options));
      const plan: UsagePlan = planOf(options, parseObject(first.config));
      const meters = new Map<string, IngestMeter>([[CALLS_METER, CALLS]]);
      for (const meter of options.meters ?? []) meters.set(meter.code, meter);
      const schedule = { period: order.period, expiresAtMs: order.expires_at === null ? null : Date.parse(order.expires_at) };
      plans.set(order.id, {
        clientActive: order.client_status === 'active',
        callsKeyId: own.find((key) => key.deleted_at === null)?.id ?? null,
        meters,
        hasIncluded: (options.meters ?? []).some((meter) => (meter.included ?? 0) > 0),
        periodAt: lastPeriodKept((at) => usagePeriodAt(plan.period, at, schedule, plan.anchor ?? null)),
      });
    }
  }
  return plans;
}

/**
 * On PostgreSQL, holds these orders' rows (FOR KEY SHARE, in id order) until the transaction ends, so the close of a
 * period (which takes the order FOR UPDATE) waits for an ingestion in flight, and an ingestion that comes after it
 * sees the close. SQLite runs one write transaction at a time, which gives the same order for free.
 */
export async function holdOrders(trx: Kysely<Database>, dialect: DialectName, orderIds: readonly number[]): Promise<void> {
  if (dialect !== 'postgres' || orderIds.length === 0) return;
  const sorted = orderIds.toSorted((a, b) => a - b);
  for (const part of chunks(sorted, LOOKUP_CHUNK)) await trx.selectFrom('orders').select('id').where('id', 'in', part).orderBy('id').forKeyShare().execute();
}

/**
 * `periodAt` remembering the last period it found: a batch's events nearly all fall in one period, and finding it
 * anew for each event (stepping back from the expiry, formatting instants) was a measurable part of ingestion.
 */
function lastPeriodKept(periodAt: (at: number) => UsagePeriod): (at: number) => UsagePeriod {
  let last: UsagePeriod | null = null;
  return (at) => {
    if (last !== null && last.startMs <= at && at < last.endMs) return last;
    last = periodAt(at);
    return last;
  };
}
