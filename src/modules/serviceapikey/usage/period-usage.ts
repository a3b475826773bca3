// Uses per key and usage period (api_key_period_usage): a second meter beside the daily one (metering.ts), whose
// bucket is the period's ISO 8601 interval `start/end`, so a billing period that starts at 14:23:05 is counted
// exactly, and a use in the last second before a period's end lands in that period. The flush that writes them then
// hands the rows it wrote to the threshold watcher — the only extra work usage thresholds cost.
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../../db/schema.ts';
import type { UsageRow, UsageWriter } from './metering.ts';

/** A meter row's key and period (its bucket is `start/end`). */
export function periodOfRow(row: UsageRow): { api_key_id: number; period_start: string; period_end: string; count: number } {
  const [start = '', end = ''] = row.day.split('/');
  return { api_key_id: row.api_key_id, period_start: start, period_end: end, count: row.count };
}

/** The period meter's writer. */
export function periodUsageWriter(): UsageWriter {
  return async (db: Kysely<Database>, rows: UsageRow[]) => {
    const values = rows.map(periodOfRow);
    await db
      .insertInto('api_key_period_usage')
      .values(values)
      .onConflict((oc) =>
        // The stored end stays: a period moved with its order's expiry (period-move.ts) must not be put back by a
        // process that counted under the old end before it heard of the move.
        oc.columns(['api_key_id', 'period_start']).doUpdateSet({ count: sql<number>`api_key_period_usage.count + excluded.count` }),
      )
      .execute();
  };
}

/** Adds uses to periods inside `trx` (report_usage). */
export async function addPeriodUses(trx: Kysely<Database>, rows: ReadonlyArray<{ api_key_id: number; period_start: string; period_end: string; count: number }>): Promise<void> {
  if (rows.length === 0) return;
  await trx
    .insertInto('api_key_period_usage')
    .values([...rows])
    .onConflict((oc) => oc.columns(['api_key_id', 'period_start']).doUpdateSet({ count: sql<number>`api_key_period_usage.count + excluded.count` }))
    .execute();
}

/** Uses of an order's keys in the period starting at `periodStart` (flushed counts). */
export async function orderPeriodUses(trx: Kysely<Database>, orderId: number, periodStart: string): Promise<number> {
  const row = await trx
    .selectFrom('api_key_period_usage as p')
    .innerJoin('api_keys as k', 'k.id', 'p.api_key_id')
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number | string>('p.count'), eb.lit(0)).as('used'))
    .where('k.order_id', '=', orderId)
    .where('p.period_start', '=', periodStart)
    .executeTakeFirst();
  return Number(row?.used ?? 0);
}

/** Adds uses to keys' days inside `trx` (ingested `calls` events, src/modules/usage/rollup.ts). */
export async function addDayUses(trx: Kysely<Database>, rows: ReadonlyArray<{ api_key_id: number; day: string; count: number }>): Promise<void> {
  if (rows.length === 0) return;
  await trx
    .insertInto('api_key_usage')
    .values([...rows])
    .onConflict((oc) => oc.columns(['api_key_id', 'day']).doUpdateSet({ count: sql<number>`api_key_usage.count + excluded.count` }))
    .execute();
}
