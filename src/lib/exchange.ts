// Converting money between currencies at an exchange rate, without floating point. A rate is a decimal string
// ("0.92": one unit of the default currency buys 0.92 of the other, as FOSSBilling's `conversion_rate`); an amount is
// integer minor units. A conversion is exact until its one rounding, half up (away from zero, so a credit converts to
// the negative of the same debit); a staff-chosen price rounding (x.99) may follow, for converted prices only.
import { InvalidInput } from './invalid-input.ts';

/** Digits a rate may have before and after its point (FOSSBilling keeps 6 decimals; small rates need more). */
export const RATE_MAX_INTEGER_DIGITS = 9;
export const RATE_MAX_DECIMALS = 12;

const RATE_TEXT = /^(\d+)(?:\.(\d+))?$/;

/**
 * A positive rate as its canonical decimal string ("0.920" → "0.92", 1 → "1"). 422 naming `param` for anything else:
 * zero, negative, not a number, exponents, more than RATE_MAX_INTEGER_DIGITS or RATE_MAX_DECIMALS digits.
 */
export function parseExchangeRate(value: unknown, param: string): string {
  let text: string;
  if (typeof value === 'number' && Number.isFinite(value)) text = String(value);
  else if (typeof value === 'string') text = value.trim();
  else throw new InvalidInput(param, 'must be a positive decimal number such as "0.92"');
  if (text.startsWith('-')) throw new InvalidInput(param, 'must be greater than 0');
  const match = RATE_TEXT.exec(text);
  if (match === null) throw new InvalidInput(param, 'must be a positive decimal number such as "0.92"');
  const whole = match[1]!.replace(/^0+(?=\d)/, '');
  const fraction = (match[2] ?? '').replace(/0+$/, '');
  if (whole.length > RATE_MAX_INTEGER_DIGITS) throw new InvalidInput(param, `must have at most ${RATE_MAX_INTEGER_DIGITS} digits before the point`);
  if (fraction.length > RATE_MAX_DECIMALS) throw new InvalidInput(param, `must have at most ${RATE_MAX_DECIMALS} decimals`);
  if (/^0*$/.test(whole + fraction)) throw new InvalidInput(param, 'must be greater than 0');
  return fraction === '' ? whole : `${whole}.${fraction}`;
}

/** A canonical rate as numerator / 10^scale. */
function rateParts(rate: string): { numerator: bigint; scale: number } {
  const [whole, fraction = ''] = rate.split('.');
  return { numerator: BigInt(`${whole}${fraction}`), scale: fraction.length };
}

/** `numerator / denominator` rounded half away from zero; denominator > 0. */
function divideHalfUp(numerator: bigint, denominator: bigint): bigint {
  const magnitude = numerator < 0n ? -numerator : numerator;
  const rounded = (magnitude * 2n + denominator) / (2n * denominator);
  return numerator < 0n ? -rounded : rounded;
}

/**
 * `amount` minor units of a currency with `fromUnit` decimals, times `rate`, in minor units of a currency with `toUnit`
 * decimals, rounded half up once: convertMinor(1000, "0.92", 2, 2) = 920; (1999, "151.37", 2, 0) = 3026 (¥).
 */
export function convertMinor(amount: number, rate: string, fromUnit: number, toUnit: number): number {
  if (!Number.isSafeInteger(amount)) throw new Error(`Not an amount in minor units: ${amount}`);
  const { numerator, scale } = rateParts(parseExchangeRate(rate, 'rate'));
  const shift = toUnit - fromUnit - scale;
  const product = BigInt(amount) * numerator;
  const result = shift >= 0 ? product * 10n ** BigInt(shift) : divideHalfUp(product, 10n ** BigInt(-shift));
  const converted = Number(result);
  if (!Number.isSafeInteger(converted)) throw new InvalidInput('amount', 'is too large to convert');
  return converted;
}

/**
 * The inverse of convertMinor: `amount` minor units of a currency with `fromUnit` decimals, divided by `rate`, in minor
 * units of a currency with `toUnit` decimals, rounded half up once. A report turns an invoice's amount back into the
 * default currency with the rate stored on the invoice: convertMinorBack(920, "0.92", 2, 2) = 1000.
 */
export function convertMinorBack(amount: number, rate: string, fromUnit: number, toUnit: number): number {
  if (!Number.isSafeInteger(amount)) throw new Error(`Not an amount in minor units: ${amount}`);
  const { numerator, scale } = rateParts(parseExchangeRate(rate, 'rate'));
  // amount / 10^from ÷ (numerator / 10^scale) × 10^to = amount × 10^(to + scale − from) / numerator.
  const shift = toUnit + scale - fromUnit;
  const top = shift >= 0 ? BigInt(amount) * 10n ** BigInt(shift) : BigInt(amount);
  const bottom = shift >= 0 ? numerator : numerator * 10n ** BigInt(-shift);
  const converted = Number(divideHalfUp(top, bottom));
  if (!Number.isSafeInteger(converted)) throw new InvalidInput('amount', 'is too large to convert');
  return converted;
}

/**
 * A staff-chosen ending for converted prices, in minor units of the target currency: the price becomes the smallest
 * amount at or above it that is `ending` more than a multiple of `step`. {step: 100, ending: 99} → x.99 (12.01 and
 * 12.99 → 12.99, 13.00 → 13.99); {step: 5, ending: 0} → to 0.05; {step: 100, ending: 80} in yen → ¥1,980.
 */
export interface PriceRounding {
  step: number;
  ending: number;
}

/** Checks a rounding rule; 422 naming `param` when the step is not positive or the ending is not below it. */
export function checkPriceRounding(rule: PriceRounding, param: string): PriceRounding {
  if (!Number.isSafeInteger(rule.step) || rule.step <= 0) throw new InvalidInput(`${param}.step`, 'must be greater than 0');
  if (!Number.isSafeInteger(rule.ending) || rule.ending < 0 || rule.ending >= rule.step) {
    throw new InvalidInput(`${param}.ending`, 'must be at least 0 and less than the step');
  }
  return rule;
}

/**
 * Applies a rounding rule to a price. Rounds up, never down, so a converted price never falls below what the rate
 * gives; a price of 0 stays 0 (free stays free).
 */
export function roundPrice(amount: number, rule: PriceRounding): number {
  if (!Number.isSafeInteger(amount) || amount < 0) throw new Error(`roundPrice needs a non-negative amount, got ${amount}`);
  if (amount === 0) return 0;
  const { step, ending } = checkPriceRounding(rule, 'price_rounding');
  const base = amount - ending;
  if (base <= 0) return ending;
  // Remainders of safe integers are exact, where a division would round.
  const remainder = base % step;
  const rounded = (remainder === 0 ? base : base + step - remainder) + ending;
  if (!Number.isSafeInteger(rounded)) throw new InvalidInput('amount', 'is too large to round');
  return rounded;
}

/** A price in the default currency as the price in another: converted, rounded to the minor unit, then by the rule. */
export function convertPrice(amount: number, rate: string, fromUnit: number, toUnit: number, rule: PriceRounding | null): number {
  const converted = convertMinor(amount, rate, fromUnit, toUnit);
  return rule === null ? converted : roundPrice(converted, rule);
}

/**
 * `rate / by`, both canonical rates, rounded half up to RATE_MAX_DECIMALS: the rate of a currency against a new
 * default whose rate against the old one was `by`. 422 on `param` when the result has no digit left or too many.
 */
export function divideRates(rate: string, by: string, param: string): string {
  const a = rateParts(parseExchangeRate(rate, param));
  const b = rateParts(parseExchangeRate(by, param));
  // a/10^sa ÷ b/10^sb = a·10^(sb+D−sa) / b, in units of 10^−D.
  const exponent = b.scale + RATE_MAX_DECIMALS - a.scale;
  const numerator = exponent >= 0 ? a.numerator * 10n ** BigInt(exponent) : a.numerator;
  const denominator = exponent >= 0 ? b.numerator : b.numerator * 10n ** BigInt(-exponent);
  const scaled = divideHalfUp(numerator, denominator).toString().padStart(RATE_MAX_DECIMALS + 1, '0');
  const text = `${scaled.slice(0, -RATE_MAX_DECIMALS)}.${scaled.slice(-RATE_MAX_DECIMALS)}`;
  if (/^[0.]*$/.test(text)) throw new InvalidInput(param, 'would become 0 against the new default currency');
  return parseExchangeRate(text, param);
}
