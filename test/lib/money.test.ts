// Money parsing and formatting: digit-wise, never through floats.
import { describe, expect, it } from 'vitest';
import { asApiError } from '../../src/platform/errors.ts';
import { InvalidInput } from '../../src/lib/invalid-input.ts';
import { formatMoney, MAX_MAJOR_UNITS, moneyFor, parseMoney, precisionOf } from '../../src/lib/money.ts';

function rejects(value: unknown, fragment: string, precision?: number): void {
  try {
    parseMoney(value, 'price', precision);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidInput);
    // The gateway answers it as the catalogue's 422 naming the parameter.
    const answered = asApiError(error);
    expect(answered?.status).toBe(422);
    expect(answered?.code).toBe(422);
    expect(answered?.message).toContain('"price"');
    expect(answered?.message).toContain(fragment);
    return;
  }
  throw new Error(`accepted ${JSON.stringify(value)}`);
}

describe('money', () => {
  it('parses decimal strings and numbers exactly', () => {
    expect(parseMoney('10', 'price')).toBe(1000);
    expect(parseMoney('10.5', 'price')).toBe(1050);
    expect(parseMoney('0.10', 'price')).toBe(10);
    expect(parseMoney(0.1, 'price')).toBe(10);
    expect(parseMoney(19.99, 'price')).toBe(1999);
    expect(parseMoney('1.10000', 'price')).toBe(110);
    expect(parseMoney('007.01', 'price')).toBe(701);
    expect(parseMoney('.5', 'price')).toBe(50);
    expect(parseMoney(' 3 ', 'price')).toBe(300);
    expect(parseMoney('1000000000', 'price')).toBe(100_000_000_000);
    expect(parseMoney('0', 'price')).toBe(0);
    // 0.1 + 0.2 in floats is 0.30000000000000004; in minor units it is exact.
    expect(parseMoney('0.1', 'p') + parseMoney('0.2', 'p')).toBe(parseMoney('0.3', 'p'));
  });

  it('rejects negative, non-numeric, over-precise and absurd amounts naming the parameter', () => {
    rejects('-1', 'negative');
    rejects(-0.01, 'negative');
    rejects('abc', 'decimal amount');
    rejects('1,5', 'decimal amount');
    rejects('1e3', 'decimal amount');
    rejects('', 'decimal amount');
    rejects('.', 'decimal amount');
    rejects(Number.NaN, 'decimal amount');
    rejects(Number.POSITIVE_INFINITY, 'decimal amount');
    rejects(1e21, 'decimal amount');
    rejects(true, 'decimal amount');
    rejects({}, 'decimal amount');
    rejects('10.001', 'at most 2 decimals');
    rejects('1000000000.01', 'not be more than');
    rejects('99999999999999999999', 'not be more than');
  });

  it('formats minor units with the currency precision', () => {
    expect(formatMoney(1000)).toBe('10.00');
    expect(formatMoney(5)).toBe('0.05');
    expect(formatMoney(0)).toBe('0.00');
    expect(formatMoney(-5)).toBe('-0.05');
    expect(formatMoney(123_456_789)).toBe('1234567.89');
    const yen = moneyFor('JPY');
    expect(yen.format(1500)).toBe('1500');
    expect(yen.parse('1500', 'price')).toBe(1500);
    expect(() => yen.parse('1.5', 'price')).toThrow(/at most 0 decimals/);
    expect(moneyFor('KWD').format(1234)).toBe('1.234');
  });
});

// ISO 4217 exponents, written out here so that a code dropped from (or added to) src/lib/money.ts fails a test.
const ZERO_DECIMAL = ['BIF', 'CLP', 'DJF', 'GNF', 'ISK', 'JPY', 'KMF', 'KRW', 'PYG', 'RWF', 'UGX', 'UYI', 'VND', 'VUV', 'XAF', 'XOF', 'XPF'];
const THREE_DECIMAL = ['BHD', 'IQD', 'JOD', 'KWD', 'LYD', 'OMR', 'TND'];

describe('money: currencies, signs, bounds (issue 8)', () => {
  it('knows every zero-decimal currency, in any case', () => {
    for (const code of ZERO_DECIMAL) {
      expect(precisionOf(code), code).toBe(0);
      expect(precisionOf(code.toLowerCase()), code).toBe(0);
      const money = moneyFor(code);
      expect(money).toMatchObject({ currency: code, precision: 0 });
      expect(money.format(1234), code).toBe('1234');
      expect(money.parse('1234', 'price'), code).toBe(1234);
      expect(money.parse('1234.00', 'price'), code).toBe(1234);
      expect(() => money.parse('1234.5', 'price'), code).toThrow(/at most 0 decimals/);
    }
  });

  it('knows every three-decimal currency, in any case', () => {
    for (const code of THREE_DECIMAL) {
      expect(precisionOf(code), code).toBe(3);
      expect(precisionOf(code.toLowerCase()), code).toBe(3);
      const money = moneyFor(code);
      expect(money).toMatchObject({ currency: code, precision: 3 });
      expect(money.format(1234), code).toBe('1.234');
      expect(money.format(5), code).toBe('0.005');
      expect(money.parse('1.234', 'price'), code).toBe(1234);
      expect(money.parse('1.5', 'price'), code).toBe(1500);
      expect(() => money.parse('1.2345', 'price'), code).toThrow(/at most 3 decimals/);
    }
  });

  it('gives every other currency two decimals', () => {
    for (const code of ['USD', 'EUR', 'eur', 'CHF', 'GBP', 'XYZ', '']) {
      expect(precisionOf(code), code).toBe(2);
      expect(moneyFor(code).precision).toBe(2);
      expect(moneyFor(code).format(1234)).toBe('12.34');
      expect(moneyFor(code).parse('12.34', 'price')).toBe(1234);
    }
    expect(moneyFor('EUR').currency).toBe('EUR');
  });

  it('formats only integer minor units within the safe range', () => {
    for (const bad of [1.5, 0.1, -0.5, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 2 ** 53, -(2 ** 53)]) {
      expect(() => formatMoney(bad), String(bad)).toThrow(/Not an amount in minor units/);
      expect(() => formatMoney(bad, 0), String(bad)).toThrow(/Not an amount in minor units/);
    }
    expect(formatMoney(Number.MAX_SAFE_INTEGER)).toBe('90071992547409.91');
    expect(formatMoney(-Number.MAX_SAFE_INTEGER, 0)).toBe('-9007199254740991');
  });

  it('formats signs and padding at every precision', () => {
    expect(formatMoney(0, 0)).toBe('0');
    expect(formatMoney(-15, 0)).toBe('-15');
    expect(formatMoney(7, 0)).toBe('7');
    expect(formatMoney(0, 3)).toBe('0.000');
    expect(formatMoney(-1234, 3)).toBe('-1.234');
    expect(formatMoney(-1, 3)).toBe('-0.001');
    expect(formatMoney(1_000_000, 3)).toBe('1000.000');
    expect(formatMoney(-100)).toBe('-1.00');
    expect(formatMoney(10)).toBe('0.10');
  });

  it('accepts one leading + and nothing else before the digits', () => {
    expect(parseMoney('+10.50', 'price')).toBe(1050);
    expect(parseMoney(' +7 ', 'price')).toBe(700);
    expect(parseMoney('+.5', 'price')).toBe(50);
    expect(parseMoney('+0', 'price')).toBe(0);
    rejects('+', 'decimal amount');
    rejects('++1', 'decimal amount');
    rejects('+-1', 'decimal amount');
    rejects('+ 1', 'decimal amount');
    rejects('-+1', 'negative');
    rejects('-0', 'negative');
    rejects(' -3', 'negative');
  });

  it('refuses texts longer than 40 characters (after the sign), whatever their value', () => {
    const padded = (length: number): string => `${'0'.repeat(length - 4)}1.00`;
    expect(padded(40)).toHaveLength(40);
    expect(parseMoney(padded(40), 'price')).toBe(100);
    expect(parseMoney(`+${padded(40)}`, 'price')).toBe(100);
    rejects(padded(41), 'decimal amount');
    rejects(`+${padded(41)}`, 'decimal amount');
    const trailing = (length: number): string => `1.${'0'.repeat(length - 2)}`;
    expect(parseMoney(trailing(40), 'price')).toBe(100);
    rejects(trailing(41), 'decimal amount');
    // Surrounding spaces do not count.
    expect(parseMoney(`  ${padded(40)}  `, 'price')).toBe(100);
  });

  it('caps amounts at MAX_MAJOR_UNITS at every precision', () => {
    expect(MAX_MAJOR_UNITS).toBe(1_000_000_000);
    expect(parseMoney('1000000000', 'price', 0)).toBe(1_000_000_000);
    expect(parseMoney('1000000000.000', 'price', 3)).toBe(1_000_000_000_000);
    expect(parseMoney('999999999.999', 'price', 3)).toBe(999_999_999_999);
    expect(parseMoney('00000000000001', 'price')).toBe(100); // leading zeros are not digits of the amount
    rejects('1000000001', 'not be more than');
    rejects('1000000000.001', 'not be more than', 3);
    rejects('1000000000.1', 'not be more than', 1);
    rejects('10000000000', 'not be more than', 0);
    rejects(1_000_000_000.01, 'not be more than');
  });

  it('reads numbers by their shortest text, refusing exponent forms', () => {
    expect(parseMoney(1.005, 'price', 3)).toBe(1005);
    expect(parseMoney(7, 'price', 0)).toBe(7);
    expect(parseMoney(0, 'price')).toBe(0);
    rejects(1e-7, 'decimal amount');
    rejects(0.001, 'at most 2 decimals');
    rejects(null, 'decimal amount');
    rejects(undefined, 'decimal amount');
    rejects(10n, 'decimal amount');
  });

  it('reads a lone trailing dot and trailing zeros as no decimals', () => {
    expect(parseMoney('15.', 'price')).toBe(1500);
    expect(parseMoney('15.000', 'price', 0)).toBe(15);
    expect(parseMoney('0.50', 'price', 1)).toBe(5);
    expect(parseMoney('000', 'price')).toBe(0);
  });
});
