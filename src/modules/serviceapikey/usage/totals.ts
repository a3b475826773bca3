// An order's uses in a usage period: what the check's records start from, what staff, clients and reported uses read.
// The keys of an order share its quota, so every total is a sum over all its keys, deleted ones included (their uses
// stay counted), of the flushed counts plus this process's counts not yet written.
import type { Kysely } from 'kysely';
import type { Database } from '../../../db/schema.ts';
import { parseObject } from '../../../lib/json.ts';
import type { Metering } from './metering.ts';
import { bucketOf, usagePeriodAt, type UsagePeriod } from './usage-period.ts';
import { planOf, usageOptionsOf, type UsagePlan } from './usage-plan.ts';

/** The usage period a key of this plan is in at `now`. */
export function periodOf(plan: Pick<UsagePlan, 'period' | 'anchor'>, now: number, order: { period: string | null; expiresAtMs: number | null }): UsagePeriod {
  return usagePeriodAt(plan.period, now, order, plan.anchor ?? null);
}

export interface UsageTotalsDeps {
  /** The uses per usage period, counted in memory and flushed in the background. */
  periodMeter: Pick<Metering, 'unflushedTotal'>;
}

export function createUsageTotals({ periodMeter }: UsageTotalsDeps) {
  /** This process's uses of these keys not yet written, in the period of this meter bucket. */
  function unflushedOf(keyIds: readonly number[], bucket: string): number {
    let total = 0;
    for (const id of keyIds) total += periodMeter.unflushedTotal(id, bucket, bucket);
    return total;
  }

  /** The flushed uses of an order's keys (deleted keys included: their uses stay counted) in the period starting at `periodStart`. */
  async function periodTotal(trx: Kysely<Database>, keyIds: readonly number[], periodStart: string): Promise<number> {
    const row = await trx
      .selectFrom('api_key_period_usage')
      .select((eb) => eb.fn.coalesce(eb.fn.sum<number | string>('count'), eb.lit(0)).as('used'))
      .where('api_key_id', 'in', keyIds.length === 0 ? [0] : keyIds)
      .where('period_start', '=', periodStart)
      .executeTakeFirst();
    return Number(row?.used ?? 0);
  }

  /** The ids of all an order's keys, deleted ones included. */
  async function orderKeyIds(trx: Kysely<Database>, orderId: number): Promise<number[]> {
    return (await trx.selectFrom('api_keys').select('id').where('order_id', '=', orderId).execute()).map((key) => key.id);
  }

  /**
   * The order's plan (its keys share it), its usage period now and its uses in it: the sum over all its keys,
   * deleted ones included, flushed and this process's unflushed counts.
   */
  async function currentUsage(
    trx: Kysely<Database>,
    row: { order_id: number; options: string; config: string; expires_at: string | null; order_period: string | null },
  ): Promise<{ plan: UsagePlan; period: UsagePeriod; used: number }> {
    const plan = planOf(usageOptionsOf(parseObject(row.options)), parseObject(row.config));
    const period = periodOf(plan, Date.now(), { period: row.order_period, expiresAtMs: row.expires_at === null ? null : Date.parse(row.expires_at) });
    const keyIds = await orderKeyIds(trx, row.order_id);
    return { plan, period, used: (await periodTotal(trx, keyIds, period.start)) + unflushedOf(keyIds, bucketOf(period)) };
  }

  return { unflushedOf, periodTotal, orderKeyIds, currentUsage };
}

export type UsageTotals = ReturnType<typeof createUsageTotals>;
