// A period's quantity of each meter, read from the day rows ingestion keeps (rollup.ts, migration 027): what the close
// bills, what get_info shows and what a hard limit is held against. count, sum and unique_count add their days up
// (a distinct value counts on the day it was first seen in the period), max takes the greatest day, latest the day row
// with the latest event.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { IngestMeter } from './order-plans.ts';
import type { UsageMeterDayTable } from './tables.ts';

export type MeterQuantities = Map<string, number>;

/** A day row of a meter as the period fold reads it. */
export type MeterDayRow = Pick<UsageMeterDayTable, 'meter' | 'quantity' | 'latest_at'>;

/**
 * The period quantity of each of `meters` from its day rows of one order's period (0 for a meter with no rows): the
 * sum of the days for count, sum and unique_count, the greatest day for max, the day with the latest event for latest.
 * Rows of a meter not in `meters` are ignored. Pure: what the close bills and the dashboard projects fold the same way.
 */
export function foldPeriodQuantities(rows: Iterable<MeterDayRow>, meters: readonly Pick<IngestMeter, 'code' | 'aggregation'>[]): MeterQuantities {
  const quantities: MeterQuantities = new Map(meters.map((meter) => [meter.code, 0]));
  const latestAt = new Map<string, string>();
  const aggregationOf = new Map(meters.map((meter) => [meter.code, meter.aggregation]));
  for (const row of rows) {
    const aggregation = aggregationOf.get(row.meter);
    if (aggregation === undefined) continue;
    const quantity = row.quantity;
    const so = quantities.get(row.meter) ?? 0;
    switch (aggregation) {
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

/** The quantities of `meters` in the order's period starting at `periodStart` (0 for a meter with no events). */
export async function periodQuantities(db: Kysely<Database>, orderId: number, periodStart: string, meters: readonly Pick<IngestMeter, 'code' | 'aggregation'>[]): Promise<MeterQuantities> {
  if (meters.length === 0) return new Map();
  const rows = await db
    .selectFrom('usage_meter_days')
    .select(['meter', 'quantity', 'latest_at'])
    .where('order_id', '=', orderId)
    .where('period_start', '=', periodStart)
    .where('meter', 'in', meters.map((meter) => meter.code))
    .execute();
  return foldPeriodQuantities(rows, meters);
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
