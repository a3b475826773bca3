// The optional settings create and update take, checked and turned into what is stored: an absent parameter leaves
// the stored value alone (undefined), null or "" clears it (null), anything else is checked and kept.
import { parseMoney } from '../../lib/money.ts';
import { checkPriceRounding, type PriceRounding } from '../../lib/exchange.ts';
import { errors } from '../../platform/errors.ts';
import { patternProblem } from './format.ts';

type AmountInput = string | number;

export interface CurrencySettings {
  is_rate_manual?: boolean | undefined;
  format_pattern?: string | null | undefined;
  fraction_digits?: number | '' | null | undefined;
  price_rounding?: { step: AmountInput; ending: AmountInput } | '' | null | undefined;
}

export interface CheckedSettings {
  is_rate_manual?: boolean;
  format_pattern?: string | null;
  fraction_digits?: number | null;
  rounding?: PriceRounding | null;
}

/** `minorUnit`: the currency's decimals, in which the rounding's step and ending are written. */
export function settingsOf(input: CurrencySettings, minorUnit: number): CheckedSettings {
  const checked: CheckedSettings = {};
  if (input.is_rate_manual !== undefined) checked.is_rate_manual = input.is_rate_manual;
  if (input.format_pattern !== undefined) {
    const pattern = (input.format_pattern ?? '').trim();
    const problem = pattern === '' ? null : patternProblem(pattern);
    if (problem !== null) throw errors.invalid('format_pattern', problem);
    checked.format_pattern = pattern === '' ? null : pattern;
  }
  if (input.fraction_digits !== undefined) checked.fraction_digits = input.fraction_digits === '' ? null : input.fraction_digits;
  if (input.price_rounding !== undefined) {
    const given = input.price_rounding;
    if (given === null || given === '') checked.rounding = null;
    else {
      const step = parseMoney(given.step, 'price_rounding.step', minorUnit);
      const ending = parseMoney(given.ending, 'price_rounding.ending', minorUnit);
      checked.rounding = checkPriceRounding({ step, ending }, 'price_rounding');
    }
  }
  return checked;
}
