// Prorating a plan change (CONTRACT §8): the unused part of the current period is credited against the new plan.
// Everything is integer minor units and whole seconds; the one division rounds half up, so no amount is ever
// fractional, and the clamps keep every amount between 0 and what it is taken from.
import { addPeriod, parsePeriod } from './periods.ts';
import { fractionOf } from './rates.ts';

const DAY_MS = 86_400_000;

/** The start of the period that ends at `end`: `end` minus one period (months clamped to the month's last day). */
export function periodStart(end: Date, period: string): Date {
  const parsed = parsePeriod(period);
  if (parsed === null) throw new Error(`Not a period code: ${period}`);
  if (parsed.unit === 'D' || parsed.unit === 'W') return new Date(end.getTime() - parsed.count * (parsed.unit === 'D' ? 1 : 7) * DAY_MS);
  const months = parsed.count * (parsed.unit === 'Y' ? 12 : 1);
  const first = new Date(Date.UTC(end.getUTCFullYear(), end.getUTCMonth() - months, 1, end.getUTCHours(), end.getUTCMinutes(), end.getUTCSeconds()));
  const lastDay = new Date(Date.UTC(first.getUTCFullYear(), first.getUTCMonth() + 1, 0)).getUTCDate();
  first.setUTCDate(Math.min(end.getUTCDate(), lastDay));
  return first;
}

/**
 * The credit for the unused part of a period that cost `paid` and ends at `expiresAt`: `paid × unused / length`,
 * rounded half up, between 0 (expired) and `paid` (not started).
 */
export function unusedCredit(paid: number, period: string, expiresAt: Date, now: Date): number {
  if (paid <= 0) return 0;
  const start = periodStart(expiresAt, period);
  const length = Math.max(1, Math.round((expiresAt.getTime() - start.getTime()) / 1000));
  const unused = Math.min(length, Math.max(0, Math.round((expiresAt.getTime() - now.getTime()) / 1000)));
  return fractionOf(paid, unused, length);
}

/** What the upgrade costs now: the new plan's full period less the credit, never below zero. */
export function upgradeCharge(newTotal: number, credit: number): number {
  return Math.max(0, newTotal - credit);
}

/**
 * Whether moving from (price per `period`) to (newPrice per `newPeriod`) costs more per unit of time, i.e. is an
 * upgrade. Compared by cross-multiplication on exact integers (BigInt): no rate is ever a fraction.
 */
export function isUpgrade(price: number, period: string, newPrice: number, newPeriod: string, now: Date): boolean {
  const length = BigInt(addPeriod(now, period).getTime() - now.getTime());
  const newLength = BigInt(addPeriod(now, newPeriod).getTime() - now.getTime());
  return BigInt(newPrice) * length > BigInt(price) * newLength;
}
