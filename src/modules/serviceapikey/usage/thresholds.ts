// The built-in `calls` meter's usage alerts (CONTRACT §11, §12): when an order's uses in a period reach 80% and 100% of
// its included uses — and each percentage its client added for `calls` (client-alerts.ts) — `usage.threshold_reached`
// is emitted once per order, period and percentage (alert-sender.ts; the webhook and the `usage_threshold` mail listen
// to it). Crossing is noticed where the counts reach the database — the usage flush, once a second, and report_usage —
// never on the check path: per flush one read of the flushed keys' plans, one of their clients' percentages and one
// grouped sum of their orders' uses, and only for orders with a quota not yet fully announced this period. Uses
// ingested as `calls` events are looked at by the meters' listener (meter-alerts.ts), through the same sender.
import type { Kysely } from 'kysely';
import type { Database } from '../../../db/schema.ts';
import { parseObject } from '../../../lib/json.ts';
import { CALLS_ALERT_METER, CALLS_PERCENTAGES, mergePercentages, type AlertMeter, type AlertPeriod, type AlertSender, type AnnouncedMemo } from './alert-sender.ts';
import { clientPercentages } from './client-alerts.ts';
import { planOf, usageOptionsOf } from './usage-plan.ts';

const CHUNK = 500;

export interface ThresholdWatcherDeps {
  db: Kysely<Database>;
  sender: Pick<AlertSender, 'send'>;
  memo: Pick<AnnouncedMemo, 'allKnown'>;
}

export function createThresholdWatcher({ db, sender, memo }: ThresholdWatcherDeps) {
  return {
    /** The keys' counts for these periods reached the database: announce the percentages their orders crossed. */
    async afterWrite(rows: ReadonlyArray<{ api_key_id: number; period_start: string }>): Promise<void> {
      if (rows.length === 0) return;
      const keyIds = [...new Set(rows.map((row) => row.api_key_id))];
      const periodsOfKey = new Map<number, Set<string>>();
      for (const row of rows) periodsOfKey.set(row.api_key_id, (periodsOfKey.get(row.api_key_id) ?? new Set()).add(row.period_start));
      // Orders with a quota, per period, whose percentages are not all known to be announced.
      const candidates = new Map<string, { period: AlertPeriod; meter: AlertMeter }>();
      for (let i = 0; i < keyIds.length; i += CHUNK) {
        const keys = await db.selectFrom('api_keys').select(['id', 'order_id', 'client_id', 'options', 'config']).where('id', 'in', keyIds.slice(i, i + CHUNK)).execute();
        const own = await clientPercentages(db, [...new Set(keys.map((key) => key.order_id))]);
        for (const key of keys) {
          const { included } = planOf(usageOptionsOf(parseObject(key.options)), parseObject(key.config));
          if (included === null || included <= 0) continue;
          const meter: AlertMeter = { ...CALLS_ALERT_METER, included, percentages: mergePercentages(CALLS_PERCENTAGES, own.get(key.order_id)?.get(CALLS_ALERT_METER.code)) };
          for (const periodStart of periodsOfKey.get(key.id) ?? []) {
            const period = { orderId: key.order_id, clientId: key.client_id, periodStart };
            if (!memo.allKnown(period, meter)) candidates.set(`${key.order_id} ${periodStart}`, { period, meter });
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
          .where('k.order_id', 'in', [...new Set(chunk.map((c) => c.period.orderId))])
          .where('p.period_start', 'in', [...new Set(chunk.map((c) => c.period.periodStart))])
          .groupBy(['k.order_id', 'p.period_start'])
          .execute();
        for (const sum of sums) {
          const candidate = candidates.get(`${sum.order_id} ${sum.period_start}`);
          if (candidate !== undefined) await sender.send(candidate.period, candidate.meter, Number(sum.used));
        }
      }
    },
  };
}

export type ThresholdWatcher = ReturnType<typeof createThresholdWatcher>;
