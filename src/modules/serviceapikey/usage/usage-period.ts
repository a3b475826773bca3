// Usage periods (CONTRACT §7.1, §12): the stretch of time a key's uses are counted, limited and billed in.
// `calendar_month`: the UTC calendar month. `billing_period`: the order's own period, from its activation or last
// renewal to `expires_at`; found by stepping back from `expires_at` one billing period at a time until the period
// holds `now` (a renewal paid early moves `expires_at` a period ahead, and the current period stays the one before).
// An order without a billing period (one-time) or without an expiry counts by calendar month.
import { isPeriod } from '../../../lib/periods.ts';

/** How a plan cuts time into usage periods (a plan's `usage_period` option, usage-plan.ts). */
export type UsagePeriodKind = 'calendar_month' | 'billing_period';

export interface UsagePeriod {
  /** Start (inclusive) and end (exclusive) as ISO 8601 instants. */
  start: string;
  end: string;
  startMs: number;
  endMs: number;
  /** Whether this is a calendar month (get_info shows its first and last calendar day). */
  calendar: boolean;
}

/**
 * The open billing period of an order whose `expires_at` was moved so that the schedule stepped back from it no longer
 * starts where the open period started (staff moved the expiry by less than a period, or earlier): the open period
 * keeps its start and ends with the new schedule's period that holds the moment of the move. Stored in the keys'
 * options as `usage_anchor: {start, end}` (ISO 8601) and used until its end.
 */
export interface UsageAnchor {
  startMs: number;
  endMs: number;
}

/** Backs off at most this many periods from `expires_at` (a renewal paid years ahead). */
const MAX_STEPS = 400;

export function iso(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** The UTC calendar month holding `now`. */
export function calendarMonth(now: number): UsagePeriod {
  const date = new Date(now);
  const startMs = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);
  const endMs = Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1);
  return { start: iso(startMs), end: iso(endMs), startMs, endMs, calendar: true };
}

/** `date` minus one billing period (`<n><unit>`, lib/periods.ts), clamping the day as adding does. */
export function backPeriod(date: Date, code: string): Date {
  const unit = code.slice(-1);
  const amount = Number(code.slice(0, -1));
  if (unit === 'D') return new Date(date.getTime() - amount * 86_400_000);
  if (unit === 'W') return new Date(date.getTime() - amount * 7 * 86_400_000);
  const months = unit === 'M' ? amount : amount * 12;
  const target = new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth() - months, 1, date.getUTCHours(), date.getUTCMinutes(), date.getUTCSeconds()));
  const lastDay = new Date(Date.UTC(target.getUTCFullYear(), target.getUTCMonth() + 1, 0)).getUTCDate();
  target.setUTCDate(Math.min(date.getUTCDate(), lastDay));
  return target;
}

/**
 * The usage period holding `now` for a key of this kind on an order with this billing period code and expiry.
 * Falls back to the calendar month when the order has no period or no expiry, or `now` is past the expiry (the key
 * is then invalid and counts nothing).
 */
export function usagePeriodAt(
  kind: UsagePeriodKind,
  now: number,
  order: { period: string | null; expiresAtMs: number | null },
  anchor: UsageAnchor | null = null,
): UsagePeriod {
  // A period kept open across a move of `expires_at` (period-move.ts) holds until its own end.
  if (kind === 'billing_period' && anchor !== null && anchor.startMs <= now && now < anchor.endMs) {
    return { start: iso(anchor.startMs), end: iso(anchor.endMs), startMs: anchor.startMs, endMs: anchor.endMs, calendar: false };
  }
  if (kind !== 'billing_period' || order.period === null || !isPeriod(order.period) || order.expiresAtMs === null || order.expiresAtMs <= now) {
    return calendarMonth(now);
  }
  let end = new Date(order.expiresAtMs);
  for (let step = 0; step < MAX_STEPS; step++) {
    const start = backPeriod(end, order.period);
    if (start.getTime() >= end.getTime()) break;
    if (start.getTime() <= now) return { start: iso(start.getTime()), end: iso(end.getTime()), startMs: start.getTime(), endMs: end.getTime(), calendar: false };
    end = start;
  }
  return calendarMonth(now);
}

/** The first and last calendar day a period covers, as the day-by-day usage report reads it. */
export function periodDays(period: UsagePeriod): { from: string; to: string } {
  return { from: period.start.slice(0, 10), to: iso(period.endMs - 1).slice(0, 10) };
}

/** The metering bucket of a period: its ISO 8601 interval `start/end`. */
export function bucketOf(period: Pick<UsagePeriod, 'start' | 'end'>): string {
  return `${period.start}/${period.end}`;
}
