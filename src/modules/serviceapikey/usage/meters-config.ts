// The meters of an apikey plan (issue 23 item 1): `config.meters`, validated when the product is saved (a 422 naming
// the field, e.g. `config.meters[1].code`) and normalised to one stored shape, which usage-plan.ts copies into each
// key's options like the other usage options. The part that decides a meter's quantity (aggregation, property,
// filter) is lib/meters' MeterRule; the prices and limits here follow CONTRACT §12's options, per meter.
//
// Decisions where the issue is silent, so the stored shape can be relied on:
// - every field is stored, absent ones as null (included, overage, hard_limit) or [80, 100] (alerts); `property` and
//   `filter` only when set, so a meter reads the same whether written by hand or saved back from the API;
// - `property` belongs to unique_count alone (sum, max and latest read the event's `value`), so elsewhere it is refused
//   rather than silently ignored; unknown fields in a meter are refused too (a typo must not drop a price);
// - `overage` needs `included` (0 bills every unit): without it the meter is unlimited and nothing would be billed;
// - `hard_limit` may be 0 (a meter switched off) but not below `included`, as at the top level;
// - alerts are stored sorted; an empty list means no alerts for that meter.
import { errors } from '../../../platform/errors.ts';
import { AGGREGATIONS, type Aggregation, type MeterRule, type Scalar } from '../../../lib/meters/events.ts';
import type { OverageRule } from '../../../lib/usage-pricing.ts';
import { count, normalizeOverage } from './overage-rules.ts';

/** A plan's meter as stored in the product's config and copied to its keys' options. */
export interface MeterOptions extends MeterRule {
  code: string;
  name: string;
  unit: string;
  included: number | null;
  overage: OverageRule | null;
  hard_limit: number | null;
  /** Percentages of `included` at which the client is told, each once per period; sorted. */
  alerts: number[];
}

export const MAX_METERS = 20;
export const MAX_TEXT = 100;
const MAX_FILTER_PAIRS = 20;
const MAX_ALERTS = 10;
export const DEFAULT_ALERTS: readonly number[] = [80, 100];
const CODE = /^[a-z][a-z0-9_]{0,39}$/;
/** Today's built-in meter: every accepted check, priced by the top-level included / overage / hard_limit. */
export const RESERVED_METER = 'calls';
const FIELDS: ReadonlySet<string> = new Set(['code', 'name', 'unit', 'aggregation', 'property', 'filter', 'included', 'overage', 'hard_limit', 'alerts']);

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const blank = (value: unknown): boolean => value === undefined || value === null || value === '';

/** A required piece of text, trimmed, 1 to 100 characters. */
function text(value: unknown, param: string): string {
  if (typeof value !== 'string' || value.trim() === '') throw errors.invalid(param, 'is required (text)');
  const trimmed = value.trim();
  if (trimmed.length > MAX_TEXT) throw errors.invalid(param, `must be at most ${MAX_TEXT} characters`);
  return trimmed;
}

function code(value: unknown, param: string): string {
  if (typeof value !== 'string' || !CODE.test(value)) throw errors.invalid(param, 'must be a lower-case letter then up to 39 lower-case letters, digits or underscores');
  if (value === RESERVED_METER) throw errors.invalid(param, `must not be "${RESERVED_METER}": it is the built-in meter, priced by the plan's own included, overage and hard_limit`);
  return value;
}

function aggregation(value: unknown, param: string): Aggregation {
  const found = AGGREGATIONS.find((name) => name === value);
  if (found === undefined) throw errors.invalid(param, `must be one of ${AGGREGATIONS.join(', ')}`);
  return found;
}

/** A flat map of property names to the scalar each must equal. */
function filter(value: unknown, param: string): Record<string, Scalar> {
  if (!isPlainObject(value)) throw errors.invalid(param, 'must be an object of {property: value} pairs');
  const names = Object.keys(value);
  if (names.length > MAX_FILTER_PAIRS) throw errors.invalid(param, `must have at most ${MAX_FILTER_PAIRS} pairs`);
  const pairs: Array<[string, Scalar]> = [];
  for (const name of names) {
    if (name.length === 0 || name.length > MAX_TEXT) throw errors.invalid(param, `must have property names of 1 to ${MAX_TEXT} characters`);
    const wanted = value[name];
    const at = `${param}.${name}`;
    if (typeof wanted === 'string') {
      if (wanted.length > MAX_TEXT) throw errors.invalid(at, `must be at most ${MAX_TEXT} characters`);
    } else if (!(typeof wanted === 'boolean' || (typeof wanted === 'number' && Number.isFinite(wanted)))) {
      throw errors.invalid(at, 'must be a string, a number or a boolean');
    }
    pairs.push([name, wanted]);
  }
  // fromEntries defines own properties, so a property named "__proto__" is kept as sent rather than eaten by a setter.
  return Object.fromEntries(pairs);
}

function alerts(value: unknown, param: string): number[] {
  if (blank(value)) return [...DEFAULT_ALERTS];
  if (!Array.isArray(value)) throw errors.invalid(param, 'must be a list of percentages');
  if (value.length > MAX_ALERTS) throw errors.invalid(param, `must have at most ${MAX_ALERTS} percentages`);
  const seen = new Set<number>();
  value.forEach((percent: unknown, index) => {
    if (typeof percent !== 'number' || !Number.isInteger(percent) || percent < 1 || percent > 100) throw errors.invalid(`${param}[${index}]`, 'must be a whole percentage from 1 to 100');
    if (seen.has(percent)) throw errors.invalid(`${param}[${index}]`, `repeats ${percent}`);
    seen.add(percent);
  });
  return [...seen].toSorted((a, b) => a - b);
}

function meter(value: unknown, param: string): MeterOptions {
  if (!isPlainObject(value)) throw errors.invalid(param, 'must be an object {code, name, unit, aggregation, …}');
  for (const field of Object.keys(value)) if (!FIELDS.has(field)) throw errors.invalid(`${param}.${field}`, 'is not a meter option');
  const out: MeterOptions = {
    code: code(value.code, `${param}.code`),
    name: text(value.name, `${param}.name`),
    unit: text(value.unit, `${param}.unit`),
    aggregation: aggregation(value.aggregation, `${param}.aggregation`),
    included: null,
    overage: null,
    hard_limit: null,
    alerts: [],
  };
  if (out.aggregation === 'unique_count') out.property = text(value.property, `${param}.property`);
  else if (!blank(value.property)) throw errors.invalid(`${param}.property`, `is read only by unique_count meters (a ${out.aggregation} meter reads the event's value)`);
  if (!blank(value.filter)) out.filter = filter(value.filter, `${param}.filter`);
  out.included = blank(value.included) ? null : count(value.included, `${param}.included`, 0);
  out.overage = blank(value.overage) ? null : normalizeOverage(value.overage, `${param}.overage`, { volume: true });
  if (out.overage !== null && out.included === null) throw errors.invalid(`${param}.included`, 'must be set when overage is (0 bills every unit)');
  out.hard_limit = blank(value.hard_limit) ? null : count(value.hard_limit, `${param}.hard_limit`, 0);
  if (out.hard_limit !== null && out.included !== null && out.hard_limit < out.included) throw errors.invalid(`${param}.hard_limit`, 'must not be below included');
  out.alerts = alerts(value.alerts, `${param}.alerts`);
  return out;
}

/**
 * Validates `config.meters` (422 naming the field); returns the normalised meters, or undefined when the plan has
 * none (absent, null or an empty list), so a plan without meters stores nothing new.
 */
export function normalizeMeters(value: unknown, param = 'config.meters'): MeterOptions[] | undefined {
  if (blank(value)) return undefined;
  if (!Array.isArray(value)) throw errors.invalid(param, 'must be a list of meters');
  if (value.length > MAX_METERS) throw errors.invalid(param, `must have at most ${MAX_METERS} meters`);
  const codes = new Set<string>();
  const meters = value.map((item: unknown, index) => {
    const normalized = meter(item, `${param}[${index}]`);
    if (codes.has(normalized.code)) throw errors.invalid(`${param}[${index}].code`, `repeats "${normalized.code}" (codes are unique in a plan)`);
    codes.add(normalized.code);
    return normalized;
  });
  return meters.length === 0 ? undefined : meters;
}
