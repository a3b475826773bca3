// Reading key analytics (issue 25): a key's (or an order's keys') answers per bucket and outcome, zero-filled, with its
// last use; unknown-key lookups per bucket and the addresses making most of them; and the retention prune the
// scheduler runs. Every read first flushes this process's counts, so an answer includes every check it made itself;
// other processes' counts arrive with their next flush (at most a second later).
import type { Kysely } from 'kysely';
import type { Database } from '../../../db/schema.ts';
import { errors } from '../../../platform/errors.ts';
import { bucketAt, KEY_OUTCOMES, RETENTION_MS, UNIT_MS, UNITS, zeroCounts, type OutcomeCounts, type Unit } from './outcomes.ts';
import { bucketsOf, type Buckets, type Range } from './ranges.ts';

export interface AnalyticsParams {
  id?: number | undefined;
  order_id?: number | undefined;
  range: Range;
  granularity?: Unit | undefined;
}

export type SeriesPoint = { at: string; not_found: number } & OutcomeCounts;

export interface KeyAnalytics {
  key_id: number | null;
  order_id: number;
  range: Range;
  granularity: Unit;
  series: SeriesPoint[];
  last_used_at: string | null;
  last_used_ip: string | null;
}

export interface NotFoundAnalytics {
  range: Range;
  granularity: Unit;
  series: Array<{ at: string; not_found: number }>;
  /** The addresses with most lookups of unknown keys in the range, most first (at most `limit`). */
  top: Array<{ ip: string | null; not_found: number }>;
}

export interface KeyAnalyticsDeps {
  db: Kysely<Database>;
  /** Writes this process's counts (outcome-meter.ts). */
  flush: () => Promise<void>;
  now?: () => number;
}

/** Each bucket's `at`, first to last. */
function bucketTimes(buckets: Buckets): string[] {
  const step = UNIT_MS[buckets.unit];
  return Array.from({ length: buckets.count }, (_, i) => bucketAt(buckets.first + i * step));
}

export function createKeyAnalytics({ db, flush, now = Date.now }: KeyAnalyticsDeps) {
  /** The keys asked about: one key by id, or every key an order had (deleted ones too: their answers were made). */
  async function keysOf(params: AnalyticsParams, clientId: number | undefined): Promise<{ keyIds: number[]; orderId: number; keyId: number | null }> {
    if ((params.id === undefined) === (params.order_id === undefined)) throw errors.invalid('id', 'or "order_id" is required (one of the two, not both)');
    let query = db.selectFrom('api_keys').select(['id', 'order_id']);
    query = params.id !== undefined ? query.where('id', '=', params.id) : query.where('order_id', '=', params.order_id!);
    // Another client's key is as missing as one that never existed.
    if (clientId !== undefined) query = query.where('client_id', '=', clientId);
    const rows = await query.orderBy('id').execute();
    if (rows.length === 0) throw errors.apiKeyNotFound();
    return { keyIds: rows.map((row) => row.id), orderId: rows[0]!.order_id, keyId: params.id ?? null };
  }

  return {
    analytics: async (params: AnalyticsParams, clientId?: number): Promise<KeyAnalytics> => {
      const buckets = bucketsOf(params.range, params.granularity, now());
      const { keyIds, orderId, keyId } = await keysOf(params, clientId);
      await flush();
      const times = bucketTimes(buckets);
      const rows = await db
        .selectFrom('api_key_outcomes')
        .select((eb) => ['at', ...KEY_OUTCOMES.map((column) => eb.fn.sum<number | string>(column).as(column))])
        .where('api_key_id', 'in', keyIds)
        .where('unit', '=', buckets.unit)
        .where('at', '>=', times[0]!)
        .where('at', '<=', times.at(-1)!)
        .groupBy('at')
        .execute();
      const byAt = new Map(rows.map((row) => [row.at, row]));
      const series = times.map((at): SeriesPoint => {
        const row = byAt.get(at) as (Record<string, number | string> & { at: string }) | undefined;
        const counts = zeroCounts();
        if (row !== undefined) for (const outcome of KEY_OUTCOMES) counts[outcome] = Number(row[outcome] ?? 0);
        // Unknown keys belong to no key: their lookups are counted per address (analytics_not_found).
        return { at, ...counts, not_found: 0 };
      });
      const last = await db.selectFrom('api_key_last_use').select(['at', 'ip']).where('api_key_id', 'in', keyIds).orderBy('at', 'desc').limit(1).executeTakeFirst();
      return { key_id: keyId, order_id: orderId, range: params.range, granularity: buckets.unit, series, last_used_at: last?.at ?? null, last_used_ip: last?.ip ?? null };
    },

    notFound: async (params: { range: Range; granularity?: Unit | undefined; limit?: number | undefined }): Promise<NotFoundAnalytics> => {
      const buckets = bucketsOf(params.range, params.granularity, now());
      await flush();
      const times = bucketTimes(buckets);
      const inRange = db
        .selectFrom('api_key_not_found')
        .where('unit', '=', buckets.unit)
        .where('at', '>=', times[0]!)
        .where('at', '<=', times.at(-1)!);
      const rows = await inRange.select((eb) => ['at', eb.fn.sum<number | string>('count').as('n')]).groupBy('at').execute();
      const byAt = new Map(rows.map((row) => [row.at, Number(row.n)]));
      const top = await inRange
        .select((eb) => ['ip', eb.fn.sum<number | string>('count').as('n')])
        .groupBy('ip')
        .orderBy('n', 'desc')
        .orderBy('ip')
        .limit(params.limit ?? 20)
        .execute();
      return {
        range: params.range,
        granularity: buckets.unit,
        series: times.map((at) => ({ at, not_found: byAt.get(at) ?? 0 })),
        top: top.map((row) => ({ ip: row.ip === '' ? null : row.ip, not_found: Number(row.n) })),
      };
    },

    /** Deletes buckets past their unit's retention (minutes 48 hours, hours 90 days, days 2 years). */
    prune: async (at: Date): Promise<{ deleted: number }> => {
      let deleted = 0;
      for (const unit of UNITS) {
        const cutoff = bucketAt(at.getTime() - RETENTION_MS[unit]);
        for (const table of ['api_key_outcomes', 'api_key_not_found'] as const) {
          const result = await db.deleteFrom(table).where('unit', '=', unit).where('at', '<', cutoff).executeTakeFirst();
          deleted += Number(result.numDeletedRows);
        }
      }
      return { deleted };
    },
  };
}

export type KeyAnalyticsService = ReturnType<typeof createKeyAnalytics>;
export type { Unit };
