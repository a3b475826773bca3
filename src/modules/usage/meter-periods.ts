// The usage period a meter's day rows (usage_meter_days) were counted in, for the order's period moves
// (serviceapikey/usage/period-move.ts): when staff move an order's expiry, or a renewal or plan change starts a new
// period early, the open period must end where the order's period now ends — in the meters' rows as in the calls' —
// or the close bills that period at the old end, a month late, or never. Only this module writes these rows.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';

/** The order's latest meter period holding `now` (ISO 8601), or undefined when its meters measured nothing in one. */
export async function openMeterPeriod(db: Kysely<Database>, orderId: number, now: string): Promise<{ period_start: string; period_end: string } | undefined> {
  return db
    .selectFrom('usage_meter_days')
    .select(['period_start', 'period_end'])
    .where('order_id', '=', orderId)
    .where('period_start', '<=', now)
    .where('period_end', '>', now)
    .orderBy('period_start', 'desc')
    .limit(1)
    .executeTakeFirst();
}

/** Ends the order's meter period starting at `periodStart` at `periodEnd`; returns whether a row changed. */
export async function moveMeterPeriodEnd(trx: Kysely<Database>, orderId: number, periodStart: string, periodEnd: string): Promise<boolean> {
  const moved = await trx
    .updateTable('usage_meter_days')
    .set({ period_end: periodEnd })
    .where('order_id', '=', orderId)
    .where('period_start', '=', periodStart)
    .where('period_end', '!=', periodEnd)
    .executeTakeFirst();
  return Number(moved.numUpdatedRows) > 0;
}
