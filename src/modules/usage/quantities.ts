// A period's quantity of each meter, read from the day rows ingestion keeps (rollup.ts, migration 027): what the close
// bills, what get_info shows and what a hard limit is held against. count, sum and unique_count add their days up
// (a distinct value counts on the day it was first seen in the period), max takes the greatest day, latest the day row
// with the latest event.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { IngestMeter } from './order-plans.ts';

export type MeterQuantities = Map<string, number>;

/** The quantities of `meters` in the order's period starting at `periodStart` (0 for a meter with no events). */
export async function periodQuantities(db: Kysely<Database>, orderId: number, periodStart: string, meters: readonly Pick<IngestMeter, 'code' | 'aggregation'>[]): Promise<MeterQuantities> {
  const quantities: MeterQuantities = new Map(meters.map((meter) => [meter.code, 0]));
  if (meters.length === 0) return quantities;
  const rows = await db
    .selectFrom('usage_meter_days')
    .select(['meter', 'quantity', 'latest_at'])
    .where('order_id', '=', orderId)
    .where('period_start', '=', periodStart)
    .where('meter', 'in', meters.map((meter) => meter.code))
    .execute();
  const latestAt = new Map<string, string>();
  const aggregationOf = new Map(meters.map((meter) => [meter.code, meter.aggregation]));
  for (const row of rows) {
    const quantity = row.quantity;
    const so = quantities.get(row.meter) ?? 0;
    switch (aggregationOf.get(row.meter)) {
      case 'max':
        quantities.set(row.meter, Math.max(so, quantity));
        break;
      case 'latest': {
        const at = row.latest_at ?? '';
        if (at >= (latestAt.get(row.meter) ?? '')) {
          latestAt.set(row.meter, at);
          quantities.set(row.meter, quantity);
        }
        break;
      }
      default:
        quantities.set(row.meter, so + quantity);
    }
  }
  return quantities;
}

/** One meter's measure on one UTC day of a range: the day's part (count, sum, unique_count: new distinct values), its greatest (max) or its last value (latest). */
export interface MeterDay {
  meter: string;
  day: string;
  quantity: number;
}

/** The order's day rows for days `from` to `to` (inclusive, `YYYY-MM-DD`), a day split by a period's end folded into one. */
export async function meterDays(db: Kysely<Database>, orderId: number, from: string, to: string, meters: readonly Pick<IngestMeter, 'code' | 'aggregation'>[]): Promise<MeterDay[]> {
  if (meters.length === 0) return [];
  const rows = await db
    .selectFrom('usage_meter_days')
    .select(['meter', 'day', 'quantity', 'latest_at'])
    .where('order_id', '=', orderId)
    .where('day', '>=', from)
    .where('day', '<=', to)
    .where('meter', 'in', meters.map((meter) => meter.code))
    .orderBy('day')
    .orderBy('meter')
    .execute();
  const aggregationOf = new Map(meters.map((meter) => [meter.code, meter.aggregation]));
  const out = new Map<string, MeterDay & { at: string }>();
  for (const row of rows) {
    const key = `${row.meter} ${row.day}`;
    const quantity = row.quantity;
    const so = out.get(key);
    if (so === undefined) {
      out.set(key, { meter: row.meter, day: row.day, quantity, at: row.latest_at ?? '' });
      continue;
    }
    const aggregation = aggregationOf.get(row.meter);
    if (aggregation === 'max') so.quantity = Math.max(so.quantity, quantity);
    else if (aggregation === 'latest') {
      if ((row.latest_at ?? '') >= so.at) {
        so.quantity = quantity;
        so.at = row.latest_at ?? '';
      }
    } else so.quantity += quantity;
  }
  return [...out.values()].map(({ meter, day, quantity }) => ({ meter, day, quantity }));
}
