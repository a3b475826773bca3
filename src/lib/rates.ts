// Percentages as integers in thousandths of a percent (20% = 20000, 7.25% = 7250), and the one rounding rule money
// needs: half up, on exact integers (BigInt, so even the largest invoice never touches floating point).
import { InvalidInput } from './invalid-input.ts';
import { formatMoney, parseMoney } from './money.ts';

export const RATE_SCALE = 100_000;

/** "20", "7.25", 19.5 → thousandths of a percent; 422 naming `param` when not 0–100 with at most 3 decimals. */
export function parseRate(value: unknown, param: string, max = 100): number {
  const rate = parseMoney(value, param, 3);
  if (rate > max * 1000) throw new InvalidInput(param, `must be between 0 and ${max}`);
  return rate;
}

/** Thousandths of a percent as the shortest decimal string: 20000 → "20", 7250 → "7.25". */
export function formatRate(rate: number): string {
  return formatMoney(rate, 3).replace(/\.?0+$/, '');
}

/** `amount × rate / 100%`, rounded half up to a whole minor unit. `amount` and `rate` are non-negative integers. */
export function percentOf(amount: number, rate: number): number {
  if (!Number.isSafeInteger(amount) || !Number.isSafeInteger(rate) || amount < 0 || rate < 0) {
    throw new Error(`percentOf needs non-negative integers, got ${amount} and ${rate}`);
  }
  const scaled = BigInt(amount) * BigInt(rate);
  return Number((scaled * 2n + BigInt(RATE_SCALE)) / (2n * BigInt(RATE_SCALE)));
}

/** `amount × numerator / denominator` rounded half up: prorations by the second. */
export function fractionOf(amount: number, numerator: number, denominator: number): number {
  if (denominator <= 0 || numerator < 0 || amount < 0) throw new Error('fractionOf needs a positive denominator and non-negative values');
  const scaled = BigInt(amount) * BigInt(numerator);
  return Number((scaled * 2n + BigInt(denominator)) / (2n * BigInt(denominator)));
}

