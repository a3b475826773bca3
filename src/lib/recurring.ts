// Recurring revenue: a price charged every `<n><unit>` period restated per month, exactly. A week is 52/12 of a month
// and a day 365/12 (the rule Stripe and Baremetrics use), so 1W at 12.00 is 52.00 a month. The amounts are summed as
// exact fractions (BigInt) and rounded half up once per total, so MRR and ARR (= 12 × the exact MRR, not 12 × the
// rounded one) never drift by a cent per order.
import { parsePeriod } from './periods.ts';
import { InvalidInput } from './invalid-input.ts';

/** A non-negative fraction of minor units. */
export interface Fraction {
  num: bigint;
  den: bigint;
}

export const ZERO: Fraction = { num: 0n, den: 1n };

function gcd(a: bigint, b: bigint): bigint {
  let x = a < 0n ? -a : a;
  let y = b;
  while (y !== 0n) [x, y] = [y, x % y];
  return x === 0n ? 1n : x;
}

function reduced(num: bigint, den: bigint): Fraction {
  const g = gcd(num, den);
  return { num: num / g, den: den / g };
}

/** Months per one of the period's units: M 1, Y 12, W 12/52, D 12/365 — as (months numerator, denominator). */
const MONTHS_PER_UNIT = { M: [1n, 1n], Y: [12n, 1n], W: [12n, 52n], D: [12n, 365n] } as const;

/** `amount` minor units charged every `period`, per month, as an exact fraction. An unknown period → InvalidInput. */
export function monthlyOf(amount: number, period: string): Fraction {
  const parsed = parsePeriod(period);
  if (parsed === null) throw new InvalidInput('period', `is not a period code: ${period}`);
  const [months, per] = MONTHS_PER_UNIT[parsed.unit];
  // amount / (count × months/per) = amount × per / (count × months)
  return reduced(BigInt(amount) * per, BigInt(parsed.count) * months);
}

export function addFractions(a: Fraction, b: Fraction): Fraction {
  return reduced(a.num * b.den + b.num * a.den, a.den * b.den);
}

export function timesFraction(a: Fraction, factor: number): Fraction {
  return reduced(a.num * BigInt(factor), a.den);
}

/** Rounded half up to whole minor units. */
export function roundedHalfUp(a: Fraction): number {
  const twice = (2n * a.num + a.den) / (2n * a.den);
  return Number(a.num >= 0n ? twice : -((2n * -a.num + a.den) / (2n * a.den)));
}
