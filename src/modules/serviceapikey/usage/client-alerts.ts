// The alert percentages a client adds for a meter of their order (issue 23 item 7): `alerts_set {order_id, meter,
// percentages}` replaces that meter's list, `alerts_get {order_id}` shows every meter of the plan with the plan's
// percentages and the client's. They are announced in addition to the plan's, each once per period, by the same
// sender (alert-sender.ts). Stored one row per percentage (`usage_alert_percentages`, migration 029).
//
// Decisions where the issue is silent:
// - the meters are those of the plan in force (the options of the order's first key, as ingestion and the close read
//   them), `calls` always among them; percentages kept for a meter a plan change removed stay stored but are neither
//   shown nor applied, and come back if the plan does;
// - an order with no key yet (never activated) has no plan to alert on: 404 like the other key actions; a canceled
//   order: 409, since nothing is measured for it any more;
// - a percentage added mid-period that the usage already passed is announced at the next measurement of that meter
//   (it was reached in this period and never sent).
import type { Kysely } from 'kysely';
import type { DialectName } from '../../../db/database.ts';
import type { Database } from '../../../db/schema.ts';
import { parseObject } from '../../../lib/json.ts';
import { nowIso } from '../../../lib/time.ts';
import { errors } from '../../../platform/errors.ts';
import { inTransaction } from '../../../platform/transaction.ts';
import { CALLS_ALERT_METER, CALLS_PERCENTAGES } from './alert-sender.ts';
import { planOf, usageOptionsOf } from './usage-plan.ts';

export const MAX_CLIENT_ALERTS = 10;

/** One meter of the order's plan, with its alert percentages. */
export interface MeterAlerts {
  meter: string;
  name: string;
  unit: string;
  /** Units included per period; null: unlimited, and then no percentage is ever announced. */
  included: number | null;
  /** The plan's percentages (for `calls`, 80 and 100). */
  plan: number[];
  /** The client's own, sorted. */
  client: number[];
}

export interface OrderAlerts {
  order_id: number;
  meters: MeterAlerts[];
}

/** The client's percentages of these orders: order → meter → sorted percentages. */
export async function clientPercentages(db: Kysely<Database>, orderIds: readonly number[]): Promise<Map<number, Map<string, number[]>>> {
  const out = new Map<number, Map<string, number[]>>();
  if (orderIds.length === 0) return out;
  const rows = await db.selectFrom('usage_alert_percentages').select(['order_id', 'meter', 'percentage']).where('order_id', 'in', [...orderIds]).orderBy('percentage').execute();
  for (const row of rows) {
    const meters = out.get(row.order_id) ?? new Map<string, number[]>();
    meters.set(row.meter, [...(meters.get(row.meter) ?? []), row.percentage]);
    out.set(row.order_id, meters);
  }
  return out;
}

/** The percentages as sent, checked: whole numbers 1–100, at most ten, none repeated (422 naming the item). */
function checkedPercentages(percentages: readonly number[]): number[] {
  if (percentages.length > MAX_CLIENT_ALERTS) throw errors.invalid('percentages', `must have at most ${MAX_CLIENT_ALERTS} percentages`);
  const seen = new Set<number>();
  percentages.forEach((percentage, index) => {
    if (!Number.isInteger(percentage) || percentage < 1 || percentage > 100) throw errors.invalid(`percentages.${index}`, 'must be a whole percentage from 1 to 100');
    if (seen.has(percentage)) throw errors.invalid(`percentages.${index}`, `repeats ${percentage}`);
    seen.add(percentage);
  });
  return [...seen].toSorted((a, b) => a - b);
}

export interface ClientAlertsDeps {
  db: Kysely<Database>;
  dialect: DialectName;
}

export function createClientAlerts({ db, dialect }: ClientAlertsDeps) {
  /** The order (the caller's when `clientId` is given) and its plan's meters; 404 for anyone else's or a keyless one. */
  async function orderMeters(trx: Kysely<Database>, orderId: number, clientId: number | undefined) {
    let query = trx.selectFrom('orders').select(['id', 'status']).where('id', '=', orderId);
    if (clientId !== undefined) query = query.where('client_id', '=', clientId);
    const order = await query.executeTakeFirst();
    if (order === undefined) throw errors.notFound('Order');
    const key = await trx.selectFrom('api_keys').select(['options', 'config']).where('order_id', '=', orderId).orderBy('id').executeTakeFirst();
    if (key === undefined) throw errors.apiKeyNotFound();
    const options = usageOptionsOf(parseObject(key.options));
    const calls = { meter: CALLS_ALERT_METER.code, name: CALLS_ALERT_METER.name, unit: CALLS_ALERT_METER.unit, included: planOf(options, parseObject(key.config)).included, plan: [...CALLS_PERCENTAGES] };
    const meters = [calls, ...(options.meters ?? []).map((meter) => ({ meter: meter.code, name: meter.name, unit: meter.unit, included: meter.included, plan: [...meter.alerts] }))];
    return { order, meters };
  }

  async function get(trx: Kysely<Database>, orderId: number, clientId: number | undefined): Promise<OrderAlerts> {
    const { meters } = await orderMeters(trx, orderId, clientId);
    const own = (await clientPercentages(trx, [orderId])).get(orderId);
    return { order_id: orderId, meters: meters.map((meter) => ({ ...meter, client: own?.get(meter.meter) ?? [] })) };
  }

  return {
    /** client|admin/serviceapikey/alerts_get: every meter of the order's plan with its percentages. */
    getAlerts: (orderId: number, clientId?: number): Promise<OrderAlerts> => get(db, orderId, clientId),

    /**
     * client|admin/serviceapikey/alerts_set: replaces the client's percentages of one meter (an empty list removes
     * them); answers as alerts_get. One order's changes are serialised (the order row is held on PostgreSQL; SQLite
     * writes one at a time), so two at once end as one of them, never a mix.
     */
    setAlerts: async (params: { order_id: number; meter: string; percentages: readonly number[] }, clientId?: number): Promise<OrderAlerts> => {
      const percentages = checkedPercentages(params.percentages);
      return inTransaction(db, async (trx) => {
        if (dialect === 'postgres') await trx.selectFrom('orders').select('id').where('id', '=', params.order_id).forUpdate().execute();
        const { order, meters } = await orderMeters(trx, params.order_id, clientId);
        if (order.status === 'canceled') throw errors.conflict('The order is canceled: its usage is no longer measured');
        if (!meters.some((meter) => meter.meter === params.meter)) {
          throw errors.invalid('meter', `is not a meter of the order's plan (${meters.map((meter) => meter.meter).join(', ')})`);
        }
        await trx.deleteFrom('usage_alert_percentages').where('order_id', '=', params.order_id).where('meter', '=', params.meter).execute();
        if (percentages.length > 0) {
          const created = nowIso();
          await trx
            .insertInto('usage_alert_percentages')
            .values(percentages.map((percentage) => ({ order_id: params.order_id, meter: params.meter, percentage, created_at: created })))
            .execute();
        }
        return get(trx, params.order_id, clientId);
      });
    },
  };
}

export type ClientAlerts = ReturnType<typeof createClientAlerts>;
