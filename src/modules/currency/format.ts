// Showing an amount as a price (guest/currency/format): CLDR's English pattern through Intl ("$1,234.50", "¥1,235"),
// or the currency's own `format_pattern` ("{amount} €") around the bare number. Intl is handed the exact decimal
// string, never a float, so what is shown is what was counted.
import { formatMoney } from '../../lib/money.ts';
import type { CurrencyRecord } from './records.ts';

export const AMOUNT_PLACEHOLDER = '{amount}';

/** `minor` units of the currency as text; `withoutCurrency` gives the number alone (grouped, with its decimals). */
export function formatPrice(minor: number, currency: CurrencyRecord, withoutCurrency: boolean): string {
  const digits = currency.fraction_digits ?? currency.minor_unit;
  const exact = formatMoney(minor, currency.minor_unit);
  const number = (style: 'decimal' | 'currency'): string =>
    new Intl.NumberFormat('en', {
      style,
      ...(style === 'currency' && { currency: currency.code }),
      minimumFractionDigits: digits,
      maximumFractionDigits: digits,
      roundingMode: 'halfExpand',
    }).format(exact as unknown as number); // Intl.NumberFormat v3 reads a decimal string exactly
  if (withoutCurrency) return number('decimal');
  if (currency.format_pattern !== null) return currency.format_pattern.replace(AMOUNT_PLACEHOLDER, number('decimal'));
  return number('currency');
}

/** A format pattern as stored: trimmed, null when blank; 422 text (for `format_pattern`) when it cannot be used. */
export function patternProblem(pattern: string): string | null {
  // UTF-16 units: never fewer than characters, so the column (100 characters) always holds it.
  if (pattern.length > 100) return 'must be at most 100 characters';
  if (pattern.split(AMOUNT_PLACEHOLDER).length !== 2) return 'must contain exactly one {amount} placeholder';
  // eslint-disable-next-line no-control-regex -- control characters are what this refuses
  if (/[\u0000-\u001f\u007f]/.test(pattern)) return 'must be a single line of plain text';
  return null;
}
