// The usage periods due for their close: ended before the cutoff and not closed. A period is known from the uses
// counted in it (api_key_period_usage, one row per key) and from what its meters measured (usage_meter_days, one row
// per meter and day): an order may have meter events and no calls in a period, or calls and no events. Each side is
// narrowed by its period_end index and by the close's unique (order, period start), then the two are merged per
// order and period.
import type { Kysely } from 'kysely';
import type { Database } from '../../../db/schema.ts';

export interface DuePeriod {
  order_id: number;
  period_start: string;
  period_end: string;
}

/** Up to `limit` periods that ended at or before `cutoff` and have no close, by order and period start. */
export async function duePeriods(db: Kysely<Database>, cutoff: string, limit: number): Promise<DuePeriod[]> {
  const calls = db
    .selectFrom('api_key_period_usage as p')
    .innerJoin('api_keys as k', 'k.id', 'p.api_key_id')
    .select(['k.order_id as order_id', 'p.period_start as period_start', 'p.period_end as period_end'])
    .where('p.period_end', '<=', cutoff)
    .where((eb) =>
      eb.not(eb.exists(eb.selectFrom('usage_closes as c').select('c.id').whereRef('c.order_id', '=', 'k.order_id').whereRef('c.period_start', '=', 'p.period_start'))),
    );
  const meters = db
    .selectFrom('usage_meter_days as d')
    .select(['d.order_id as order_id', 'd.period_start as period_start', 'd.period_end as period_end'])
    .where('d.period_end', '<=', cutoff)
    .where((eb) =>
      eb.not(eb.exists(eb.selectFrom('usage_closes as c').select('c.id').whereRef('c.order_id', '=', 'd.order_id').whereRef('c.period_start', '=', 'd.period_start'))),
    );
  return db
    .selectFrom(calls.unionAll(meters).as('due'))
    .select(['due.order_id', 'due.period_start'])
    // The rows of one period agree on its end (period-move.ts moves both); the latest is taken should they not.
    .select((eb) => eb.fn.max('due.period_end').as('period_end'))
    .groupBy(['due.order_id', 'due.period_start'])
    .orderBy('due.order_id')
    .orderBy('due.period_start')
    .limit(limit)
    .execute();
}
