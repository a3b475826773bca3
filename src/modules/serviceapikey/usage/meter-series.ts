// The `meters` of client and admin serviceapikey/usage (issue 23 item 4): for each of the plan's own meters, its
// measure on every day of the range read (the same days as the calls series beside it) and the current usage
// period's figures (meter-summary.ts), so a chart can show the days and "used / included, projected charge" together.
// Read from the day rows ingestion keeps (usage/quantities.ts): ingestion writes them in the events' own transaction,
// so unlike the calls series there is nothing unflushed to add.
//
// A day with nothing measured reads 0, except on a `latest` meter, where it reads null: a gauge (seats, stored
// gigabytes) that nobody reported that day did not drop to 0, and carrying the last value forward would show a
// figure no event gave. The period's value of a `latest` meter is its `used`.
import type { Kysely } from 'kysely';
import type { Database } from '../../../db/schema.ts';
import type { Money } from '../../../lib/money.ts';
import { meterDays, periodQuantities } from '../../usage/quantities.ts';
import type { MeterOptions } from './meters-config.ts';
import { meterSummaries, type MeterSummary } from './meter-summary.ts';

export interface MeterDayFigure {
  day: string;
  /** The day's measure (count, sum, unique_count: the day's part; max: its greatest; latest: its last value); null: a `latest` meter nobody reported that day. */
  quantity: number | null;
}

export type MeterReport = MeterSummary & { series: MeterDayFigure[] };

/**
 * Each meter's series over `days` (every date of the range, in order) and its figures in the usage period starting
 * at `periodStart` (ISO 8601, as the day rows store it). No meters: an empty list, and no query.
 */
export async function meterReports(
  db: Kysely<Database>,
  money: Pick<Money, 'format' | 'precision'>,
  order: { orderId: number; meters: readonly MeterOptions[]; periodStart: string },
  days: readonly string[],
): Promise<MeterReport[]> {
  const { orderId, meters, periodStart } = order;
  if (meters.length === 0) return [];
  const [quantities, measured] = await Promise.all([
    periodQuantities(db, orderId, periodStart, meters),
    days.length === 0 ? [] : meterDays(db, orderId, days[0]!, days.at(-1)!, meters),
  ]);
  const byMeterDay = new Map(measured.map((row) => [`${row.meter} ${row.day}`, row.quantity]));
  return meterSummaries(money, meters, quantities).map((summary) => {
    const empty = summary.aggregation === 'latest' ? null : 0;
    return { ...summary, series: days.map((day) => ({ day, quantity: byMeterDay.get(`${summary.code} ${day}`) ?? empty })) };
  });
}
