// Product pricing: free, once (price + setup fee) or recurrent (per period code: price, setup fee, enabled). Stored as
// JSON with integer minor units; shown with decimal strings.
import { errors } from '../../platform/errors.ts';
import type { Money } from '../../lib/money.ts';
import { parsePeriod } from '../../lib/periods.ts';

export type PricingType = 'free' | 'once' | 'recurrent';

export interface PeriodPrice {
  price: number;
  setup: number;
  enabled: boolean;
}

/** Prices staff set in a currency other than the default (issue 26; product/currency-prices.ts reads them). */
export interface CurrencyPrice {
  once?: { price: number; setup: number };
  recurrent?: Record<string, { price: number; setup: number }>;
}

/** Currency code → the prices staff set in it. */
export type CurrencyPrices = Record<string, CurrencyPrice>;

export interface Pricing {
  type: PricingType;
  once: { price: number; setup: number };
  recurrent: Record<string, PeriodPrice>;
  /** Own prices in other currencies; a currency without one converts the default price. */
  prices?: CurrencyPrices;
}

export const FREE_PRICING: Pricing = { type: 'free', once: { price: 0, setup: 0 }, recurrent: {} };

const MAX_PERIODS = 32;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function parseFlag(value: unknown, param: string): boolean {
  if (typeof value === 'boolean') return value;
  if (value === 1 || value === '1' || value === 'true' || value === 'on') return true;
  if (value === 0 || value === '0' || value === 'false' || value === 'off' || value === '') return false;
  throw errors.invalid(param, 'must be a boolean');
}

function amount(value: unknown, param: string, money: Money): number {
  return value === undefined || value === null ? 0 : money.parse(value, param);
}

/** Validates a `pricing` parameter; parts left out keep their `current` value. */
export function parsePricing(input: unknown, current: Pricing, money: Money): Pricing {
  if (!isObject(input)) throw errors.invalid('pricing', 'must be an object');
  // `prices` (other currencies) is read by parseCurrencyPrices, which needs the instance's currencies.
  const out: Pricing = { type: current.type, once: { ...current.once }, recurrent: { ...current.recurrent }, ...(current.prices !== undefined && { prices: current.prices }) };
  if (input.type !== undefined) {
    if (input.type !== 'free' && input.type !== 'once' && input.type !== 'recurrent') {
      throw errors.invalid('pricing.type', 'must be free, once or recurrent');
    }
    out.type = input.type;
  }
  if (input.once !== undefined) {
    if (!isObject(input.once)) throw errors.invalid('pricing.once', 'must be an object');
    out.once = {
      price: amount(input.once.price, 'pricing.once.price', money),
      setup: amount(input.once.setup, 'pricing.once.setup', money),
    };
  }
  if (input.recurrent !== undefined) {
    if (!isObject(input.recurrent)) throw errors.invalid('pricing.recurrent', 'must be an object of period code → price');
    const entries = Object.entries(input.recurrent);
    if (entries.length > MAX_PERIODS) throw errors.invalid('pricing.recurrent', `must have at most ${MAX_PERIODS} periods`);
    out.recurrent = {};
    for (const [code, entry] of entries) {
      const param = `pricing.recurrent.${code}`;
      if (parsePeriod(code) === null) throw errors.invalid(param, 'is not a period code (1-90D, 1-52W, 1-24M, 1-5Y)');
      if (!isObject(entry)) throw errors.invalid(param, 'must be an object {price, setup, enabled}');
      out.recurrent[code] = {
        price: amount(entry.price, `${param}.price`, money),
        setup: amount(entry.setup, `${param}.setup`, money),
        enabled: entry.enabled === undefined ? true : parseFlag(entry.enabled, `${param}.enabled`),
      };
    }
  }
  return out;
}

export function readPricing(json: string): Pricing {
  const parsed = JSON.parse(json) as Partial<Pricing>;
  return { type: parsed.type ?? 'free', once: parsed.once ?? { price: 0, setup: 0 }, recurrent: parsed.recurrent ?? {}, ...(parsed.prices !== undefined && { prices: parsed.prices }) };
}

export interface PricingView {
  type: PricingType;
  once: { price: string; setup: string };
  recurrent: Record<string, { price: string; setup: string; enabled: boolean }>;
}

export function viewPricing(pricing: Pricing, money: Money, onlyEnabled = false): PricingView {
  const recurrent: PricingView['recurrent'] = {};
  for (const [code, entry] of Object.entries(pricing.recurrent)) {
    if (onlyEnabled && !entry.enabled) continue;
    recurrent[code] = { price: money.format(entry.price), setup: money.format(entry.setup), enabled: entry.enabled };
  }
  return { type: pricing.type, once: { price: money.format(pricing.once.price), setup: money.format(pricing.once.setup) }, recurrent };
}

export interface Quote {
  /** Null unless the pricing is recurrent. */
  period: string | null;
  price: number;
  setup: number;
}

/**
 * The price of one unit for `period`. Recurrent pricing needs a period the product offers (and, unless staff
 * chose it, has enabled); other pricing ignores the period.
 */
export function quote(pricing: Pricing, period: string | undefined | null, { allowDisabled = false } = {}): Quote {
  switch (pricing.type) {
    case 'free':
      return { period: null, price: 0, setup: 0 };
    case 'once':
      return { period: null, price: pricing.once.price, setup: pricing.once.setup };
    default: {
      if (period === undefined || period === null || period === '') throw errors.invalid('period', 'is required for a recurrent product');
      if (parsePeriod(period) === null) throw errors.invalid('period', 'is not a period code');
      const entry = Object.hasOwn(pricing.recurrent, period) ? pricing.recurrent[period] : undefined;
      if (entry === undefined || (!entry.enabled && !allowDisabled)) throw errors.invalid('period', 'is not offered by this product');
      return { period, price: entry.price, setup: entry.setup };
    }
  }
}
