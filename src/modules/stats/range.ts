// The dashboard's range: calendar days in UTC, both ends inclusive (as the lists' date_from/date_to), by default the
// last 30 days ending today, compared with the range of the same length just before it. Stored moments are
// compared as text, which is exact because every stored time has the fixed form `YYYY-MM-DDTHH:MM:SSZ`.
import { errors } from '../../platform/errors.ts';

/** The longest range a dashboard answers for: two years (the monthly chart covers 12 months whatever the range). */
export const MAX_RANGE_DAYS = 731;
export const DEFAULT_RANGE_DAYS = 30;
const DAY_MS = 86_400_000;

export interface Bounds {
  /** First day, `YYYY-MM-DD`. */
  from: string;
  /** Last day, `YYYY-MM-DD` (inclusive). */
  to: string;
  /** First stored moment of `from`. */
  start: string;
  /** First stored moment after `to` (exclusive end). */
  end: string;
}

export interface StatsRange {
  current: Bounds;
  previous: Bounds;
  days: number;
}

function dayOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** A `YYYY-MM-DD` that names a real day (2026-02-30 does not), as milliseconds at its start; else 422 naming `param`. */
export function parseDay(value: string, param: string): number {
  const ms = /^\d{4}-\d{2}-\d{2}$/.test(value) ? Date.parse(`${value}T00:00:00Z`) : Number.NaN;
  if (!Number.isFinite(ms) || dayOf(ms) !== value) throw errors.invalid(param, 'must be a date (YYYY-MM-DD)');
  if (value < '1970-01-01') throw errors.invalid(param, 'must not be before 1970-01-01');
  return ms;
}

export function boundsOf(fromMs: number, toMs: number): Bounds {
  const from = dayOf(fromMs);
  const to = dayOf(toMs);
  return { from, to, start: `${from}T00:00:00Z`, end: `${dayOf(toMs + DAY_MS)}T00:00:00Z` };
}

/**
 * The range asked for (`from`, `to`, either may be absent) and the one before it. Without `from` the range is the 30
 * days ending `to` (today by default); without `to` it ends today, or 29 days after `from` when that is earlier.
 */
export function rangeOf(params: { from?: string | undefined; to?: string | undefined }, now: Date = new Date()): StatsRange {
  const today = Date.parse(`${dayOf(now.getTime())}T00:00:00Z`);
  const fromMs = params.from === undefined || params.from === '' ? undefined : parseDay(params.from, 'from');
  let toMs = params.to === undefined || params.to === '' ? undefined : parseDay(params.to, 'to');
  if (params.to !== undefined && params.to > '9999-12-30') throw errors.invalid('to', 'must not be after 9999-12-30');
  toMs ??= fromMs === undefined ? today : Math.min(today, fromMs + (DEFAULT_RANGE_DAYS - 1) * DAY_MS);
  const start = fromMs ?? toMs - (DEFAULT_RANGE_DAYS - 1) * DAY_MS;
  if (start > toMs) throw errors.invalid('to', 'must not be before from');
  const days = Math.round((toMs - start) / DAY_MS) + 1;
  if (days > MAX_RANGE_DAYS) throw errors.invalid('from', `must be at most ${MAX_RANGE_DAYS} days before to`);
  const previousTo = start - DAY_MS;
  return { current: boundsOf(start, toMs), previous: boundsOf(previousTo - (days - 1) * DAY_MS, previousTo), days };
}

/** The 12 calendar months ending with the month of `day`, oldest first, as `YYYY-MM`. */
export function twelveMonthsTo(day: string): string[] {
  const year = Number(day.slice(0, 4));
  const month = Number(day.slice(5, 7)) - 1;
  return Array.from({ length: 12 }, (_, index) => {
    const at = new Date(Date.UTC(year, month - 11 + index, 1));
    return at.toISOString().slice(0, 7);
  });
}
