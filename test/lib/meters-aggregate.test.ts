// The meter aggregations (issue 23 item 2) against a direct formula: seeded random event streams are aggregated by
// aggregate() and by folding them into a state in shuffled orders (and in two halves merged), and all must agree with
// a reference written here from the definitions. `latest` is checked with timestamps out of arrival order.
import { describe, expect, it } from 'vitest';
import { aggregate } from '../../src/lib/meters/aggregate.ts';
import { eventProblem, matchesFilter, type Aggregation, type MeterEvent, type MeterRule } from '../../src/lib/meters/events.ts';
import { emptyState, foldEvent, mergeStates, stateQuantity } from '../../src/lib/meters/state.ts';
import { InvalidInput } from '../../src/lib/invalid-input.ts';

/** mulberry32: a failure names its seed and replays. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const int = (random: () => number, max: number) => Math.floor(random() * (max + 1));
const pick = <T>(random: () => number, list: readonly T[]): T => list[int(random, list.length - 1)]!;

function shuffled<T>(random: () => number, list: readonly T[]): T[] {
  const out = [...list];
  for (let i = out.length - 1; i > 0; i--) {
    const j = int(random, i);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

const MODELS = ['small', 'large', 'huge'];
const USERS = ['u1', 'u2', 'u3', 4, 5, 'u6'];

function randomRule(random: () => number, aggregation: Aggregation): MeterRule {
  const rule: MeterRule = { aggregation };
  if (aggregation === 'unique_count') rule.property = 'user';
  if (random() < 0.5) rule.filter = { model: pick(random, MODELS) };
  return rule;
}

/** A stream with few distinct timestamps (so `latest` ties happen) that arrive in no particular order. */
function randomEvents(random: () => number, rule: MeterRule): MeterEvent[] {
  const events: MeterEvent[] = [];
  const length = int(random, 60);
  for (let i = 0; i < length; i++) {
    const properties: Record<string, unknown> = { model: pick(random, MODELS), user: pick(random, USERS) };
    const event: MeterEvent = { timestamp: 1_700_000_000_000 + int(random, 20) * 1000, properties };
    if (rule.aggregation !== 'count' && rule.aggregation !== 'unique_count') event.value = int(random, 3) === 0 ? int(random, 1_000_000) : int(random, 50);
    events.push(event);
  }
  return events;
}

/** The definitions, written out without the library: the quantity of `events` taken in arrival order. */
function reference(rule: MeterRule, events: readonly MeterEvent[]): number {
  const counted = events.filter((event) => rule.filter === undefined || Object.entries(rule.filter).every(([name, value]) => String(event.properties?.[name]) === String(value)));
  const values = counted.map((event) => event.value!);
  switch (rule.aggregation) {
    case 'count':
      return counted.length;
    case 'sum':
      return values.reduce((a, b) => a + b, 0);
    case 'max':
      return values.length === 0 ? 0 : Math.max(...values);
    case 'unique_count':
      return new Set(counted.map((event) => String(event.properties![rule.property!]))).size;
    default: {
      // latest
      if (counted.length === 0) return 0;
      const top = Math.max(...counted.map((event) => event.timestamp));
      // Of the events at the greatest timestamp, the one that arrived last.
      return counted.filter((event) => event.timestamp === top).at(-1)!.value!;
    }
  }
}

const fold = (rule: MeterRule, events: readonly MeterEvent[]) => stateQuantity(events.reduce((state, event) => foldEvent(rule, state, event), emptyState(rule)));

const ORDER_FREE: Aggregation[] = ['count', 'sum', 'max', 'unique_count'];

describe('meter aggregations against a direct formula', () => {
  it('aggregate() and the incremental fold agree with the reference on 500 seeded streams', () => {
    for (let seed = 1; seed <= 500; seed++) {
      const random = rng(seed);
      const rule = randomRule(random, pick(random, ['count', 'sum', 'max', 'unique_count', 'latest'] as const));
      const events = randomEvents(random, rule);
      const expected = reference(rule, events);
      const at = `seed ${seed}, ${JSON.stringify(rule)}`;
      expect(aggregate(rule, events), at).toBe(expected);
      expect(fold(rule, events), at).toBe(expected);
    }
  });

  it('count, sum, max and unique_count give the same answer in any arrival order, folded or merged from two halves', () => {
    for (let seed = 1; seed <= 300; seed++) {
      const random = rng(seed * 7919);
      const rule = randomRule(random, ORDER_FREE[seed % ORDER_FREE.length]!);
      const events = randomEvents(random, rule);
      const expected = reference(rule, events);
      for (let round = 0; round < 3; round++) {
        const order = shuffled(random, events);
        expect(aggregate(rule, order), `seed ${seed}`).toBe(expected);
        expect(fold(rule, order), `seed ${seed}`).toBe(expected);
        const cut = int(random, order.length);
        const halves = [order.slice(0, cut), order.slice(cut)].map((part) => part.reduce((state, event) => foldEvent(rule, state, event), emptyState(rule)));
        expect(stateQuantity(mergeStates(halves[0]!, halves[1]!)), `seed ${seed}`).toBe(expected);
      }
    }
  });

  it('latest picks by timestamp whatever the arrival order; only ties go to the later arrival', () => {
    for (let seed = 1; seed <= 300; seed++) {
      const random = rng(seed * 104729);
      const rule: MeterRule = { aggregation: 'latest' };
      // Distinct timestamps: every arrival order has the same answer, the value at the greatest timestamp.
      const events = shuffled(random, Array.from({ length: 1 + int(random, 40) }, (_, i) => ({ timestamp: 1_000 + i * 10, value: int(random, 10_000) })));
      const newest = events.reduce((a, b) => (b.timestamp > a.timestamp ? b : a)).value;
      for (let round = 0; round < 3; round++) {
        const order = shuffled(random, events);
        expect(aggregate(rule, order), `seed ${seed}`).toBe(newest);
        expect(fold(rule, order), `seed ${seed}`).toBe(newest);
        const cut = int(random, order.length);
        const [a, b] = [order.slice(0, cut), order.slice(cut)].map((part) => part.reduce((state, event) => foldEvent(rule, state, event), emptyState(rule)));
        expect(stateQuantity(mergeStates(a!, b!)), `seed ${seed}`).toBe(newest);
      }
    }
  });

  it('latest: an event backfilled with an older timestamp does not replace the newer value', () => {
    const rule: MeterRule = { aggregation: 'latest' };
    const events: MeterEvent[] = [
      { timestamp: 3000, value: 30 },
      { timestamp: 1000, value: 10 },
      { timestamp: 2000, value: 20 },
    ];
    expect(aggregate(rule, events)).toBe(30);
    expect(fold(rule, events)).toBe(30);
    // A tie: the later arrival wins, in both forms.
    const tied = [...events, { timestamp: 3000, value: 31 }];
    expect(aggregate(rule, tied)).toBe(31);
    expect(fold(rule, tied)).toBe(31);
    expect(fold(rule, [tied[3]!, tied[0]!])).toBe(30);
  });
});

describe('meter aggregations: edges and refusals', () => {
  it('a period without matching events is 0 for every aggregation', () => {
    for (const aggregation of ['count', 'sum', 'max', 'unique_count', 'latest'] as const) {
      const rule: MeterRule = { aggregation, ...(aggregation === 'unique_count' && { property: 'user' }), filter: { model: 'large' } };
      const other: MeterEvent = { timestamp: 1, properties: { model: 'small', user: 'a' }, ...(aggregation !== 'count' && aggregation !== 'unique_count' && { value: 5 }) };
      expect(aggregate(rule, []), aggregation).toBe(0);
      expect(aggregate(rule, [other]), aggregation).toBe(0);
      expect(fold(rule, [other]), aggregation).toBe(0);
    }
  });

  it('filters compare property values as text, and only scalars match', () => {
    const rule: MeterRule = { aggregation: 'count', filter: { tier: 2, beta: true } };
    expect(matchesFilter(rule, { timestamp: 1, properties: { tier: '2', beta: 'true' } })).toBe(true);
    expect(matchesFilter(rule, { timestamp: 1, properties: { tier: 2, beta: true, extra: 'x' } })).toBe(true);
    expect(matchesFilter(rule, { timestamp: 1, properties: { tier: 2 } })).toBe(false);
    expect(matchesFilter(rule, { timestamp: 1, properties: { tier: { n: 2 }, beta: true } })).toBe(false);
    expect(matchesFilter(rule, { timestamp: 1, properties: { tier: [2], beta: true } })).toBe(false);
    expect(matchesFilter(rule, { timestamp: 1 })).toBe(false);
    // An inherited name is not a property of the event.
    expect(matchesFilter({ aggregation: 'count', filter: { toString: 'x' } }, { timestamp: 1, properties: {} })).toBe(false);
    // unique_count: 42 and "42" are one user.
    expect(aggregate({ aggregation: 'unique_count', property: 'user' }, [1, 2].map((i) => ({ timestamp: i, properties: { user: i === 1 ? 42 : '42' } })))).toBe(1);
  });

  it('a sum stops at the largest safe integer instead of losing exactness, in any order', () => {
    const rule: MeterRule = { aggregation: 'sum' };
    const events = [Number.MAX_SAFE_INTEGER - 5, 3, 4, 1].map((value, i) => ({ timestamp: i, value }));
    expect(aggregate(rule, events)).toBe(Number.MAX_SAFE_INTEGER);
    expect(fold(rule, events.toReversed())).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('names the event and field the meter cannot take, in both forms', () => {
    const cases: Array<[MeterRule, MeterEvent, string]> = [
      [{ aggregation: 'count' }, { timestamp: 1, value: 1 }, 'value'],
      [{ aggregation: 'unique_count', property: 'user' }, { timestamp: 1, value: 1, properties: { user: 'a' } }, 'value'],
      [{ aggregation: 'sum' }, { timestamp: 1 }, 'value'],
      [{ aggregation: 'sum' }, { timestamp: 1, value: -1 }, 'value'],
      [{ aggregation: 'max' }, { timestamp: 1, value: 1.5 }, 'value'],
      [{ aggregation: 'latest' }, { timestamp: 1, value: Number.NaN }, 'value'],
      [{ aggregation: 'sum' }, { timestamp: 1, value: Number.POSITIVE_INFINITY }, 'value'],
      [{ aggregation: 'sum' }, { timestamp: 1, value: '5' as unknown as number }, 'value'],
      [{ aggregation: 'count' }, { timestamp: Number.NaN }, 'timestamp'],
      [{ aggregation: 'unique_count', property: 'user' }, { timestamp: 1, properties: {} }, 'properties'],
      [{ aggregation: 'unique_count', property: 'user' }, { timestamp: 1 }, 'properties'],
      [{ aggregation: 'unique_count', property: 'user' }, { timestamp: 1, properties: { user: null } }, 'properties'],
      [{ aggregation: 'unique_count', property: 'user' }, { timestamp: 1, properties: { user: { id: 1 } } }, 'properties'],
      // Checked whether or not the event matches the filter: it was sent to this meter.
      [{ aggregation: 'sum', filter: { model: 'large' } }, { timestamp: 1, properties: { model: 'small' } }, 'value'],
    ];
    for (const [rule, event, field] of cases) {
      const at = `${JSON.stringify(rule)} ${JSON.stringify(event)}`;
      expect(eventProblem(rule, event)?.field, at).toBe(field);
      const good: MeterEvent = { timestamp: 1, properties: { user: 'a', model: 'large' }, ...(rule.aggregation !== 'count' && rule.aggregation !== 'unique_count' && { value: 1 }) };
      expect(eventProblem(rule, good), at).toBeNull();
      expect(() => aggregate(rule, [good, event]), at).toThrow(new InvalidInput(`events[1].${field}`, eventProblem(rule, event)!.problem));
      expect(() => foldEvent(rule, emptyState(rule), event), at).toThrow(InvalidInput);
    }
  });

  it('refuses to fold into or merge with a state of another aggregation', () => {
    expect(() => foldEvent({ aggregation: 'sum' }, emptyState({ aggregation: 'max' }), { timestamp: 1, value: 1 })).toThrow(InvalidInput);
    expect(() => mergeStates(emptyState({ aggregation: 'sum' }), emptyState({ aggregation: 'latest' }))).toThrow(InvalidInput);
    expect(() => mergeStates(emptyState({ aggregation: 'unique_count' }), emptyState({ aggregation: 'count' }))).toThrow(InvalidInput);
  });

  it('merging leaves both states unchanged', () => {
    const rule: MeterRule = { aggregation: 'unique_count', property: 'user' };
    const a = foldEvent(rule, emptyState(rule), { timestamp: 1, properties: { user: 'a' } });
    const b = foldEvent(rule, emptyState(rule), { timestamp: 1, properties: { user: 'b' } });
    expect(stateQuantity(mergeStates(a, b))).toBe(2);
    expect([stateQuantity(a), stateQuantity(b)]).toEqual([1, 1]);
    const latest: MeterRule = { aggregation: 'latest' };
    const older = foldEvent(latest, emptyState(latest), { timestamp: 5, value: 1 });
    const merged = mergeStates(older, emptyState(latest));
    expect(stateQuantity(merged)).toBe(1);
    expect(stateQuantity(mergeStates(emptyState(latest), emptyState(latest)))).toBe(0);
  });
});
