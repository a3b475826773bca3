// The incremental form of a meter's aggregation (issue 23 item 2), for ingestion: a small state per meter and period
// that events are folded into one at a time as they arrive, and that two processes' states can be merged into.
// Folding any arrangement of the same events gives aggregate()'s answer (aggregate.ts); `latest` still picks by
// timestamp, so only events with equal timestamps depend on the order they came in (the later one wins).
import { InvalidInput } from '../invalid-input.ts';
import { eventProblem, matchesFilter, saturatingAdd, uniqueText, type MeterEvent, type MeterRule } from './events.ts';

/** What a meter remembers of a period: a number, a set of distinct values, or the latest event's time and value. */
export type MeterState =
  | { aggregation: 'count' | 'sum' | 'max'; quantity: number }
  | { aggregation: 'unique_count'; seen: Set<string> }
  | { aggregation: 'latest'; latest: { timestamp: number; value: number } | null };

/** The state of a period that has seen no event. */
export function emptyState(rule: MeterRule): MeterState {
  switch (rule.aggregation) {
    case 'unique_count':
      return { aggregation: 'unique_count', seen: new Set() };
    case 'latest':
      return { aggregation: 'latest', latest: null };
    default:
      return { aggregation: rule.aggregation, quantity: 0 };
  }
}

/**
 * Folds one event into the state, in place (a period's state lives in one place and is never shared while folded).
 * An event outside the meter's filter changes nothing. Throws `InvalidInput` naming the event's field when the meter
 * cannot take it; ingestion checks with eventProblem first, so a bad event is refused alone.
 */
export function foldEvent(rule: MeterRule, state: MeterState, event: MeterEvent): MeterState {
  const problem = eventProblem(rule, event);
  if (problem !== null) throw new InvalidInput(problem.field, problem.problem);
  if (state.aggregation !== rule.aggregation) throw new InvalidInput('state', `is a ${state.aggregation} state, not ${rule.aggregation}`);
  if (!matchesFilter(rule, event)) return state;
  const value = event.value ?? 0;
  switch (state.aggregation) {
    case 'count':
      state.quantity = saturatingAdd(state.quantity, 1);
      break;
    case 'sum':
      state.quantity = saturatingAdd(state.quantity, value);
      break;
    case 'max':
      state.quantity = Math.max(state.quantity, value);
      break;
    case 'unique_count':
      // eventProblem made sure a unique_count event holds its property as a scalar.
      state.seen.add(uniqueText(rule, event) ?? '');
      break;
    case 'latest':
      if (state.latest === null || event.timestamp >= state.latest.timestamp) state.latest = { timestamp: event.timestamp, value };
      break;
  }
  return state;
}

/**
 * One state holding what `a` and `b` saw (two processes' counts of the same period): the same as folding b's events
 * after a's. A `latest` tie goes to `b`, as it would to a later arrival. Neither argument is changed.
 */
export function mergeStates(a: MeterState, b: MeterState): MeterState {
  if (a.aggregation !== b.aggregation) throw new InvalidInput('state', `cannot merge a ${a.aggregation} state with a ${b.aggregation} state`);
  if (a.aggregation === 'unique_count' && b.aggregation === 'unique_count') return { aggregation: 'unique_count', seen: new Set([...a.seen, ...b.seen]) };
  if (a.aggregation === 'latest' && b.aggregation === 'latest') {
    const later = a.latest === null || (b.latest !== null && b.latest.timestamp >= a.latest.timestamp) ? b.latest : a.latest;
    return { aggregation: 'latest', latest: later === null ? null : { ...later } };
  }
  if (a.aggregation === 'unique_count' || a.aggregation === 'latest' || b.aggregation === 'unique_count' || b.aggregation === 'latest') {
    throw new InvalidInput('state', 'cannot be merged');
  }
  const quantity = a.aggregation === 'max' ? Math.max(a.quantity, b.quantity) : saturatingAdd(a.quantity, b.quantity);
  return { aggregation: a.aggregation, quantity };
}

/** The period's quantity so far: what aggregate() gives for the events folded in. */
export function stateQuantity(state: MeterState): number {
  switch (state.aggregation) {
    case 'unique_count':
      return state.seen.size;
    case 'latest':
      return state.latest === null ? 0 : state.latest.value;
    default:
      return state.quantity;
  }
}
