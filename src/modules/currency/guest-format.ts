// guest/currency/format: FOSSBilling's parameters (price, code, convert, without_currency) on exact amounts. With
// `convert` the price is taken in the default currency and converted as a product price is (the rate, rounded half up
// once to the minor unit, then the currency's price rounding), so what a page shows is what checkout will charge.
import { convertMinor, convertPrice } from '../../lib/exchange.ts';
import { InvalidInput } from '../../lib/invalid-input.ts';
import { parseMoney } from '../../lib/money.ts';
import { formatPrice } from './format.ts';
import { roundingOfRecord } from './records.ts';
import type { CurrencyService } from './service.ts';

export interface FormatParams {
  code?: string | undefined;
  price?: string | number | undefined;
  convert?: boolean | undefined;
  without_currency?: boolean | undefined;
}

/** A signed decimal amount in minor units of a currency with `unit` decimals. */
function signedAmount(value: string | number, unit: number): number {
  const text = typeof value === 'number' ? String(value) : value.trim();
  if (text.startsWith('-')) return -parseMoney(text.slice(1), 'price', unit);
  return parseMoney(text, 'price', unit);
}

export async function formatGuestPrice(currencies: Pick<CurrencyService, 'get' | 'getDefault'>, params: FormatParams): Promise<string> {
  const target = params.code === undefined || params.code === '' ? await currencies.getDefault() : await currencies.get(params.code);
  const convert = params.convert ?? true;
  const price = params.price ?? 0;
  if (typeof price === 'number' && !Number.isFinite(price)) throw new InvalidInput('price', 'must be a decimal amount');
  let minor: number;
  if (!convert || target.default) {
    minor = signedAmount(price, target.minor_unit);
  } else {
    const base = await currencies.getDefault();
    const amount = signedAmount(price, base.minor_unit);
    // Price rounding is for prices: a negative amount (a credit) is converted at the rate alone.
    minor =
      amount >= 0
        ? convertPrice(amount, target.conversion_rate, base.minor_unit, target.minor_unit, roundingOfRecord(target))
        : convertMinor(amount, target.conversion_rate, base.minor_unit, target.minor_unit);
  }
  return formatPrice(minor, target, params.without_currency ?? false);
}
