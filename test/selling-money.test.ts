// Money parsing and formatting: digit-wise, never through floats.
import { describe, expect, it } from 'vitest';
import { ApiError } from '../src/http/errors.ts';
import { formatMoney, moneyFor, parseMoney } from '../src/lib/money.ts';

function rejects(value: unknown, fragment: string): void {
  try {
    parseMoney(value, 'price');
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).status).toBe(422);
    expect((error as ApiError).message).toContain('"price"');
    expect((error as ApiError).message).toContain(fragment);
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
