// The per-order key options of CONTRACT §12 that this module enforces itself: `rate_limit` ({limit, window_seconds}
// per key, shared by the order's keys) and `max_keys` (keys an order may hold). Validated when a product is saved,
// copied into each key's stored options at issue, read back leniently on the hot path.
import { errors } from '../../platform/errors.ts';

export interface KeyRateLimit {
  limit: number;
  window_seconds: number;
}

export interface KeyLimits {
  rate_limit: KeyRateLimit | null;
  max_keys: number;
}

export const DEFAULT_MAX_KEYS = 1;
export const MAX_KEYS_CAP = 100;
const RATE_LIMIT_MAX = 1_000_000_000;
const WINDOW_MAX_SECONDS = 86_400;

function integer(value: unknown, param: string, min: number, max: number): number {
  const number = typeof value === 'string' && /^\s*\d+\s*$/.test(value) ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isInteger(number) || number < min || number > max) {
    throw errors.invalid(param, `must be an integer from ${min} to ${max}`);
  }
  return number;
}

/** Validates `rate_limit` and `max_keys` of a product config; 422s name `config.rate_limit.limit` etc. */
export function normalizeKeyLimits(config: Record<string, unknown>): KeyLimits {
  const raw = config.rate_limit;
  let rateLimit: KeyRateLimit | null = null;
  if (raw !== undefined && raw !== null && raw !== '') {
    if (typeof raw !== 'object' || Array.isArray(raw)) throw errors.invalid('config.rate_limit', 'must be an object {limit, window_seconds} or null');
    const { limit, window_seconds: windowSeconds } = raw as Record<string, unknown>;
    rateLimit = {
      limit: integer(limit, 'config.rate_limit.limit', 1, RATE_LIMIT_MAX),
      window_seconds: integer(windowSeconds, 'config.rate_limit.window_seconds', 1, WINDOW_MAX_SECONDS),
    };
  }
  const maxKeys = config.max_keys === undefined || config.max_keys === null || config.max_keys === '' ? DEFAULT_MAX_KEYS : integer(config.max_keys, 'config.max_keys', 1, MAX_KEYS_CAP);
  return { rate_limit: rateLimit, max_keys: maxKeys };
}

/** Reads the limits stored with a key (validated when saved); anything unreadable means "none" and one key. */
export function readKeyLimits(options: Record<string, unknown>): KeyLimits {
  try {
    return normalizeKeyLimits(options);
  } catch {
    return { rate_limit: null, max_keys: DEFAULT_MAX_KEYS };
  }
}
