// Money: integer minor units everywhere inside Tollgate, decimal strings at the edge. Parsing reads the decimal
// string digit by digit, never through floating point, so "0.10" is exactly 10 cents and three of them are 30.
import { InvalidInput } from './invalid-input.ts';
import { precisionOf } from './currency.ts';

export { precisionOf };

/** Largest amount accepted as input, in major units. */
export const MAX_MAJOR_UNITS = 1_000_000_000;

const DECIMAL = /^(?=\.?\d)(\d*)(?:\.(\d*))?$/;

/**
 * A decimal string or number (`"10"`, `"10.5"`, `10.25`) as integer minor units. Rejects, with a 422 naming
 * `param`: anything but digits and one dot, negative amounts, more decimals than the currency has, and amounts above
 * MAX_MAJOR_UNITS.
 */
export function parseMoney(value: unknown, param: string, precision = 2): number {
  let text: string;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new InvalidInput(param, 'must be a decimal amount');
    // String(0.1) is "0.1": the shortest text that reads back as the same double, i.e. what the sender wrote.
    text = String(value);
  } else if (typeof value === 'string') {
    text = value.trim();
  } else {
    throw new InvalidInput(param, 'must be a decimal amount');
  }
  if (text.startsWith('-')) throw new InvalidInput(param, 'must not be negative');
  if (text.startsWith('+')) text = text.slice(1);
  const match = DECIMAL.exec(text);
  if (match === null || text.length > 40) throw new InvalidInput(param, 'must be a decimal amount such as "10.00"');
  const whole = match[1]!.replace(/^0+(?=\d)/, '') || '0';
  const fraction = (match[2] ?? '').replace(/0+$/, '');
  if (fraction.length > precision) throw new InvalidInput(param, `must have at most ${precision} decimals`);
  if (whole.length > 10 || Number(whole) > MAX_MAJOR_UNITS) {
    throw new InvalidInput(param, `must not be more than ${MAX_MAJOR_UNITS}`);
  }
  const minor = Number(whole) * 10 ** precision + Number(fraction.padEnd(precision, '0') || '0');
  if (minor > MAX_MAJOR_UNITS * 10 ** precision) throw new InvalidInput(param, `must not be more than ${MAX_MAJOR_UNITS}`);
  return minor;
}

/** Integer minor units as a decimal string with the currency's precision: 1000 → "10.00", -5 → "-0.05". */
export function formatMoney(minor: number, precision = 2): string {
  if (!Number.isSafeInteger(minor)) throw new Error(`Not an amount in minor units: ${minor}`);
  const sign = minor < 0 ? '-' : '';
  const digits = String(Math.abs(minor)).padStart(precision + 1, '0');
  if (precision === 0) return `${sign}${digits}`;
  return `${sign}${digits.slice(0, -precision)}.${digits.slice(-precision)}`;
}

/** Money helpers bound to one currency, as services use them. */
export interface Money {
  currency: string;
  precision: number;
  parse(value: unknown, param: string): number;
  format(minor: number): string;
}

/** One Money per currency code, made once: callers on the key check's path (a wallet's `credit`) ask per answer. */
const MONEY_BY_CODE = new Map<string, Money>();

export function moneyFor(currency: string): Money {
  const known = MONEY_BY_CODE.get(currency);
  if (known !== undefined) return known;
  const precision = precisionOf(currency);
  const money: Money = Object.freeze({
    currency,
    precision,
    parse: (value: unknown, param: string) => parseMoney(value, param, precision),
    format: (minor: number) => formatMoney(minor, precision),
  });
  // Only three capital letters are kept (at most 17,576 entries), whatever a caller hands in.
  if (/^[A-Z]{3}$/.test(currency)) MONEY_BY_CODE.set(currency, money);
  return money;
}
