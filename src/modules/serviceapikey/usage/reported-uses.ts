// admin/serviceapikey/report_usage around its transaction (usage-report.ts): once the uses an SDK answered from its
// own cache are written, this process's cached records learn them, and a key whose quota they exhausted is announced
// to every process (the verifiers' events stream) and its usage thresholds checked.
import type { Kysely } from 'kysely';
import type { Database } from '../../../db/schema.ts';
import type { KeyCache } from '../check/cache.ts';
import type { KeySync } from '../sync/key-sync.ts';
import type { Metering } from './metering.ts';
import type { ThresholdWatcher } from './thresholds.ts';
import type { UsageTotals } from './totals.ts';
import { reportUsage, type UsageItem } from './usage-report.ts';
import { bucketOf } from './usage-period.ts';

export interface ReportedUsesDeps {
  db: Kysely<Database>;
  cache: Pick<KeyCache, 'get'>;
  metering: Pick<Metering, 'clock'>;
  totals: Pick<UsageTotals, 'orderKeyIds' | 'periodTotal' | 'unflushedOf'>;
  thresholds: Pick<ThresholdWatcher, 'afterWrite'>;
  sync: Pick<KeySync, 'announce'>;
}

export function createReportedUses(deps: ReportedUsesDeps) {
  const { db, cache, totals } = deps;
  return {
    /** Adds the batch's uses (nothing when its id was seen before) and tells whoever must know. */
    reportUsage: async (batchId: string, usage: readonly UsageItem[], staffId: number): Promise<true> => {
      const now = Date.now();
      const clock = deps.metering.clock(now);
      const added = await reportUsage(db, { batchId, usage, staffId, day: clock.day, now });
      for (const key of added) {
        // Cached records learn the uses now; a key whose quota this exhausted changed state (events stream).
        const entry = cache.get(key.key_hash, Date.now());
        if (entry !== undefined && entry !== null && entry.usage.period.start === key.periodStart) entry.usage.used += key.count;
        const stop = key.hardLimit ?? (key.enforceLimit && !key.overage ? key.included : null);
        if (stop !== null) {
          // The order's keys share its quota: its uses in the period, over all its keys.
          const keyIds = await totals.orderKeyIds(db, key.order_id);
          const used = (await totals.periodTotal(db, keyIds, key.periodStart)) + totals.unflushedOf(keyIds, bucketOf({ start: key.periodStart, end: key.periodEnd }));
          if (used >= stop && used - key.count < stop) deps.sync.announce(key.id, key.order_id);
        }
      }
      await deps.thresholds.afterWrite(added.map((key) => ({ api_key_id: key.id, period_start: key.periodStart })));
      return true;
    },
  };
}
