// Property-style checks over many random prices, periods, rates and dates (seeded, so a failure reproduces):
// prorations, taxes and discounts are whole minor units, never negative, never more than what they are taken from.
import { describe, expect, it } from 'vitest';
import { addPeriod } from '../../src/lib/periods.ts';
import { isUpgrade, periodStart, unusedCredit, upgradeCharge } from '../../src/lib/proration.ts';
import { fractionOf, parseRate, percentOf } from '../../src/lib/rates.ts';
import { discountOf } from '../../src/modules/product/promos.ts';

/** mulberry32: a small seeded PRNG. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4294967296;
  };
}

const PERIODS = ['1D', '7D', '90D', '1W', '2W', '52W', '1M', '3M', '6M', '12M', '24M', '1Y', '2Y', '5Y'];
const ITERATIONS = 5000;

function isWhole(value: number): boolean {
  return Number.isSafeInteger(value);
}

describe('money properties', () => {
  const next = random(20261122);
  const int = (max: number): number => Math.floor(next() * (max + 1));
  const pick = <T>(list: readonly T[]): T => list[int(list.length - 1)]!;
  // Prices from 0 to 1,000,000.00 with a bias towards small ones, dates across 2000–2100.
  const price = (): number => (next() < 0.3 ? int(10_000) : int(100_000_000));
  const date = (): Date => new Date(Date.UTC(2000, 0, 1) + int(100 * 365) * 86_400_000 + int(86_399) * 1000);

  it('prorated credits and upgrade charges are whole, non-negative and bounded', () => {
    for (let i = 0; i < ITERATIONS; i++) {
      const period = pick(PERIODS);
      const paid = price();
      const start = date();
      const expires = addPeriod(start, period);
      // "now" anywhere from before the period to after it.
      const now = new Date(start.getTime() + (next() * 1.4 - 0.2) * (expires.getTime() - start.getTime()));
      const credit = unusedCredit(paid, period, expires, now);
      expect(isWhole(credit), `credit ${credit}`).toBe(true);
      expect(credit).toBeGreaterThanOrEqual(0);
      expect(credit).toBeLessThanOrEqual(paid);
      if (now >= expires) expect(credit).toBe(0);
      const newTotal = price();
      const charge = upgradeCharge(newTotal, credit);
      expect(isWhole(charge)).toBe(true);
      expect(charge).toBeGreaterThanOrEqual(0);
      expect(charge).toBeLessThanOrEqual(newTotal);
      expect(periodStart(expires, period).getTime()).toBeLessThan(expires.getTime());
    }
  });

  it('credits more the earlier the change', () => {
    for (let i = 0; i < 2000; i++) {
      const period = pick(PERIODS);
      const paid = price();
      const start = date();
      const expires = addPeriod(start, period);
      const a = new Date(start.getTime() + next() * (expires.getTime() - start.getTime()));
      const b = new Date(a.getTime() + next() * (expires.getTime() - a.getTime()));
      expect(unusedCredit(paid, period, expires, a)).toBeGreaterThanOrEqual(unusedCredit(paid, period, expires, b));
    }
  });

  it('taxes are whole, non-negative, rounded half up once', () => {
    for (let i = 0; i < ITERATIONS; i++) {
      const amount = price();
      const rate = int(100_000); // 0–100% in thousandths of a percent
      const tax = percentOf(amount, rate);
      expect(isWhole(tax)).toBe(true);
      expect(tax).toBeGreaterThanOrEqual(0);
      expect(tax).toBeLessThanOrEqual(amount);
      // Half up: |tax − exact| ≤ ½, and exactly ½ rounds up.
      const exact = (BigInt(amount) * BigInt(rate) * 2n) / 100_000n; // twice the exact value, floored
      expect(BigInt(tax) * 2n >= exact - 1n && BigInt(tax) * 2n <= exact + 1n).toBe(true);
    }
    expect(percentOf(5, 10_000)).toBe(1); // 0.5 → 1
    expect(percentOf(4, 10_000)).toBe(0); // 0.4 → 0
    expect(percentOf(1000, parseRate('7.25', 'rate'))).toBe(73); // 72.5 → 73
    expect(percentOf(Number.MAX_SAFE_INTEGER, 100_000)).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('discounts are whole, non-negative and never more than what they cover', () => {
    for (let i = 0; i < ITERATIONS; i++) {
      const lines = Array.from({ length: 1 + int(4) }, () => ({ productId: 1 + int(3), period: pick(['1M', '1Y']), total: price() }));
      const percentage = next() < 0.5;
      const promo = {
        type: percentage ? ('percentage' as const) : ('absolute' as const),
        value: percentage ? 1 + int(99_999) : 1 + int(100_000_000),
        products: next() < 0.5 ? null : JSON.stringify([1 + int(3)]),
        periods: next() < 0.5 ? null : JSON.stringify([pick(['1M', '1Y'])]),
      };
      const discount = discountOf(promo, lines);
      const base = lines.reduce((sum, line) => sum + line.total, 0);
      expect(isWhole(discount)).toBe(true);
      expect(discount).toBeGreaterThanOrEqual(0);
      expect(discount).toBeLessThanOrEqual(base);
      // And the invoice built on it: tax on the rest, total never negative.
      const tax = percentOf(base - discount, int(100_000));
      expect(base - discount + tax).toBeGreaterThanOrEqual(0);
    }
  });

  it('compares plans by price per unit of time exactly', () => {
    const now = new Date('2026-03-10T12:00:00Z');
    expect(isUpgrade(1000, '1M', 3000, '1M', now)).toBe(true);
    expect(isUpgrade(3000, '1M', 1000, '1M', now)).toBe(false);
    expect(isUpgrade(1000, '1M', 1000, '1M', now)).toBe(false);
    expect(isUpgrade(1000, '1M', 10_000, '1Y', now)).toBe(false); // cheaper per month
    expect(isUpgrade(1000, '1M', 13_000, '1Y', now)).toBe(true);
    for (let i = 0; i < 2000; i++) {
      const a = price();
      const b = price();
      const p = pick(PERIODS);
      expect(isUpgrade(a, p, b, p, now)).toBe(b > a);
    }
    expect(fractionOf(3, 1, 2)).toBe(2); // 1.5 → 2
  });
});
