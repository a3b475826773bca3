// The conversion helper (src/lib/exchange.ts) over many seeded random amounts, rates and minor units: one rounding,
// half up, exact against a rational reference; symmetric for credits; monotonic; the price rounding lands on its
// ending, never lower and less than a step higher. Plus the ISO 4217 data against the minor units money.ts uses.
import { describe, expect, it } from 'vitest';
import { checkPriceRounding, convertMinor, convertMinorBack, convertPrice, divideRates, parseExchangeRate, roundPrice } from '../../src/lib/exchange.ts';
import { InvalidInput } from '../../src/lib/invalid-input.ts';
import { isoCurrencies, isoCurrency } from '../../src/lib/iso-4217.ts';
import { precisionOf } from '../../src/lib/money.ts';

/** mulberry32: a small seeded PRNG, so a failure reproduces. */
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

const ITERATIONS = 5000;
const next = random(20261126);
const int = (max: number): number => Math.floor(next() * (max + 1));
/** A random canonical rate: up to 4 integer digits and up to 12 decimals, never zero (results stay safe integers). */
function randomRate(): string {
  const whole = String(int(10 ** int(4)));
  const decimals = int(12);
  const fraction = Array.from({ length: decimals }, () => String(int(9))).join('').replace(/0+$/, '');
  const text = fraction === '' ? whole : `${whole}.${fraction}`;
  return /^[0.]*$/.test(text) ? '1' : parseExchangeRate(text, 'rate');
}
const units = [0, 2, 3];

describe('convertMinor', () => {
  it('worked examples: USD→EUR, USD→JPY (0 decimals), USD→KWD (3 decimals), JPY→USD', () => {
    expect(convertMinor(1000, '0.92', 2, 2)).toBe(920);
    expect(convertMinor(1999, '151.37', 2, 0)).toBe(3026); // 3025.8863 yen
    expect(convertMinor(1000, '0.307', 2, 3)).toBe(3070);
    expect(convertMinor(1000, '0.0066', 0, 2)).toBe(660);
    expect(convertMinor(5, '0.1', 2, 2)).toBe(1); // 0.5 cent: half up
    expect(convertMinor(-5, '0.1', 2, 2)).toBe(-1); // and away from zero for a credit
    expect(convertMinor(4, '0.1', 2, 2)).toBe(0);
  });

  it('rounds once, half up, exactly as the rational product does', () => {
    for (let i = 0; i < ITERATIONS; i += 1) {
      const amount = int(10 ** 8);
      const rate = randomRate();
      const from = units[int(2)]!;
      const to = units[int(2)]!;
      const result = convertMinor(amount, rate, from, to);
      expect(Number.isSafeInteger(result)).toBe(true);
      // exact = amount × rate × 10^(to−from): compare 2·|result·den − num| ≤ den, and a tie goes up.
      const [whole, fraction = ''] = rate.split('.');
      let num = BigInt(amount) * BigInt(`${whole}${fraction}`);
      let den = 10n ** BigInt(fraction.length);
      if (to >= from) num *= 10n ** BigInt(to - from);
      else den *= 10n ** BigInt(from - to);
      const gap = BigInt(result) * den - num;
      expect(2n * (gap < 0n ? -gap : gap) <= den).toBe(true);
      if (2n * gap === -den) throw new Error('a tie was rounded down');
    }
  });

  it('is symmetric for credits and monotonic in the amount', () => {
    for (let i = 0; i < ITERATIONS; i += 1) {
      const rate = randomRate();
      const from = units[int(2)]!;
      const to = units[int(2)]!;
      const a = int(10 ** 8);
      const b = a + int(10 ** 6);
      expect(convertMinor(-a, rate, from, to)).toBe(-convertMinor(a, rate, from, to));
      expect(convertMinor(a, rate, from, to)).toBeLessThanOrEqual(convertMinor(b, rate, from, to));
    }
  });

  it('rate 1 between currencies of the same minor unit changes nothing', () => {
    for (let i = 0; i < 500; i += 1) {
      const amount = int(10 ** 12) - 10 ** 11;
      const unit = units[int(2)]!;
      expect(convertMinor(amount, '1', unit, unit)).toBe(amount);
    }
  });

  it('refuses an amount that is not whole minor units, and a result too large to count', () => {
    expect(() => convertMinor(1.5, '1', 2, 2)).toThrow();
    expect(() => convertMinor(Number.MAX_SAFE_INTEGER, '999999999', 2, 3)).toThrow(InvalidInput);
  });
});

describe('parseExchangeRate', () => {
  it('canonicalises a positive decimal', () => {
    expect(parseExchangeRate('0.920000', 'r')).toBe('0.92');
    expect(parseExchangeRate(1, 'r')).toBe('1');
    expect(parseExchangeRate(' 0151.370 ', 'r')).toBe('151.37');
    expect(parseExchangeRate('0.000000000001', 'r')).toBe('0.000000000001');
  });

  it('refuses zero, negatives, non-numbers, exponents and too many digits with a 422 naming the parameter', () => {
    for (const bad of ['0', '0.000', '-1', '-0.5', 'abc', '', '1e5', '1,5', '.', '0x10', '1.0000000000001', '1234567890', NaN, Infinity, -2, null, true, {}, []]) {
      expect(() => parseExchangeRate(bad, 'conversion_rate'), JSON.stringify(bad)).toThrow(InvalidInput);
      try {
        parseExchangeRate(bad, 'conversion_rate');
      } catch (error) {
        expect((error as InvalidInput).param).toBe('conversion_rate');
      }
    }
  });
});

describe('price rounding', () => {
  it('x.99, to 0.05 and ¥…80', () => {
    const charm = { step: 100, ending: 99 };
    expect(roundPrice(1201, charm)).toBe(1299);
    expect(roundPrice(1299, charm)).toBe(1299);
    expect(roundPrice(1300, charm)).toBe(1399);
    expect(roundPrice(50, charm)).toBe(99);
    expect(roundPrice(0, charm)).toBe(0); // free stays free
    expect(roundPrice(1201, { step: 5, ending: 0 })).toBe(1205);
    expect(roundPrice(1901, { step: 100, ending: 80 })).toBe(1980);
    expect(convertPrice(1000, '0.92', 2, 2, charm)).toBe(999);
    expect(convertPrice(1000, '0.92', 2, 2, null)).toBe(920);
  });

  it('lands on the ending, never below the price, less than one step above it, and is idempotent', () => {
    for (let i = 0; i < ITERATIONS; i += 1) {
      const step = 1 + int(10_000);
      const rule = { step, ending: int(step - 1) };
      const amount = 1 + int(10 ** 10);
      const rounded = roundPrice(amount, rule);
      expect(rounded).toBeGreaterThanOrEqual(amount);
      expect(rounded - amount).toBeLessThan(step);
      expect(((rounded - rule.ending) % step + step) % step).toBe(0);
      expect(roundPrice(rounded, rule)).toBe(rounded);
    }
  });

  it('refuses a step of 0 or an ending not below the step', () => {
    expect(() => checkPriceRounding({ step: 0, ending: 0 }, 'price_rounding')).toThrow(InvalidInput);
    expect(() => checkPriceRounding({ step: 100, ending: 100 }, 'price_rounding')).toThrow(InvalidInput);
    expect(() => checkPriceRounding({ step: 100, ending: -1 }, 'price_rounding')).toThrow(InvalidInput);
  });
});

describe('divideRates', () => {
  it('restates a rate against another currency', () => {
    expect(divideRates('0.92', '0.92', 'r')).toBe('1');
    expect(divideRates('151.37', '1', 'r')).toBe('151.37');
    expect(divideRates('1', '0.8', 'r')).toBe('1.25');
    expect(divideRates('1', '3', 'r')).toBe('0.333333333333');
    expect(divideRates('2', '3', 'r')).toBe('0.666666666667');
    expect(() => divideRates('0.000000000001', '100', 'r')).toThrow(InvalidInput);
  });

  it('restating there and back keeps a rate to 9 significant digits', () => {
    for (let i = 0; i < 2000; i += 1) {
      const a = randomRate();
      const b = `${1 + int(999)}.${String(int(999)).padStart(3, '0')}`;
      const there = divideRates(a, b, 'r');
      const back = Number(divideRates(there, divideRates('1', b, 'r'), 'r'));
      if (Number(a) >= 0.001) expect(Math.abs(back - Number(a)) / Number(a)).toBeLessThan(1e-6);
    }
  });
});

describe('convertMinorBack: an amount back into the default currency at a stored rate', () => {
  it('divides by the rate and rounds half up once, across minor units', () => {
    expect(convertMinorBack(920, '0.92', 2, 2)).toBe(1000);
    expect(convertMinorBack(999, '0.9', 2, 2)).toBe(1110);
    expect(convertMinorBack(1500, '150', 0, 2)).toBe(1000);
    expect(convertMinorBack(3070, '0.307', 3, 2)).toBe(1000);
    // 1 yen at 151.37 is 0.6606… cents: 1 cent, half up.
    expect(convertMinorBack(1, '151.37', 0, 2)).toBe(1);
    expect(convertMinorBack(-920, '0.92', 2, 2)).toBe(-1000);
    expect(() => convertMinorBack(1, '0', 2, 2)).toThrow(InvalidInput);
  });

  it('undoes convertMinor within one minor unit of the target', () => {
    for (let i = 0; i < 2000; i += 1) {
      const rate = randomRate();
      const amount = int(1_000_000);
      const there = convertMinor(amount, rate, 2, 2);
      if (there === 0) continue;
      const back = convertMinorBack(there, rate, 2, 2);
      // `there` lost at most half a unit; back in the source it is worth at most half a unit ÷ rate.
      expect(Math.abs(back - amount)).toBeLessThanOrEqual(Math.ceil(0.5 / Number(rate)) + 1);
    }
  });
});

describe('ISO 4217 data', () => {
  it('has the common currencies with their minor units, and no testing or "no currency" code', () => {
    expect(isoCurrency('USD')).toEqual({ code: 'USD', name: 'US Dollar', symbol: '$', minorUnit: 2 });
    expect(isoCurrency('JPY')?.minorUnit).toBe(0);
    expect(isoCurrency('KWD')?.minorUnit).toBe(3);
    for (const absent of ['XXX', 'XTS', 'XAU', 'XDR', 'ABC', 'usd', 'toString', '__proto__']) expect(isoCurrency(absent)).toBeUndefined();
  });

  it('agrees with the minor units money.ts counts in', () => {
    for (const currency of isoCurrencies()) expect(precisionOf(currency.code), currency.code).toBe(currency.minorUnit);
    expect(isoCurrencies().length).toBeGreaterThan(150);
  });
});
