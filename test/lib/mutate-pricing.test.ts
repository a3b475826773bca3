// Overage pricing (src/lib/usage-pricing.ts, CONTRACT §12) at its edges, against hand-computed values: what a price
// string may look like, counts that are not a positive safe integer, package and tier boundaries with flat prices,
// half-up rounding at every precision, the safe-integer ceiling of a line, and uses beyond the included ones.
// Pure: no app. Written for `MUTATE_TARGET=pricing` (vitest.mutate.config.mjs) beside test/lib/usage-pricing.test.ts.
import { describe, expect, it } from 'vitest';
import { overageMicros, overageMinor, overageUnits, priceMicros, roundMicrosToMinor, type OverageRule } from '../../src/lib/usage-pricing.ts';

describe('priceMicros', () => {
  it('reads a price of up to 12 whole digits and 6 decimals as micro-units', () => {
    expect(priceMicros('1')).toBe(1_000_000n);
    expect(priceMicros('0')).toBe(0n);
    expect(priceMicros('0.000125')).toBe(125n);
    expect(priceMicros('12.5')).toBe(12_500_000n);
    expect(priceMicros('007.10')).toBe(7_100_000n);
    expect(priceMicros('999999999999.999999')).toBe(999_999_999_999_999_999n);
  });

  it('refuses anything else, naming the text', () => {
    for (const text of ['', 'abc', '-1', '+1', '1.', '.5', '1.1234567', '1234567890123', '1e3', ' 1', '1 ', '1,5', '1.5x', 'x1.5']) {
      expect(() => priceMicros(text), JSON.stringify(text)).toThrow(`Not a price: ${text}`);
    }
  });
});

describe('overageMicros', () => {
  const perUnit: OverageRule = { mode: 'per_unit', unit_price: '0.25' };
  const graduated: OverageRule = {
    mode: 'graduated',
    tiers: [
      { up_to: 10, unit_price: '1' },
      { up_to: 20, unit_price: '0.5', flat_price: '3' },
      { up_to: null, unit_price: '0.1', flat_price: '2' },
    ],
  };

  it('prices nothing for a count that is not a positive safe integer', () => {
    for (const units of [0, -1, -5, 1.5, 0.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53]) {
      expect(overageMicros(perUnit, units), String(units)).toBe(0n);
      expect(overageMicros(graduated, units), String(units)).toBe(0n);
      expect(overageMicros({ mode: 'package', package_size: 10, package_price: '1' }, units), String(units)).toBe(0n);
    }
  });

  it('prices per unit', () => {
    expect(overageMicros(perUnit, 1)).toBe(250_000n);
    expect(overageMicros(perUnit, 3)).toBe(750_000n);
  });

  it('prices whole packages, a started one as a full one', () => {
    const rule: OverageRule = { mode: 'package', package_size: 100, package_price: '1.5' };
    expect(overageMicros(rule, 1)).toBe(1_500_000n);
    expect(overageMicros(rule, 99)).toBe(1_500_000n);
    expect(overageMicros(rule, 100)).toBe(1_500_000n);
    expect(overageMicros(rule, 101)).toBe(3_000_000n);
    expect(overageMicros(rule, 250)).toBe(4_500_000n);
    expect(overageMicros({ mode: 'package', package_size: 1, package_price: '0.1' }, 7)).toBe(700_000n);
  });

  it('walks graduated tiers, charging a flat price once when a use falls in its tier', () => {
    // Tier 1 (units 1–10) at 1, tier 2 (11–20) at 0.5 + 3 flat, tier 3 (21–) at 0.1 + 2 flat.
    expect(overageMicros(graduated, 1)).toBe(1_000_000n);
    expect(overageMicros(graduated, 5)).toBe(5_000_000n);
    expect(overageMicros(graduated, 10)).toBe(10_000_000n);
    // 10 + 0.5 + 3
    expect(overageMicros(graduated, 11)).toBe(13_500_000n);
    // 10 + 10 × 0.5 + 3
    expect(overageMicros(graduated, 20)).toBe(18_000_000n);
    // 18 + 0.1 + 2
    expect(overageMicros(graduated, 21)).toBe(20_100_000n);
    // 18 + 5 × 0.1 + 2
    expect(overageMicros(graduated, 25)).toBe(20_500_000n);
  });

  it('prices every use in a single open tier, its flat price once', () => {
    const single: OverageRule = { mode: 'graduated', tiers: [{ up_to: null, unit_price: '0.01', flat_price: '1' }] };
    expect(overageMicros(single, 1)).toBe(1_010_000n);
    expect(overageMicros(single, 1000)).toBe(11_000_000n);
  });
});

describe('roundMicrosToMinor', () => {
  it('rounds half up to the currency precision', () => {
    // Cents: 0.004999 → 0.00, 0.005 → 0.01, 0.014999 → 0.01, 0.015 → 0.02.
    expect(roundMicrosToMinor(4_999n, 2)).toBe(0n);
    expect(roundMicrosToMinor(5_000n, 2)).toBe(1n);
    expect(roundMicrosToMinor(14_999n, 2)).toBe(1n);
    expect(roundMicrosToMinor(15_000n, 2)).toBe(2n);
    // Whole units: 2.499999 → 2, 2.5 → 3.
    expect(roundMicrosToMinor(2_499_999n, 0)).toBe(2n);
    expect(roundMicrosToMinor(2_500_000n, 0)).toBe(3n);
    // Thousandths: 0.0005 → 0.001, 0.000499 → 0.000.
    expect(roundMicrosToMinor(500n, 3)).toBe(1n);
    expect(roundMicrosToMinor(499n, 3)).toBe(0n);
    // Six decimals: micro-units are already minor units.
    expect(roundMicrosToMinor(1_234_567n, 6)).toBe(1_234_567n);
    expect(roundMicrosToMinor(0n, 2)).toBe(0n);
  });
});

describe('overageMinor', () => {
  it('rounds the line once, in the currency precision', () => {
    // 3 × 0.25 = 0.75
    expect(overageMinor({ mode: 'per_unit', unit_price: '0.25' }, 3, 2)).toBe(75);
    expect(overageMinor({ mode: 'per_unit', unit_price: '0.25' }, 3, 0)).toBe(1);
    expect(overageMinor({ mode: 'per_unit', unit_price: '0.25' }, 3, 3)).toBe(750);
  });

  it('returns the largest safe integer and refuses one more', () => {
    const max = Number.MAX_SAFE_INTEGER; // 9007199254740991
    expect(overageMinor({ mode: 'per_unit', unit_price: '1' }, max, 0)).toBe(max);
    // 2 × 4503599627370495 = 9007199254740990: fits; 2 × 4503599627370496 = 2^53: does not.
    expect(overageMinor({ mode: 'per_unit', unit_price: '2' }, 4_503_599_627_370_495, 0)).toBe(max - 1);
    expect(() => overageMinor({ mode: 'per_unit', unit_price: '2' }, 4_503_599_627_370_496, 0)).toThrow('The overage amount is too large');
    expect(() => overageMinor({ mode: 'per_unit', unit_price: '999999999999.999999' }, 999_999_999, 2)).toThrow('The overage amount is too large');
  });
});

describe('overageUnits', () => {
  it('counts the uses beyond the included ones', () => {
    expect(overageUnits(1500, 1000)).toBe(500);
    expect(overageUnits(1001, 1000)).toBe(1);
    expect(overageUnits(7, 0)).toBe(7);
  });

  it('counts none within the included uses or when uses are unlimited', () => {
    expect(overageUnits(1000, 1000)).toBe(0);
    expect(overageUnits(0, 0)).toBe(0);
    expect(overageUnits(1500, null)).toBe(0);
  });
});
