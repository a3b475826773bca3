// Which buckets an analytics answer covers (issue 25): a range (24h, 30d, 12m) ending now, in a unit (minute, hour,
// day). Each range has a default unit, chosen for a chart legible on a phone; a unit that would need more than
// MAX_POINTS buckets, or buckets older than the unit is kept, is refused with a 422 naming what is allowed.
import { errors } from '../../../platform/errors.ts';
import { bucketStart, RETENTION_MS, UNIT_MS, type Unit } from './outcomes.ts';

export const RANGES = ['24h', '30d', '12m'] as const;
export type Range = (typeof RANGES)[number];

export const RANGE_MS: Readonly<Record<Range, number>> = { '24h': 86_400_000, '30d': 30 * 86_400_000, '12m': 365 * 86_400_000 };
export const DEFAULT_UNIT: Readonly<Record<Range, Unit>> = { '24h': 'hour', '30d': 'day', '12m': 'day' };
export const MAX_POINTS = 3000;

export interface Buckets {
  unit: Unit;
  /** Epoch ms of the first and last bucket's start; the last holds `now`. */
  first: number;
  last: number;
  count: number;
}

/** The buckets of `range` in `unit` (default: the range's) ending with the one holding `now`; 422 when not served. */
export function bucketsOf(range: Range, unit: Unit | undefined, now: number): Buckets {
  const chosen = unit ?? DEFAULT_UNIT[range];
  const span = RANGE_MS[range];
  const step = UNIT_MS[chosen];
  const count = Math.ceil(span / step);
  if (count > MAX_POINTS || span > RETENTION_MS[chosen]) {
    throw errors.invalid('granularity', `"${chosen}" is not served for range "${range}" (${count} points; at most ${MAX_POINTS}, and minutes are kept 48 hours, hours 90 days): use ${range === '30d' ? '"hour" or "day"' : '"day"'}`);
  }
  const last = bucketStart(now, chosen);
  // A day range over 24 hours touches two days: yesterday's (partly) and today's.
  const first = chosen === 'day' && range === '24h' ? last - step : last - (count - 1) * step;
  return { unit: chosen, first, last, count: (last - first) / step + 1 };
}
