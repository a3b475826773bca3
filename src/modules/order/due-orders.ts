// The orders a scheduled job has to look at (src/modules/cron/service.ts), read here because the order module owns
// the orders table. Each list is a first pick by text (stored times have one fixed width, lib/time.ts); the job then
// re-reads every order in its own transaction and checks it as a moment before it changes anything.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';

export function createDueOrders({ db }: { db: Kysely<Database> }) {
  const ids = (rows: Array<{ id: number }>): number[] => rows.map((row) => row.id);

  return {
    /** Free recurrent orders whose period ended (`now`: ISO text): they renew themselves, there is nothing to pay. */
    async freeRenewalsDue(now: string): Promise<number[]> {
      const rows = await db
        .selectFrom('orders')
        .select('id')
        .where('status', '=', 'active')
        .where('period', 'is not', null)
        .where('price', '=', 0)
        .where('cancel_at_period_end', '=', 0)
        .where('expires_at', '<=', now)
        .orderBy('id')
        .execute();
      return ids(rows);
    },

    /** Active orders their clients canceled at period end, whose period is over. */
    async canceledAtPeriodEndDue(now: string): Promise<number[]> {
      const rows = await db
        .selectFrom('orders')
        .select('id')
        .where('status', '=', 'active')
        .where('cancel_at_period_end', '=', 1)
        .where('expires_at', '<=', now)
        .orderBy('id')
        .execute();
      return ids(rows);
    },

    /** Active orders past their expiry. */
    async expiredActive(now: string): Promise<number[]> {
      const rows = await db.selectFrom('orders').select('id').where('status', '=', 'active').where('expires_at', '<=', now).orderBy('id').execute();
      return ids(rows);
    },

    /** Orders suspended before `cutoff` (ISO text). */
    async suspendedBefore(cutoff: string): Promise<number[]> {
      const rows = await db.selectFrom('orders').select('id').where('status', '=', 'suspended').where('suspended_at', '<', cutoff).orderBy('id').execute();
      return ids(rows);
    },
  };
}

export type DueOrders = ReturnType<typeof createDueOrders>;
