// Pruning what ingestion keeps only for a while (issue 23), run by the scheduled jobs:
// - usage events received more than 35 days ago. An event's id is its idempotency key "for at least 35 days": a row is
//   what refuses a repeat, so it is kept that long from its arrival and no longer (what the meters measured is in the
//   day rows, which stay);
// - the distinct values a unique_count meter saw in a period that is closed: they decide whether a new event adds a
//   user, and a closed period takes no new events (PERIOD_CLOSED), so they serve no one.
// Deletes go in batches of `batch` rows, each its own short statement, so neither SQLite's single writer nor
// PostgreSQL's ingestion waits long on them; a run stops after `budgetMs` and the next run carries on.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';

/** How long an event's id keeps refusing repeats, from its arrival. */
export const IDEMPOTENCY_WINDOW_MS = 35 * 86_400_000;

export interface PruneOptions {
  /** Rows per delete. */
  batch?: number;
  /** A run stops starting batches after this long. */
  budgetMs?: number;
}

export interface Pruned {
  events: number;
  uniques: number;
}

const BATCH = 5000;
const BUDGET_MS = 10_000;

/** Runs `deleteBatch` until it deletes fewer than `batch` rows or the budget is spent; returns the rows deleted. */
async function inBatches(batch: number, until: number, deleteBatch: () => Promise<number>): Promise<number> {
  let total = 0;
  for (;;) {
    const deleted = await deleteBatch();
    total += deleted;
    if (deleted < batch || Date.now() >= until) return total;
  }
}

export function createUsagePruning({ db }: { db: Kysely<Database> }) {
  return {
    /** Deletes the events past the idempotency window and the distinct values of closed periods. */
    async prune(now: Date, options: PruneOptions = {}): Promise<Pruned> {
      const batch = options.batch ?? BATCH;
      const until = Date.now() + (options.budgetMs ?? BUDGET_MS);
      // received_at is written by toISOString (milliseconds), so the cutoff is too: the texts compare as times.
      const cutoff = new Date(now.getTime() - IDEMPOTENCY_WINDOW_MS).toISOString();
      const events = await inBatches(batch, until, async () => {
        const deleted = await db
          .deleteFrom('usage_events')
          .where((eb) =>
            eb(
              eb.refTuple('order_id', 'event_id'),
              'in',
              eb.selectFrom('usage_events as old').select(['old.order_id', 'old.event_id']).where('old.received_at', '<', cutoff).orderBy('old.received_at').limit(batch).$asTuple('order_id', 'event_id'),
            ),
          )
          .executeTakeFirst();
        return Number(deleted.numDeletedRows);
      });
      const uniques = await inBatches(batch, until, async () => {
        const deleted = await db
          .deleteFrom('usage_meter_uniques')
          .where((eb) =>
            eb(
              eb.refTuple('order_id', 'meter', 'period_start', 'value'),
              'in',
              eb
                .selectFrom('usage_meter_uniques as u')
                .innerJoin('usage_closes as c', (join) => join.onRef('c.order_id', '=', 'u.order_id').onRef('c.period_start', '=', 'u.period_start'))
                .select(['u.order_id', 'u.meter', 'u.period_start', 'u.value'])
                .limit(batch)
                .$asTuple('order_id', 'meter', 'period_start', 'value'),
            ),
          )
          .executeTakeFirst();
        return Number(deleted.numDeletedRows);
      });
      return { events, uniques };
    },
  };
}

export type UsagePruning = ReturnType<typeof createUsagePruning>;
