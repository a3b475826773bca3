// A product's prices in other currencies (issue 26 item 6). Staff may set a price per currency in `pricing.prices`
// ({"EUR": {once: {price, setup}, recurrent: {"1M": {price, setup}}}}); where they set none, the default price is
// converted at the currency's rate, rounded to its minor unit and then to its price rounding (currency/selling.ts).
// Which periods are offered, and whether, stays the default pricing's: a currency only changes what they cost.
import { errors } from '../../platform/errors.ts';
import { formatMoney, parseMoney } from '../../lib/money.ts';
import { priceIn, type SaleCurrency } from '../currency/selling.ts';
import { quote, type CurrencyPrice, type CurrencyPrices, type Pricing, type Quote } from './pricing.ts';

export interface CurrencyPriceView {
  once: { price: string; setup: string } | null;
  recurrent: Record<string, { price: string; setup: string }>;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const MAX_CURRENCIES = 50;

/**
 * Validates `pricing.prices` against the pricing it goes with: each code one of the instance's currencies other than
 * the default (`describe` answers its minor unit, or a 422), each period one the pricing has, amounts in that
 * currency's decimals. The map given replaces the stored one; `{}` removes every own price.
 */
export async function parseCurrencyPrices(
  input: unknown,
  pricing: Pricing,
  describe: (code: string, param: string) => Promise<Pick<SaleCurrency, 'code' | 'minorUnit' | 'isDefault'>>,
): Promise<CurrencyPrices> {
  if (!isObject(input)) throw errors.invalid('pricing.prices', 'must be an object of currency code → prices');
  const entries = Object.entries(input);
  if (entries.length > MAX_CURRENCIES) throw errors.invalid('pricing.prices', `must have at most ${MAX_CURRENCIES} currencies`);
  const out: CurrencyPrices = {};
  for (const [given, entry] of entries) {
    const param = `pricing.prices.${given}`;
    const currency = await describe(given, param);
    if (currency.isDefault) throw errors.invalid(param, `is the default currency: its prices are pricing.once and pricing.recurrent`);
    if (!isObject(entry)) throw errors.invalid(param, 'must be an object {once?, recurrent?}');
    const amount = (value: unknown, name: string): number => (value === undefined || value === null ? 0 : parseMoney(value, name, currency.minorUnit));
    const price: CurrencyPrice = {};
    if (entry.once !== undefined && entry.once !== null) {
      if (!isObject(entry.once)) throw errors.invalid(`${param}.once`, 'must be an object {price, setup}');
      price.once = { price: amount(entry.once.price, `${param}.once.price`), setup: amount(entry.once.setup, `${param}.once.setup`) };
    }
    if (entry.recurrent !== undefined && entry.recurrent !== null) {
      if (!isObject(entry.recurrent)) throw errors.invalid(`${param}.recurrent`, 'must be an object of period code → {price, setup}');
      price.recurrent = {};
      for (const [period, value] of Object.entries(entry.recurrent)) {
        const name = `${param}.recurrent.${period}`;
        if (!Object.hasOwn(pricing.recurrent, period)) throw errors.invalid(name, 'is not a period of this product (set it in pricing.recurrent first)');
        if (!isObject(value)) throw errors.invalid(name, 'must be an object {price, setup}');
        price.recurrent[period] = { price: amount(value.price, `${name}.price`), setup: amount(value.setup, `${name}.setup`) };
      }
    }
    out[currency.code] = price;
  }
  return out;
}

/** The stored own prices as decimal strings, per currency. */
export function viewCurrencyPrices(prices: CurrencyPrices | undefined, minorUnitOf: (code: string) => number): Record<string, CurrencyPriceView> {
  const out: Record<string, CurrencyPriceView> = {};
  for (const [code, price] of Object.entries(prices ?? {})) {
    const unit = minorUnitOf(code);
    const pair = (p: { price: number; setup: number }) => ({ price: formatMoney(p.price, unit), setup: formatMoney(p.setup, unit) });
    out[code] = { once: price.once === undefined ? null : pair(price.once), recurrent: Object.fromEntries(Object.entries(price.recurrent ?? {}).map(([period, p]) => [period, pair(p)])) };
  }
  return out;
}

/** One price pair in `sale`'s currency: the one staff set for it, else the default one converted. */
function pairIn(own: { price: number; setup: number } | undefined, base: { price: number; setup: number }, sale: SaleCurrency): { price: number; setup: number } {
  if (sale.isDefault) return base;
  return own ?? { price: priceIn(base.price, sale), setup: priceIn(base.setup, sale) };
}

/** quote() in `sale`'s currency: the same period checks, the currency's own price or the converted one. */
export function quoteIn(pricing: Pricing, period: string | undefined | null, sale: SaleCurrency, options: { allowDisabled?: boolean } = {}): Quote {
  const base = quote(pricing, period, options);
  if (sale.isDefault || pricing.type === 'free') return base;
  const own = pricing.prices?.[sale.code];
  const ownPair = base.period === null ? own?.once : own?.recurrent?.[base.period];
  return { period: base.period, ...pairIn(ownPair, base, sale) };
}

/** A pricing as buyers in `sale`'s currency see it (the catalogue): every amount in that currency. */
export function pricingIn(pricing: Pricing, sale: SaleCurrency): Pricing {
  if (sale.isDefault) return pricing;
  const own = pricing.prices?.[sale.code];
  const recurrent: Pricing['recurrent'] = {};
  for (const [period, entry] of Object.entries(pricing.recurrent)) recurrent[period] = { ...pairIn(own?.recurrent?.[period], entry, sale), enabled: entry.enabled };
  return { type: pricing.type, once: pairIn(own?.once, pricing.once, sale), recurrent };
}
