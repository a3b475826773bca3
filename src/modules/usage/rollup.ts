// Folds the events a batch stored for the first time into the meters' day rows (migration 027), inside the batch's
// transaction: the events and what they measured commit together, and an event the unique index refused (a
// duplicate) was never returned by the insert, so it is never folded. A `calls` event is one more use of its key,
// written where the check's own uses go (api_key_period_usage and api_key_usage), so the built-in meter is billed,
// limited and reported as it always was.
import { createHash } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { matchesFilter, uniqueText } from '../../lib/meters/events.ts';
import { addDayUses, addPeriodUses } from '../serviceapikey/usage/period-usage.ts';
import type { UsagePeriod } from '../serviceapikey/usage/usage-period.ts';
import { chunks } from './chunks.ts';
import { CALLS_METER, type IngestMeter } from './order-plans.ts';
import type { UsageMeterDayTable } from './tables.ts';

/** An event stored by this batch, with the meter and period it counts in. */
export interface StoredEvent {
  orderId: number;
  meter: IngestMeter;
  period: UsagePeriod;
  /** The key a `calls` event counts on; null for other meters. */
  keyId: number | null;
  value: number | null;
  /** ISO 8601 UTC with milliseconds. */
  timestamp: string;
  properties: Record<string, unknown> | null;
}

const ROWS_PER_STATEMENT = 400;
/** A distinct value longer than this is stored as its digest, so the unique index stays small. */
const MAX_UNIQUE_TEXT = 64;

function uniqueKey(text: string): string {
  return text.length <= MAX_UNIQUE_TEXT ? text : `sha256:${createHash('sha256').update(text).digest('hex')}`;
}

type Combine = 'add' | 'max' | 'latest';

const rowKey = (row: Pick<UsageMeterDayTable, 'order_id' | 'meter' | 'period_start' | 'day'>): string => `${row.order_id}\u0000${row.meter}\u0000${row.period_start}\u0000${row.day}`;

/** Writes day rows, combining with what is stored: a sum, the greater, or the later event's value. */
async function upsertDays(trx: Kysely<Database>, combine: Combine, rows: UsageMeterDayTable[]): Promise<void> {
  // Sorted, so two batches touching the same rows on PostgreSQL lock them in one order and never deadlock.
  rows.sort((a, b) => (rowKey(a) < rowKey(b) ? -1 : rowKey(a) > rowKey(b) ? 1 : 0));
  for (const part of chunks(rows, ROWS_PER_STATEMENT)) {
    await trx
      .insertInto('usage_meter_days')
      .values(part)
      .onConflict((oc) => {
        const conflict = oc.columns(['order_id', 'meter', 'period_start', 'day']);
        if (combine === 'add') return conflict.doUpdateSet({ quantity: sql<number>`usage_meter_days.quantity + excluded.quantity` });
        if (combine === 'max') {
          return conflict.doUpdateSet({ quantity: sql<number>`case when excluded.quantity > usage_meter_days.quantity then excluded.quantity else usage_meter_days.quantity end` });
        }
        // latest: a later (or equally timed, later arriving) event's value replaces the stored one.
        return conflict.doUpdateSet({
          quantity: sql<number>`case when excluded.latest_at >= usage_meter_days.latest_at then excluded.quantity else usage_meter_days.quantity end`,
          latest_at: sql<string>`case when excluded.latest_at >= usage_meter_days.latest_at then excluded.latest_at else usage_meter_days.latest_at end`,
        });
      })
      .execute();
  }
}

/** Stores the distinct values not seen before in their period; returns the day rows counting the new ones. */
async function newUniques(trx: Kysely<Database>, candidates: Map<string, { row: UsageMeterDayTable; value: string }>): Promise<UsageMeterDayTable[]> {
  const sorted = [...candidates.values()].toSorted((a, b) => (rowKey(a.row) + a.value < rowKey(b.row) + b.value ? -1 : 1));
  const days = new Map<string, UsageMeterDayTable>();
  for (const part of chunks(sorted, ROWS_PER_STATEMENT)) {
    const inserted = await trx
      .insertInto('usage_meter_uniques')
      .values(part.map(({ row, value }) => ({ order_id: row.order_id, meter: row.meter, period_start: row.period_start, value })))
      .onConflict((oc) => oc.columns(['order_id', 'meter', 'period_start', 'value']).doNothing())
      .returning(['order_id', 'meter', 'period_start', 'value'])
      .execute();
    for (const found of inserted) {
      const candidate = candidates.get(`${found.order_id}\u0000${found.meter}\u0000${found.period_start}\u0000${found.value}`);
      if (candidate === undefined) continue;
      const key = rowKey(candidate.row);
      const day = days.get(key) ?? { ...candidate.row, quantity: 0 };
      day.quantity += 1;
      days.set(key, day);
    }
  }
  return [...days.values()];
}

/** Folds the batch's new events (in the order they were sent) into the meters' day rows and the keys' uses. */
export async function foldIntoRollups(trx: Kysely<Database>, events: readonly StoredEvent[]): Promise<void> {
  const days = { add: new Map<string, UsageMeterDayTable>(), max: new Map<string, UsageMeterDayTable>(), latest: new Map<string, UsageMeterDayTable>() };
  const uniques = new Map<string, { row: UsageMeterDayTable; value: string }>();
  const callsByPeriod = new Map<string, { api_key_id: number; period_start: string; period_end: string; count: number }>();
  const callsByDay = new Map<string, { api_key_id: number; day: string; count: number }>();

  for (const event of events) {
    const day = event.timestamp.slice(0, 10);
    if (event.meter.code === CALLS_METER) {
      if (event.keyId === null) continue;
      const periodKey = `${event.keyId} ${event.period.start}`;
      const period = callsByPeriod.get(periodKey) ?? { api_key_id: event.keyId, period_start: event.period.start, period_end: event.period.end, count: 0 };
      period.count += 1;
      callsByPeriod.set(periodKey, period);
      const dayKey = `${event.keyId} ${day}`;
      const used = callsByDay.get(dayKey) ?? { api_key_id: event.keyId, day, count: 0 };
      used.count += 1;
      callsByDay.set(dayKey, used);
      continue;
    }
    const measured = { value: event.value ?? undefined, timestamp: Date.parse(event.timestamp), properties: event.properties ?? undefined };
    if (!matchesFilter(event.meter, measured)) continue;
    const base: UsageMeterDayTable = { order_id: event.orderId, meter: event.meter.code, period_start: event.period.start, period_end: event.period.end, day, quantity: 0, latest_at: null };
    const key = rowKey(base);
    const value = event.value ?? 0;
    switch (event.meter.aggregation) {
      case 'unique_count': {
        const text = uniqueKey(uniqueText(event.meter, measured) ?? '');
        const candidate = `${event.orderId}\u0000${event.meter.code}\u0000${event.period.start}\u0000${text}`;
        // The first event of the batch carrying a value decides the day it counts on.
        if (!uniques.has(candidate)) uniques.set(candidate, { row: base, value: text });
        break;
      }
      case 'max': {
        const row = days.max.get(key) ?? base;
        row.quantity = Math.max(row.quantity, value);
        days.max.set(key, row);
        break;
      }
      case 'latest': {
        const row = days.latest.get(key) ?? base;
        if (row.latest_at === null || event.timestamp >= row.latest_at) {
          row.quantity = value;
          row.latest_at = event.timestamp;
        }
        days.latest.set(key, row);
        break;
      }
      default: {
        const row = days.add.get(key) ?? base;
        row.quantity += event.meter.aggregation === 'count' ? 1 : value;
        days.add.set(key, row);
      }
    }
  }

  if (uniques.size > 0) {
    for (const row of await newUniques(trx, uniques)) {
      const key = rowKey(row);
      const existing = days.add.get(key);
      if (existing === undefined) days.add.set(key, row);
      else existing.quantity += row.quantity;
    }
  }
  if (days.add.size > 0) await upsertDays(trx, 'add', [...days.add.values()]);
  if (days.max.size > 0) await upsertDays(trx, 'max', [...days.max.values()]);
  if (days.latest.size > 0) await upsertDays(trx, 'latest', [...days.latest.values()]);
  // In key order, for the same reason as the day rows.
  const byKey = <T extends { api_key_id: number }>(rows: Iterable<T>, second: (row: T) => string): T[] =>
    [...rows].toSorted((a, b) => a.api_key_id - b.api_key_id || (second(a) < second(b) ? -1 : 1));
  if (callsByPeriod.size > 0) await addPeriodUses(trx, byKey(callsByPeriod.values(), (row) => row.period_start));
  if (callsByDay.size > 0) await addDayUses(trx, byKey(callsByDay.values(), (row) => row.day));
}
