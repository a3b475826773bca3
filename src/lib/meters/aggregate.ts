// A meter's quantity for a period from the period's whole list of events (issue 23 item 2): the direct form, for
// reports and the period's close. The incremental form (state.ts) gives the same answers event by event.
import { InvalidInput } from '../invalid-input.ts';
import { eventProblem, matchesFilter, saturatingAdd, uniqueText, type MeterEvent, type MeterRule } from './events.ts';

/**
 * The period's quantity of a meter over `events` (in arrival order), counting only the events that match its filter:
 * - count: the events; sum / max: of their values; unique_count: distinct values of properties[property];
 * - latest: the value of the event with the greatest timestamp, the later arrival winning a tie.
 * A period without matching events has quantity 0 for every aggregation (nothing used, nothing billed). A sum past
 * the largest safe integer stays there (events.ts saturatingAdd). Throws `InvalidInput` naming `events[i].<field>`
 * for an event the meter cannot take (ingestion refuses those one by one first, with eventProblem).
 */
export function aggregate(rule: MeterRule, events: readonly MeterEvent[]): number {
  events.forEach((event, index) => {
    const problem = eventProblem(rule, event);
    if (problem !== null) throw new InvalidInput(`events[${index}].${problem.field}`, problem.problem);
  });
  const matching = events.filter((event) => matchesFilter(rule, event));
  // eventProblem made sure every value below is a non-negative safe integer on the meters that read one.
  const valueOf = (event: MeterEvent): number => event.value ?? 0;
  switch (rule.aggregation) {
    case 'count':
      return matching.length;
    case 'sum':
      return matching.reduce((total, event) => saturatingAdd(total, valueOf(event)), 0);
    case 'max':
      return matching.reduce((most, event) => Math.max(most, valueOf(event)), 0);
    case 'unique_count':
      return new Set(matching.map((event) => uniqueText(rule, event))).size;
    default: {
      // latest
      let last: MeterEvent | undefined;
      // `>=`: of events with the same timestamp, the one that arrived later wins.
      for (const event of matching) if (last === undefined || event.timestamp >= last.timestamp) last = event;
      return last === undefined ? 0 : valueOf(last);
    }
  }
}
