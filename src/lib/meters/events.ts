// What a meter aggregates (issue 23): its rule (aggregation, property, filter) and the events it reads. Pure: no I/O,
// nothing of ours but lib/. The plan's full meter (code, prices, limits) is validated in
// modules/serviceapikey/usage/meters-config.ts, which hands this file the part that decides the quantity.
//
// Decisions the issue leaves open, taken here so ingestion and billing agree:
// - `value` is a non-negative safe integer (tokens, bytes, milliseconds): sums of integers are exact and the same in
//   any order, which floating-point sums are not. `count` and `unique_count` read no value and refuse one (a value
//   sent to them is an integration's mistake, as the issue says of `count`); sum, max and latest require one.
// - Property values are compared as text (42 and "42" are the same user, true and "true" the same flag): an
//   integration that sends an id as a number one day and a string the next must not be billed twice for it.
//   Only scalars (string, finite number, boolean) take part; an object, an array or null never matches a filter.
// - Timestamps are milliseconds since the epoch; ingestion turns its ISO strings into them.

/** The five aggregations of issue 23. */
export const AGGREGATIONS = ['count', 'sum', 'max', 'unique_count', 'latest'] as const;
export type Aggregation = (typeof AGGREGATIONS)[number];

export type Scalar = string | number | boolean;

/** The part of a meter that decides its quantity. */
export interface MeterRule {
  aggregation: Aggregation;
  /** unique_count only: the property whose distinct values are counted. */
  property?: string | undefined;
  /** Property values an event must all match to count for this meter (e.g. {model: "large"}). */
  filter?: Readonly<Record<string, Scalar>> | undefined;
}

/** One usage event, as the aggregations see it. */
export interface MeterEvent {
  value?: number | undefined;
  /** Milliseconds since the epoch. */
  timestamp: number;
  properties?: Readonly<Record<string, unknown>> | undefined;
}

/** Why an event cannot be aggregated by a meter: the event's field and the problem, for a per-event rejection. */
export interface EventProblem {
  field: 'value' | 'timestamp' | 'properties';
  problem: string;
}

/** A property value as the text it is compared by, or null when it is not a scalar (and so never compared). */
export function scalarText(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : null;
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  return null;
}

/** Whether an event's properties match every pair of the meter's filter (no filter: every event). */
export function matchesFilter(rule: MeterRule, event: MeterEvent): boolean {
  if (rule.filter === undefined) return true;
  for (const [name, wanted] of Object.entries(rule.filter)) {
    const actual = event.properties === undefined || !Object.hasOwn(event.properties, name) ? null : scalarText(event.properties[name]);
    if (actual === null || actual !== scalarText(wanted)) return false;
  }
  return true;
}

/** The text of the property a unique_count meter counts, or null when the event lacks it (or it is not a scalar). */
export function uniqueText(rule: MeterRule, event: MeterEvent): string | null {
  if (rule.property === undefined || event.properties === undefined || !Object.hasOwn(event.properties, rule.property)) return null;
  return scalarText(event.properties[rule.property]);
}

/**
 * What is wrong with an event for this meter, or null when it can be aggregated. Checked for every event sent to the
 * meter, whether or not it matches the filter: an event that names a meter must fit that meter.
 */
export function eventProblem(rule: MeterRule, event: MeterEvent): EventProblem | null {
  if (typeof event.timestamp !== 'number' || !Number.isFinite(event.timestamp)) return { field: 'timestamp', problem: 'must be a time' };
  if (rule.aggregation === 'count' || rule.aggregation === 'unique_count') {
    if (event.value !== undefined) return { field: 'value', problem: `is not taken by a ${rule.aggregation} meter (it reads no value)` };
  } else if (event.value === undefined) {
    return { field: 'value', problem: `is required by a ${rule.aggregation} meter` };
  } else if (typeof event.value !== 'number' || !Number.isSafeInteger(event.value) || event.value < 0) {
    return { field: 'value', problem: 'must be a non-negative whole number' };
  }
  if (rule.aggregation === 'unique_count' && uniqueText(rule, event) === null) {
    return { field: 'properties', problem: `must hold "${rule.property ?? ''}" as a string, number or boolean (a unique_count meter counts its distinct values)` };
  }
  return null;
}

/** Adds two non-negative quantities, stopping at the largest safe integer rather than losing exactness past it. */
export function saturatingAdd(a: number, b: number): number {
  return a > Number.MAX_SAFE_INTEGER - b ? Number.MAX_SAFE_INTEGER : a + b;
}
