// The usage options of an apikey product (CONTRACT §12): the usage period, the included uses, the overage price and
// the hard limit. Validated when the product is saved (422 naming the field), copied into each key's options when it
// is issued (and when its order changes plan), and read back from there by counting, get_info, the close job and the
// thresholds.
import { errors } from '../../../platform/errors.ts';
import type { GraduatedTier, OverageRule } from '../../../lib/usage-pricing.ts';
import { monthlyLimitOf, type CustomParams } from '../options.ts';
import type { UsageAnchor, UsagePeriodKind } from './usage-period.ts';

/** The usage options as stored in a product's config and a key's options; absent ones take their defaults. */
export interface UsageOptions {
  usage_period?: UsagePeriodKind;
  included?: number | null;
  overage?: OverageRule | null;
  hard_limit?: number | null;
  /** Keys only, never a product: the open billing period kept across a move of the order's expiry (period-move.ts). */
  usage_anchor?: { start: string; end: string };
}

/** The options as a key applies them, defaults resolved. */
export interface UsagePlan {
  period: UsagePeriodKind;
  /** Uses included per period; null = unlimited. */
  included: number | null;
  overage: OverageRule | null;
  hardLimit: number | null;
  /** The open billing period kept across a move of `expires_at`, or null (usage-period.ts). */
  anchor?: UsageAnchor | null;
}

export const USAGE_OPTION_NAMES: readonly string[] = ['usage_period', 'included', 'overage', 'hard_limit'];
const MAX_USES = 1_000_000_000_000;
const MAX_TIERS = 20;
const PRICE_TEXT = /^\d{1,12}(?:\.\d+)?$/;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A whole number of uses from `min` to 10^12 (or its digits as a string), else a 422 naming `param`. */
export function count(value: unknown, param: string, min: number): number {
  const number = typeof value === 'string' && /^\s*\d+\s*$/.test(value) ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isSafeInteger(number) || number < min || number > MAX_USES) {
    throw errors.invalid(param, `must be an integer from ${min} to ${MAX_USES}`);
  }
  return number;
}

/** A price: a decimal string (or number) with at most 6 decimals, not negative; returned as its canonical string. */
function price(value: unknown, param: string): string {
  let text: string;
  if (typeof value === 'number' && Number.isFinite(value)) text = String(value);
  else if (typeof value === 'string') text = value.trim();
  else throw errors.invalid(param, 'must be a decimal string such as "0.01"');
  if (text.startsWith('-')) throw errors.invalid(param, 'must not be negative');
  if (!PRICE_TEXT.test(text)) throw errors.invalid(param, 'must be a decimal string such as "0.01"');
  const [whole = '0', fraction = ''] = text.split('.');
  const trimmed = fraction.replace(/0+$/, '');
  if (trimmed.length > 6) throw errors.invalid(param, 'must have at most 6 decimals');
  const integer = whole.replace(/^0+(?=\d)/, '');
  return trimmed === '' ? integer : `${integer}.${trimmed}`;
}

/** Graduated or volume tiers: ascending `up_to`s, the last one null (it prices every unit beyond the others). */
function tiersOf(value: Record<string, unknown>, param: string): GraduatedTier[] {
  const tiers = value.tiers;
  if (!Array.isArray(tiers) || tiers.length === 0) throw errors.invalid(`${param}.tiers`, 'must be a non-empty list of tiers');
  if (tiers.length > MAX_TIERS) throw errors.invalid(`${param}.tiers`, `must have at most ${MAX_TIERS} tiers`);
  const out: GraduatedTier[] = [];
  let previous = 0;
  tiers.forEach((tier: unknown, index) => {
    const at = `${param}.tiers[${index}]`;
    if (!isPlainObject(tier)) throw errors.invalid(at, 'must be an object {up_to, unit_price, flat_price?}');
    const last = index === tiers.length - 1;
    let upTo: number | null = null;
    if (tier.up_to === null || tier.up_to === undefined || tier.up_to === '') {
      if (!last) throw errors.invalid(`${at}.up_to`, 'may be null only in the last tier');
    } else {
      upTo = count(tier.up_to, `${at}.up_to`, 1);
      if (upTo <= previous) throw errors.invalid(`${at}.up_to`, `must be greater than the previous tier's up_to (${previous})`);
      if (last) throw errors.invalid(`${at}.up_to`, 'must be null in the last tier (it prices every use beyond the others)');
      previous = upTo;
    }
    const normalized: GraduatedTier = { up_to: upTo, unit_price: price(tier.unit_price, `${at}.unit_price`) };
    if (tier.flat_price !== undefined && tier.flat_price !== null && tier.flat_price !== '') normalized.flat_price = price(tier.flat_price, `${at}.flat_price`);
    out.push(normalized);
  });
  return out;
}

/**
 * An overage rule (CONTRACT §12). `volume` is offered only where the caller says so: a meter's overage accepts it
 * (issue 23), the top-level `calls` overage keeps §12's three modes, whose words (lib/usage-terms.ts) show them.
 */
export function normalizeOverage(value: unknown, param: string, modes: { volume: boolean } = { volume: false }): OverageRule {
  if (!isPlainObject(value)) throw errors.invalid(param, 'must be an object with a mode');
  switch (value.mode) {
    case 'per_unit':
      return { mode: 'per_unit', unit_price: price(value.unit_price, `${param}.unit_price`) };
    case 'package':
      return {
        mode: 'package',
        package_size: count(value.package_size, `${param}.package_size`, 1),
        package_price: price(value.package_price, `${param}.package_price`),
      };
    case 'graduated':
      return { mode: 'graduated', tiers: tiersOf(value, param) };
    case 'volume':
      if (modes.volume) return { mode: 'volume', tiers: tiersOf(value, param) };
      throw errors.invalid(`${param}.mode`, 'must be per_unit, package or graduated (volume is offered on meters)');
    default:
      throw errors.invalid(`${param}.mode`, modes.volume ? 'must be per_unit, package, graduated or volume' : 'must be per_unit, package or graduated');
  }
}

const blank = (value: unknown): boolean => value === undefined || value === null || value === '';

/**
 * Validates the usage options of a product's config (422 naming `config.<option>…`); returns only the options that
 * are set, so a product that uses none stores none.
 */
export function normalizeUsageOptions(config: Record<string, unknown>): UsageOptions {
  const out: UsageOptions = {};
  if (!blank(config.usage_period)) {
    if (config.usage_period !== 'calendar_month' && config.usage_period !== 'billing_period') {
      throw errors.invalid('config.usage_period', 'must be calendar_month or billing_period');
    }
    out.usage_period = config.usage_period;
  }
  if (!blank(config.included)) out.included = count(config.included, 'config.included', 0);
  if (!blank(config.overage)) out.overage = normalizeOverage(config.overage, 'config.overage');
  const hardLimit = blank(config.hard_limit) ? null : count(config.hard_limit, 'config.hard_limit', 1);
  if (hardLimit !== null) out.hard_limit = hardLimit;
  if (hardLimit !== null && out.included !== undefined && out.included !== null && hardLimit < out.included) {
    throw errors.invalid('config.hard_limit', 'must not be below included');
  }
  return out;
}

/** A key's `usage_anchor` option, or undefined when it has none (or an unreadable one). */
function anchorOption(value: unknown): { start: string; end: string } | undefined {
  if (!isPlainObject(value) || typeof value.start !== 'string' || typeof value.end !== 'string') return undefined;
  return Number.isFinite(Date.parse(value.start)) && Number.isFinite(Date.parse(value.end)) ? { start: value.start, end: value.end } : undefined;
}

/** The usage options a key was issued with, read leniently from its stored options (validated when saved). */
export function usageOptionsOf(options: Record<string, unknown>): UsageOptions {
  let out: UsageOptions;
  try {
    out = normalizeUsageOptions(options);
  } catch {
    out = {};
  }
  const anchor = anchorOption(options.usage_anchor);
  return anchor === undefined ? out : { ...out, usage_anchor: anchor };
}

/** The plan a key applies: its usage options with the defaults (included: the `monthlyLimit` parameter). */
export function planOf(options: UsageOptions, custom: CustomParams): UsagePlan {
  return {
    period: options.usage_period ?? 'calendar_month',
    included: options.included ?? monthlyLimitOf(custom),
    overage: options.overage ?? null,
    hardLimit: options.hard_limit ?? null,
    anchor: options.usage_anchor === undefined ? null : { startMs: Date.parse(options.usage_anchor.start), endMs: Date.parse(options.usage_anchor.end) },
  };
}
