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

/** One paid invoice line that bought a service period, and the invoice it is on (minor units). */
export interface PaidLine {
  /** The line's total: quantity × price, plus a setup fee on a first activation, less the credit on a plan change. */
  lineTotal: number;
  /** The part of the line that is the period itself (quantity × price, or the charge of a plan change). */
  periodTotal: number;
  /** The invoice's subtotal (sum of its lines) and the coupon discount taken off it. */
  subtotal: number;
  discount: number;
  /** What the invoice asked (after discount and tax), and what of it was refunded since. */
  invoiceTotal: number;
  refunded: number;
  /** The credit a plan change carried into the line from the period before (paid then, not now). */
  carried: number;
}

/** `amount × numerator / denominator` rounded down (BigInt): a share that may never exceed what it is a share of. */
function shareDown(amount: number, numerator: number, denominator: number): number {
  if (denominator <= 0) return 0;
  return Number((BigInt(amount) * BigInt(numerator)) / BigInt(denominator));
}

/**
 * What was actually paid for the service period a line bought (issue 20, M1 and M8): the period's part of the line
 * (a setup fee is not service time), less the line's share of the coupon discount, scaled by the part of the invoice
 * that was not refunded, plus the credit carried into it. Tax is left out (it is charged again on the next invoice).
 * Each share rounds down, so a credit computed from it never exceeds what the client paid.
 */
export function paidForPeriod(line: PaidLine): number {
  const lineTotal = Math.max(0, line.lineTotal);
  const discountShare = line.subtotal <= 0 ? 0 : lineTotal - shareDown(lineTotal, Math.max(0, line.subtotal - line.discount), line.subtotal);
  const period = shareDown(lineTotal - discountShare, Math.min(Math.max(0, line.periodTotal), lineTotal), lineTotal);
  const kept = shareDown(period, Math.max(0, line.invoiceTotal - line.refunded), line.invoiceTotal);
  return kept + Math.max(0, line.carried);
}
