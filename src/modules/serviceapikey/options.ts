// The apikey product's config (CONTRACT §7): key options, custom parameters and enforce_limit, validated and
// normalised when a product is saved. FOSSBilling's spellings (`case` with upper/lower/mixed, flat `custom_<name>`
// keys) are accepted and stored in Tollgate's form.
import { errors } from '../../platform/errors.ts';
import { normalizeKeyLimits, readKeyLimits, type KeyLimits } from './key-limits.ts';
import { DEFAULT_KEY_OPTIONS, KEY_LENGTH_MAX, KEY_LENGTH_MIN, type Capitalization, type KeyOptions } from '../../lib/keygen.ts';

/** What is stored in a product's (and an order's snapshot) config. */
export interface ApiKeyConfig extends KeyLimits {
  length: number;
  split: boolean;
  split_interval: number;
  capitalization: Capitalization;
  enforce_limit: boolean;
  custom: Record<string, unknown>;
}

export type CustomParams = Record<string, unknown>;

/** The names of the key options in a config, in Tollgate's and FOSSBilling's spellings: never custom parameters. */
export const KEY_OPTION_NAMES: ReadonlySet<string> = new Set(['length', 'split', 'split_interval', 'case', 'capitalization', 'enforce_limit', 'rate_limit', 'max_keys']);

const MAX_CUSTOM_PARAMS = 100;
const MAX_CUSTOM_JSON = 16 * 1024;
const CUSTOM_NAME = /^[A-Za-z_][A-Za-z0-9_.-]{0,63}$/;
const NUMERIC = /^-?(?:0|[1-9]\d*)(?:\.\d+)?$/;

const CAPITALIZATION: Readonly<Record<string, Capitalization>> = {
  uppercase: 'uppercase',
  upper: 'uppercase',
  lowercase: 'lowercase',
  lower: 'lowercase',
  mixed: 'mixed',
};

function toInteger(value: unknown, param: string, min: number, max: number): number {
  const number = typeof value === 'string' && /^\s*\d+\s*$/.test(value) ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isInteger(number) || number < min || number > max) {
    throw errors.invalid(param, `must be an integer from ${min} to ${max}`);
  }
  return number;
}

function toBoolean(value: unknown, param: string): boolean {
  if (typeof value === 'boolean') return value;
  if (value === 0 || value === 1) return value === 1;
  if (typeof value === 'string') {
    const lowered = value.trim().toLowerCase();
    if (['1', 'true', 'on', 'yes'].includes(lowered)) return true;
    if (['0', 'false', 'off', 'no', ''].includes(lowered)) return false;
  }
  throw errors.invalid(param, 'must be a boolean');
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Validates custom parameters: names of at most 64 word characters, JSON values, `monthlyLimit` a non-negative
 * integer (or null). `flat` holds FOSSBilling's `custom_<name>` entries, whose numeric strings become numbers.
 */
export function normalizeCustom(custom: unknown, flat: Record<string, unknown>, param: string): CustomParams {
  if (custom !== undefined && custom !== null && !isPlainObject(custom)) throw errors.invalid(param, 'must be an object');
  const out: CustomParams = { ...custom };
  for (const [name, value] of Object.entries(flat)) {
    out[name] = typeof value === 'string' && NUMERIC.test(value.trim()) ? Number(value.trim()) : value;
  }
  const names = Object.keys(out);
  if (names.length > MAX_CUSTOM_PARAMS) throw errors.invalid(param, `must have at most ${MAX_CUSTOM_PARAMS} parameters`);
  for (const name of names) {
    if (!CUSTOM_NAME.test(name)) throw errors.invalid(`${param}.${name}`, 'is not a valid parameter name');
  }
  if ('monthlyLimit' in out && out.monthlyLimit !== null) {
    const limit = out.monthlyLimit;
    const number = typeof limit === 'string' && /^\d+$/.test(limit.trim()) ? Number(limit.trim()) : limit;
    if (typeof number !== 'number' || !Number.isSafeInteger(number) || number < 0) {
      throw errors.invalid(`${param}.monthlyLimit`, 'must be a non-negative integer');
    }
    out.monthlyLimit = number;
  }
  if (JSON.stringify(out).length > MAX_CUSTOM_JSON) throw errors.invalid(param, `must be at most ${MAX_CUSTOM_JSON} bytes of JSON`);
  return out;
}

/** Splits FOSSBilling's flat `custom_<name>` entries out of an object. */
export function flatCustomOf(config: Record<string, unknown>): Record<string, unknown> {
  const flat: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(config)) {
    if (name.startsWith('custom_') && name.length > 'custom_'.length) flat[name.slice('custom_'.length)] = value;
  }
  return flat;
}

/**
 * Validates and normalises an apikey product's config. Throws `config.<option>` 422s. Options sent in FOSSBilling's
 * spelling win over the stored ones (the product module merges what was sent into what was stored).
 */
export function normalizeApiKeyConfig(config: Record<string, unknown>): ApiKeyConfig {
  const length = config.length === undefined || config.length === null ? DEFAULT_KEY_OPTIONS.length : toInteger(config.length, 'config.length', KEY_LENGTH_MIN, KEY_LENGTH_MAX);
  const split = config.split === undefined || config.split === null ? DEFAULT_KEY_OPTIONS.split : toBoolean(config.split, 'config.split');
  const interval =
    config.split_interval === undefined || config.split_interval === null || config.split_interval === ''
      ? Math.min(DEFAULT_KEY_OPTIONS.splitInterval, length)
      : toInteger(config.split_interval, 'config.split_interval', 1, length);
  const caseParam = config.case !== undefined && config.case !== null ? 'config.case' : 'config.capitalization';
  const rawCase = config.case ?? config.capitalization ?? DEFAULT_KEY_OPTIONS.capitalization;
  const capitalization = typeof rawCase === 'string' ? CAPITALIZATION[rawCase.trim().toLowerCase()] : undefined;
  if (capitalization === undefined) throw errors.invalid(caseParam, 'must be uppercase, lowercase or mixed');
  const enforce = config.enforce_limit === undefined || config.enforce_limit === null ? false : toBoolean(config.enforce_limit, 'config.enforce_limit');
  const custom = normalizeCustom(config.custom, flatCustomOf(config), 'config.custom');
  return { length, split, split_interval: interval, capitalization, enforce_limit: enforce, custom, ...normalizeKeyLimits(config) };
}

/** Reads a stored config leniently (it was normalised when saved); falls back to the defaults. */
export function readApiKeyConfig(config: Record<string, unknown>): ApiKeyConfig {
  try {
    return normalizeApiKeyConfig(config);
  } catch {
    const { length, split, splitInterval, capitalization } = DEFAULT_KEY_OPTIONS;
    const custom = isPlainObject(config.custom) ? config.custom : {};
    return { length, split, split_interval: splitInterval, capitalization, enforce_limit: config.enforce_limit === true, custom, ...readKeyLimits(config) };
  }
}

export function keyOptionsOf(config: Pick<ApiKeyConfig, 'length' | 'split' | 'split_interval' | 'capitalization'>): KeyOptions {
  return { length: config.length, split: config.split, splitInterval: config.split_interval, capitalization: config.capitalization };
}

/** The key's monthly limit: its `monthlyLimit` custom parameter, or null when it has none. */
export function monthlyLimitOf(custom: CustomParams): number | null {
  const limit = custom.monthlyLimit;
  return typeof limit === 'number' && Number.isFinite(limit) && limit >= 0 ? Math.floor(limit) : null;
}
