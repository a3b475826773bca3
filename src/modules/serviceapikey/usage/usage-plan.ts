// The usage options of an apikey product (CONTRACT §12): the usage period, the included uses, the overage price, the
// hard limit, and the plan's own meters (issue 23, meters-config.ts). Validated when the product is saved (422 naming the field), copied into each key's options when it
// is issued (and when its order changes plan), and read back from there by counting, get_info, the close job and the
// thresholds.
import { errors } from '../../../platform/errors.ts';
import type { OverageRule } from '../../../lib/usage-pricing.ts';
import { monthlyLimitOf, type CustomParams } from '../options.ts';
import { normalizeMeters, type MeterOptions } from './meters-config.ts';
import { normalizePrepaid, prepaidFloorMicros } from './prepaid-config.ts';
import { count, normalizeOverage } from './overage-rules.ts';
import type { UsageAnchor, UsagePeriodKind } from './usage-period.ts';

/** The usage options as stored in a product's config and a key's options; absent ones take their defaults. */
export interface UsageOptions {
  usage_period?: UsagePeriodKind;
  included?: number | null;
  overage?: OverageRule | null;
  hard_limit?: number | null;
  /** The plan's own meters beside the built-in `calls` one (issue 23; meters-config.ts); absent when it has none. */
  meters?: MeterOptions[];
  /** Prepaid (issue 24 item 2): usage beyond `included` is drawn from the client's balance, not invoiced (prepaid-config.ts). */
  prepaid?: true;
  /** Prepaid only: how far below zero the balance may go before check refuses (a decimal amount, e.g. "5.00"). */
  allow_negative?: string;
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
  /** Prepaid plans: how far below zero the balance may go, in micro-units of the currency (prepaid-config.ts); null: not prepaid. */
  prepaidFloorMicros?: bigint | null;
}

export const USAGE_OPTION_NAMES: readonly string[] = ['usage_period', 'included', 'overage', 'hard_limit', 'meters', 'prepaid', 'allow_negative'];

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
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
  const meters = normalizeMeters(config.meters);
  if (meters !== undefined) out.meters = meters;
  return { ...out, ...normalizePrepaid(config) };
}

/** A key's `usage_anchor` option, or undefined when it has none (or an unreadable one). */
function anchorOption(value: unknown): { start: string; end: string } | undefined {
  if (!isPlainObject(value) || typeof value.start !== 'string' || typeof value.end !== 'string') return undefined;
  return Number.isFinite(Date.parse(value.start)) && Number.isFinite(Date.parse(value.end)) ? { start: value.start, end: value.end } : undefined;
}

/** The usage options a key was issued with, read leniently from its stored options (validated when saved). */
export function usageOptionsOf(options: Record<string, unknown>): UsageOptions {
  let out: UsageOptions;
  // The meters are read apart from the rest: a meter the current rules would refuse (saved under older ones) drops
  // the meters alone, never the built-in meter's included, overage and hard limit.
  try {
    out = normalizeUsageOptions({ ...options, meters: undefined });
  } catch {
    out = {};
  }
  try {
    const meters = normalizeMeters(options.meters);
    if (meters !== undefined) out = { ...out, meters };
  } catch {
    // Unreadable meters: the key has none.
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
    prepaidFloorMicros: prepaidFloorMicros(options),
  };
}
