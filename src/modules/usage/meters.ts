// The meters of an order's plan, as ingestion needs them: each meter's code, aggregation and (for unique_count) the
// property it counts. Read from the `meters` array of the order's config, the snapshot of its product's config taken
// when it was bought and again at each plan change, so an event is judged by the plan in force.
//
// Read defensively: the product module validates `meters` when a product is saved, but orders bought before that (or
// a config edited by hand) may hold anything, and a malformed entry must cost that meter, never the whole ingestion.

export const AGGREGATIONS = ['count', 'sum', 'max', 'unique_count', 'latest'] as const;
export type Aggregation = (typeof AGGREGATIONS)[number];

export interface MeterRule {
  code: string;
  aggregation: Aggregation;
  /** unique_count only: the property whose distinct values are counted. */
  property?: string;
}

/** The built-in meter every plan has: each accepted check (and each use reported by report_usage). */
export const CALLS_METER: MeterRule = { code: 'calls', aggregation: 'count' };

const CODE = /^[a-z][a-z0-9_]{0,39}$/;

function isAggregation(value: unknown): value is Aggregation {
  return typeof value === 'string' && (AGGREGATIONS as readonly string[]).includes(value);
}

function ruleOf(entry: unknown): MeterRule | null {
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return null;
  const { code, aggregation, property } = entry as Record<string, unknown>;
  if (typeof code !== 'string' || !CODE.test(code) || !isAggregation(aggregation)) return null;
  if (aggregation !== 'unique_count') return { code, aggregation };
  // A unique_count meter without its property could never accept an event: leave it out rather than guess one.
  if (typeof property !== 'string' || property === '') return null;
  return { code, aggregation, property };
}

/**
 * The meters of a plan config (the order's config as stored), by code. `calls` is always there and always counts,
 * whatever the config says about it (the code is reserved). The first entry of a repeated code wins.
 */
export function metersOf(config: unknown): Map<string, MeterRule> {
  const meters = new Map<string, MeterRule>([[CALLS_METER.code, CALLS_METER]]);
  const list = typeof config === 'object' && config !== null ? (config as Record<string, unknown>).meters : undefined;
  if (!Array.isArray(list)) return meters;
  for (const entry of list) {
    const rule = ruleOf(entry);
    if (rule !== null && !meters.has(rule.code)) meters.set(rule.code, rule);
  }
  return meters;
}

/** Parses a stored JSON config; anything unreadable is an empty config (only `calls`). */
export function parseConfig(text: string | null): unknown {
  if (text === null) return {};
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return {};
  }
}
