// Usage thresholds (CONTRACT §11, §12): when an order's uses in a period reach 80% and 100% of its included uses,
// `usage.threshold_reached` is emitted once per order, period and threshold (the webhook and the `usage_threshold`
// mail listen to it). Crossing is noticed where the counts reach the database — the usage flush, once a second, and
// report_usage — never on the check path: per flush one read of the flushed keys' plans and one grouped sum of their
// orders' uses, and only for orders with a quota not yet fully announced this period. The row in `usage_thresholds`
// (primary key order, period, threshold) is what makes it once: written with the event in one transaction.
import type { Kysely } from 'kysely';
import type { Database } from '../../../db/schema.ts';
import { inTransaction } from '../../../platform/transaction.ts';
import type { EventBus } from '../../../platform/events.ts';
import { nowIso } from '../../../lib/time.ts';
import { planOf, usageOptionsOf } from './usage-plan.ts';

import '../events.ts';
import { parseObject } from '../../../lib/json.ts';

export const THRESHOLDS = [80, 100] as const;
const CHUNK = 500;
/** Announcements remembered in memory to skip the database (per order and period); cleared past this size. */
const MAX_REMEMBERED = 100_000;

/** The uses of `threshold` percent of `included`, rounded up (80% of 1,001 is reached at 801). */
export function thresholdUses(included: number, threshold: number): number {
  return Math.ceil((included * threshold) / 100);
}

export interface ThresholdWatcherDeps {
  db: Kysely<Database>;
  events: Pick<EventBus, 'emit'>;
}

export function createThresholdWatcher({ db, events }: ThresholdWatcherDeps) {
  /** `<order> <period start>` → the highest threshold known to be announced. */
  const announced = new Map<string, number>();

  async function announce(orderId: number, clientId: number, periodStart: string, used: number, included: number): Promise<void> {
    const reached = THRESHOLDS.filter((threshold) => used >= thresholdUses(included, threshold));
    if (reached.length === 0) return;
    await inTransaction(db, async (trx) => {
      for (const threshold of reached) {
        const inserted = await trx
          .insertInto('usage_thresholds')
          .values({ order_id: orderId, period_start: periodStart, threshold, used, created_at: nowIso() })
          .onConflict((oc) => oc.columns(['order_id', 'period_start', 'threshold']).doNothing())
          .returning('threshold')
          .executeTakeFirst();
        if (inserted !== undefined) await events.emit('usage.threshold_reached', { orderId, clientId, threshold, used, included, periodStart }, trx);
      }
    });
    if (announced.size >= MAX_REMEMBERED) announced.clear();
    announced.set(`${orderId} ${periodStart}`, reached.at(-1)!);
  }

  return {
    /** The keys' counts for these periods reached the database: announce the thresholds their orders crossed. */
    async afterWrite(rows: ReadonlyArray<{ api_key_id: number; period_start: string }>): Promise<void> {
      if (rows.length === 0) return;
      const keyIds = [...new Set(rows.map((row) => row.api_key_id))];
      const periodsOfKey = new Map<number, Set<string>>();
      for (const row of rows) periodsOfKey.set(row.api_key_id, (periodsOfKey.get(row.api_key_id) ?? new Set()).add(row.period_start));
      // Orders with a quota, per period, whose last threshold is not known to be announced.
      const candidates = new Map<string, { orderId: number; clientId: number; periodStart: string; included: number }>();
      for (let i = 0; i < keyIds.length; i += CHUNK) {
        const keys = await db.selectFrom('api_keys').select(['id', 'order_id', 'client_id', 'options', 'config']).where('id', 'in', keyIds.slice(i, i + CHUNK)).execute();
        for (const key of keys) {
          const { included } = planOf(usageOptionsOf(parseObject(key.options)), parseObject(key.config));
          if (included === null || included <= 0) continue;
          for (const periodStart of periodsOfKey.get(key.id) ?? []) {
            const id = `${key.order_id} ${periodStart}`;
            if ((announced.get(id) ?? 0) < 100) candidates.set(id, { orderId: key.order_id, clientId: key.client_id, periodStart, included });
          }
        }
      }
      const list = [...candidates.values()];
      for (let i = 0; i < list.length; i += CHUNK) {
        const chunk = list.slice(i, i + CHUNK);
        const sums = await db
          .selectFrom('api_key_period_usage as p')
          .innerJoin('api_keys as k', 'k.id', 'p.api_key_id')
          .select(['k.order_id', 'p.period_start'])
          .select((eb) => eb.fn.sum<number | string>('p.count').as('used'))
          .where('k.order_id', 'in', [...new Set(chunk.map((c) => c.orderId))])
          .where('p.period_start', 'in', [...new Set(chunk.map((c) => c.periodStart))])
          .groupBy(['k.order_id', 'p.period_start'])
          .execute();
        for (const sum of sums) {
          const candidate = candidates.get(`${sum.order_id} ${sum.period_start}`);
          if (candidate !== undefined) await announce(candidate.orderId, candidate.clientId, candidate.periodStart, Number(sum.used), candidate.included);
        }
      }
    },
  };
}

export type ThresholdWatcher = ReturnType<typeof createThresholdWatcher>;
