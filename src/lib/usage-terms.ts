// The usage terms of an API key plan in words (issue 21 item 3): what a buyer reads on the plans page, in the cart,
// on the order and on the invoice line before paying — "1,000 calls included per calendar month", "then 1.00 USD per
// 100 calls", the hard limit, the rate limit, the number of keys. One function for the server (cart lines, invoice
// lines, orders) and the browser UI (which imports this file), so both say the same thing. Pure: no I/O, no imports
// of ours beyond other pure helpers.
//
// It reads a product's public config (or an order's config snapshot) leniently: the options were validated when the
// product was saved (serviceapikey/usage/usage-plan.ts, key-limits.ts); anything unreadable is left out of the words
// rather than guessed.
import { precisionOf } from './currency.ts';
import { priceMicros, PRICE_DECIMALS, type GraduatedTier, type OverageRule } from './usage-pricing.ts';

const MICROS = 10n ** BigInt(PRICE_DECIMALS);

const count = (n: number): string => n.toLocaleString('en-US');

/** What a plan counts, in words: one of it, and n of it ("1 call", "2,000 calls"; "1 token", "1,000,000 tokens"). */
interface UnitWords {
  one: string;
  many: string;
}

const CALL: UnitWords = { one: 'call', many: 'calls' };

/**
 * A meter's unit in words. The plural adds an "s" to a lower-case word ("token" → "tokens"); a unit that already ends
 * in "s", holds anything but letters ("request/s", "GB-hour") or is an abbreviation ("GB") reads the same for any number.
 */
export function unitWords(unit: string): UnitWords {
  const plain = /^[a-z]+$/.test(unit) && !unit.endsWith('s');
  return { one: unit, many: plain ? `${unit}s` : unit };
}

const amountOf = (n: number, unit: UnitWords = CALL): string => (n === 1 ? `1 ${unit.one}` : `${count(n)} ${unit.many}`);
const calls = (n: number): string => amountOf(n);

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function wholeNumber(value: unknown): number | null {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : null;
}

/** Micro-units as a decimal string with at least the currency's decimals and no trailing zeros beyond them. */
function priceText(micros: bigint, precision: number): string {
  const whole = micros / MICROS;
  let fraction = (micros % MICROS).toString().padStart(PRICE_DECIMALS, '0');
  while (fraction.length > precision && fraction.endsWith('0')) fraction = fraction.slice(0, -1);
  return fraction === '' ? whole.toString() : `${whole}.${fraction}`;
}

function validPrice(price: unknown): bigint | null {
  if (typeof price !== 'string') return null;
  try {
    return priceMicros(price);
  } catch {
    return null;
  }
}

/**
 * "0.50 USD per call"; a price below the currency's smallest unit reads per a round number of calls, so 0.001 reads
 * "1.00 USD per 1,000 calls" rather than a price no one can pay.
 */
export function perCallText(price: string, currency: string, unit: UnitWords = CALL): string | null {
  const micros = validPrice(price);
  if (micros === null) return null;
  const precision = precisionOf(currency);
  const minorStep = 10n ** BigInt(PRICE_DECIMALS - precision);
  let per = 1n;
  // The smallest power of ten whose price is whole in the currency and (past one call) at least one major unit.
  while (per < MICROS && ((micros * per) % minorStep !== 0n || (per > 1n && micros * per < MICROS))) per *= 10n;
  const amount = `${priceText(micros * per, precision)} ${currency}`;
  return per === 1n ? `${amount} per ${unit.one}` : `${amount} per ${count(Number(per))} ${unit.many}`;
}

function tierText(tier: GraduatedTier, below: number, currency: string, words: UnitWords): string | null {
  const unit = perCallText(tier.unit_price, currency, words);
  if (unit === null) return null;
  const range =
    tier.up_to === null
      ? below === 0
        ? `for every extra ${words.one}`
        : `beyond ${amountOf(below, words)} extra`
      : below === 0
        ? `for the first ${amountOf(tier.up_to, words)} extra`
        : `up to ${amountOf(tier.up_to, words)} extra`;
  const flat = tier.flat_price === undefined ? null : validPrice(tier.flat_price);
  const flatText = flat === null || flat === 0n ? '' : ` plus ${priceText(flat, precisionOf(currency))} ${currency} once the tier is reached`;
  return `${unit} ${range}${flatText}`;
}

/** The overage rule in words, starting with "then": "then 1.00 USD per 100 calls". Null when unreadable. */
export function overageText(rule: unknown, currency: string, words: UnitWords = CALL): string | null {
  if (!isObject(rule)) return null;
  const overage = rule as Partial<OverageRule> & Record<string, unknown>;
  switch (overage.mode) {
    case 'per_unit':
      return typeof overage.unit_price === 'string' ? withThen(perCallText(overage.unit_price, currency, words)) : null;
    case 'package': {
      const size = wholeNumber(overage.package_size);
      const price = validPrice(overage.package_price);
      if (size === null || size < 1 || price === null) return null;
      return `then ${priceText(price, precisionOf(currency))} ${currency} per ${size === 1 ? words.one : amountOf(size, words)}`;
    }
    case 'graduated':
    case 'volume': {
      if (!Array.isArray(overage.tiers) || overage.tiers.length === 0) return null;
      const parts: string[] = [];
      let below = 0;
      for (const tier of overage.tiers as unknown[]) {
        if (!isObject(tier)) return null;
        const text = tierText(tier as unknown as GraduatedTier, below, currency, words);
        if (text === null) return null;
        parts.push(text);
        const upTo = wholeNumber(tier.up_to);
        if (upTo === null) break;
        below = upTo;
      }
      // Volume: every extra unit is priced at the tier the whole extra quantity reaches.
      return overage.mode === 'volume' ? `then, all extra ${words.many} at the tier their number reaches: ${parts.join(', ')}` : `then ${parts.join(', ')}`;
    }
    default:
      return null;
  }
}

const withThen = (text: string | null): string | null => (text === null ? null : `then ${text}`);

function windowText(seconds: number): string {
  const named: Record<number, string> = { 1: 'second', 60: 'minute', 3600: 'hour', 86_400: 'day' };
  return named[seconds] !== undefined ? `per ${named[seconds]}` : `per ${count(seconds)} seconds`;
}

/**
 * The terms of a plan, one phrase each, in the order a buyer reads them: included uses (with the usage period),
 * overage, hard limit, rate limit, keys. Empty for a plan that meters nothing (a custom product, or an API key plan
 * with no quota, no limit and one key).
 */
export function usageTerms(config: Record<string, unknown> | null | undefined, currency: string): string[] {
  if (!isObject(config)) return [];
  const custom = isObject(config.custom) ? config.custom : {};
  // As the key applies them (usage-plan.ts planOf): `included` falls back to the `monthlyLimit` custom parameter.
  const included = wholeNumber(config.included) ?? wholeNumber(custom.monthlyLimit);
  const period = config.usage_period === 'billing_period' ? 'per billing period' : 'per calendar month';
  const terms: string[] = [];
  if (included !== null) terms.push(`${calls(included)} included ${period}`);
  const overage = included === null ? null : overageText(config.overage, currency);
  if (overage !== null) terms.push(overage);
  else if (included !== null && config.enforce_limit === true) terms.push('no calls beyond them');
  const hardLimit = wholeNumber(config.hard_limit);
  if (hardLimit !== null) terms.push(`hard limit ${calls(hardLimit)} ${period}`);
  const rate = isObject(config.rate_limit) ? config.rate_limit : null;
  const rateLimit = rate === null ? null : wholeNumber(rate.limit);
  const window = rate === null ? null : wholeNumber(rate.window_seconds);
  if (rateLimit !== null && window !== null && window > 0) terms.push(`at most ${calls(rateLimit)} ${windowText(window)}`);
  const keys = wholeNumber(config.max_keys);
  if (keys !== null && keys > 1) terms.push(`up to ${count(keys)} API keys`);
  if (Array.isArray(config.meters)) for (const meter of config.meters as unknown[]) terms.push(...meterTerms(meter, period, currency));
  return terms;
}

/**
 * One meter's terms (issue 23), named by the meter: "Tokens: 1,000,000 tokens included per calendar month", "Tokens:
 * then 2.00 USD per 1,000,000 tokens …", "Requests: hard limit 50,000 requests per calendar month". A meter with
 * nothing included, no price and no limit is still named, so the buyer knows it is measured.
 */
function meterTerms(meter: unknown, period: string, currency: string): string[] {
  if (!isObject(meter) || typeof meter.name !== 'string' || typeof meter.unit !== 'string') return [];
  const name = meter.name;
  const words = unitWords(meter.unit);
  const terms: string[] = [];
  const included = wholeNumber(meter.included);
  if (included !== null) terms.push(`${amountOf(included, words)} included ${period}`);
  const overage = included === null ? null : overageText(meter.overage, currency, words);
  if (overage !== null) terms.push(overage);
  const hardLimit = wholeNumber(meter.hard_limit);
  if (hardLimit !== null) terms.push(`hard limit ${amountOf(hardLimit, words)} ${period}`);
  if (terms.length === 0) terms.push(`${words.many} measured ${period}`);
  return terms.map((term) => `${name}: ${term}`);
}

/** The terms as one line ("1,000 calls included per billing period; then 1.00 USD per 100 calls"), or null. */
export function usageTermsText(config: Record<string, unknown> | null | undefined, currency: string): string | null {
  const terms = usageTerms(config, currency);
  return terms.length === 0 ? null : terms.join('; ');
}
