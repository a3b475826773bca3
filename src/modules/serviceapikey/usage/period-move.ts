// A usage period ends when its order's period ends (issue 21 item 5). A `billing_period` usage period is found by
// stepping back from the order's `expires_at` (usage-period.ts); when staff move `expires_at` (admin/order/update), or a
// renewal or plan change starts a new period early, the rows already counted for the open period
// (api_key_period_usage, keyed by key and period start) and what its meters measured in it (usage_meter_days, by
// order, meter, period start and day) must end where the order's period now ends — else the close job bills that
// period's overage at the old end, a month late, or never.
//
// Runs in the order's transaction, from the product type's hooks, before the keys' cached records are dropped. The
// open period O starts at s (the period holding now that has counted uses, or a kept anchor); X is the new expiry,
// P the order's billing period, and the schedule's boundaries are X, X − P, X − 2P, …:
// - X not after now (the order has expired): O ends at X (not before s), so it closes at once;
// - a boundary falls in O within the last few seconds (a plan change or a renewal that starts a new period now): O
//   ends there and the new period counts from it;
// - otherwise O keeps its start (the uses so far, and the included ones, stay in it) and ends at the first boundary
//   at least one period after s — at X itself when X is sooner: staff extending an order by two weeks extend its
//   usage period by two weeks, moving it earlier ends the usage period with the order, and moving it by whole periods
//   changes nothing. When that end is not the schedule's own period end, the keys keep `usage_anchor` = O so every
//   process computes the same period until it ends; then the schedule from X takes over.
// Uses a process counted under the old period in the second before the change is seen (cached records are dropped
// on commit, and counts are flushed at least once a second) still land on O's row, whose end the flush keeps.
import type { Kysely } from 'kysely';
import type { Database } from '../../../db/schema.ts';
import { parseObject } from '../../../lib/json.ts';
import type { OrderSnapshot } from '../../product/product-type.ts';
import { addPeriod, isPeriod } from '../../../lib/periods.ts';
import { backPeriod, iso, usagePeriodAt } from './usage-period.ts';
import { planOf, usageOptionsOf } from './usage-plan.ts';
import { moveMeterPeriodEnd, openMeterPeriod } from '../../usage/meter-periods.ts';

/** A move within this long before now started a new period now (a plan change, a renewal that restarts the period). */
const STARTED_NOW_MS = 5000;
/** Steps back at most this many periods from the expiry (one paid years ahead). */
const MAX_STEPS = 400;

/** Where the open period starting at `startMs` ends, given the order's new expiry and period (see above). */
export function openEnd(startMs: number, expiresAtMs: number, period: string, now: number): number {
  if (expiresAtMs <= now) return Math.max(startMs, expiresAtMs);
  const fullMs = addPeriod(new Date(startMs), period).getTime();
  let end = expiresAtMs;
  for (let step = 0; step < MAX_STEPS; step++) {
    const before = backPeriod(new Date(end), period).getTime();
    if (before >= end || before <= startMs) break;
    // A boundary just passed, inside the open period: a new period started now.
    if (before <= now) return now - before < STARTED_NOW_MS ? before : end;
    if (before < fullMs) break;
    end = before;
  }
  return end;
}

/** Moves the open billing period of `order`'s keys to end with the order's period; false when nothing changed. */
export async function moveOpenPeriod(trx: Kysely<Database>, order: Pick<OrderSnapshot, 'id' | 'period' | 'expires_at'>, now = Date.now()): Promise<boolean> {
  const keys = await trx.selectFrom('api_keys').select(['id', 'options']).where('order_id', '=', order.id).orderBy('id').execute();
  const first = keys[0];
  if (first === undefined) return false;
  const plan = planOf(usageOptionsOf(parseObject(first.options)), {});
  if (plan.period !== 'billing_period') return false;
  const nowText = iso(now);
  const ids = keys.map((key) => key.id);
  // The open period: the latest counted one holding now (by its calls, else by its meters' events); without either, a
  // kept anchor still holding now.
  const row = await trx
    .selectFrom('api_key_period_usage')
    .select(['period_start', 'period_end'])
    .where('api_key_id', 'in', ids)
    .where('period_start', '<=', nowText)
    .where('period_end', '>', nowText)
    .orderBy('period_start', 'desc')
    .executeTakeFirst();
  const anchor = plan.anchor !== null && plan.anchor !== undefined && plan.anchor.startMs <= now && now < plan.anchor.endMs ? plan.anchor : null;
  const meterRow = row === undefined ? await openMeterPeriod(trx, order.id, nowText) : undefined;
  const counted = row ?? meterRow;
  const openStartMs = counted !== undefined ? Date.parse(counted.period_start) : anchor?.startMs;
  if (openStartMs === undefined) return false;
  const openStart = iso(openStartMs);

  const expiresAtMs = order.expires_at === null ? null : Date.parse(order.expires_at);
  const endMs = expiresAtMs === null || order.period === null || !isPeriod(order.period) ? null : openEnd(openStartMs, expiresAtMs, order.period, now);
  // No schedule to follow (no expiry, or not recurrent): the period is left as it is.
  if (endMs === null) return false;
  const schedule = endMs > now ? usagePeriodAt('billing_period', now, { period: order.period, expiresAtMs }) : null;
  const keep = schedule !== null && (schedule.startMs !== openStartMs || schedule.endMs !== endMs) && endMs > now ? { start: openStart, end: iso(endMs) } : null;

  const end = iso(endMs);
  let changed = false;
  if (row !== undefined && row.period_end !== end) {
    await trx.updateTable('api_key_period_usage').set({ period_end: end }).where('api_key_id', 'in', ids).where('period_start', '=', row.period_start).execute();
    changed = true;
  }
  if (await moveMeterPeriodEnd(trx, order.id, openStart, end)) changed = true;
  for (const key of keys) {
    const options = parseObject(key.options);
    const current = JSON.stringify(options.usage_anchor ?? null);
    if (current === JSON.stringify(keep)) continue;
    const { usage_anchor: _dropped, ...rest } = options;
    await trx
      .updateTable('api_keys')
      .set({ options: JSON.stringify(keep === null ? rest : { ...rest, usage_anchor: keep }) })
      .where('id', '=', key.id)
      .execute();
    changed = true;
  }
  return changed;
}
