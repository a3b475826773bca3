// The checks of one ingested event that need no database: its id, whom it names, its value, its timestamp and its
// properties; then, once its order's plan is known, whether it fits the meter it names. Each failure is a rejection
// of that event alone (code + message), never of the batch: ingestion reports it and goes on with the others.
import type { IngestMeter } from './order-plans.ts';

export const MAX_EVENT_ID_LENGTH = 128;
/** Backfill reaches a week back (an event lands in the usage period of its timestamp). */
export const MAX_PAST_MS = 7 * 24 * 3600 * 1000;
/** Clocks drift: a sender's clock may run this far ahead of ours. */
export const MAX_FUTURE_MS = 5 * 60 * 1000;
/** A property bag nested deeper than this is refused (a guard against pathological JSON, not a modelling limit). */
export const MAX_PROPERTY_DEPTH = 32;

/** The per-event rejection codes of `admin/usage/ingest`. */
export type RejectionCode =
  | 'INVALID_ID'
  | 'INVALID_TARGET'
  | 'UNKNOWN_KEY'
  | 'UNKNOWN_ORDER'
  | 'CLIENT_INACTIVE'
  | 'UNKNOWN_METER'
  | 'INVALID_VALUE'
  | 'VALUE_NOT_ALLOWED'
  | 'VALUE_REQUIRED'
  | 'INVALID_TIMESTAMP'
  | 'TIMESTAMP_OUT_OF_WINDOW'
  | 'INVALID_PROPERTIES'
  | 'PROPERTY_REQUIRED'
  | 'PERIOD_CLOSED';

export interface Rejection {
  code: RejectionCode;
  message: string;
}

/** An event whose own fields are sound; `key` or `orderId` (exactly one) names its order. */
export interface SoundEvent {
  id: string;
  key: string | null;
  orderId: number | null;
  meter: string;
  value: number | null;
  /** ISO 8601 UTC with milliseconds. */
  timestamp: string;
  properties: Record<string, unknown> | null;
}

const reject = (code: RejectionCode, message: string): Rejection => ({ code, message });

// ISO 8601 date and time with an explicit offset: a time without one would mean whatever zone the sender was in.
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})$/i;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Whether `value` nests objects or arrays more than `limit` levels deep (the bag itself is level 1). Iterative: a hostile bag cannot overflow the stack. */
function nestedDeeperThan(value: unknown, limit: number): boolean {
  const stack: Array<{ node: unknown; depth: number }> = [{ node: value, depth: 1 }];
  while (stack.length > 0) {
    const { node, depth } = stack.pop() as { node: unknown; depth: number };
    if (typeof node !== 'object' || node === null) continue;
    if (depth > limit) return true;
    for (const child of Object.values(node)) stack.push({ node: child, depth: depth + 1 });
  }
  return false;
}

function timestampOf(raw: unknown, now: number): string | Rejection {
  if (raw === undefined || raw === null) return new Date(now).toISOString();
  const time = typeof raw === 'string' && ISO_INSTANT.test(raw) ? Date.parse(raw) : Number.NaN;
  if (Number.isNaN(time)) return reject('INVALID_TIMESTAMP', 'timestamp must be an ISO 8601 date and time with a zone, e.g. 2026-11-26T10:00:00Z');
  if (time < now - MAX_PAST_MS) return reject('TIMESTAMP_OUT_OF_WINDOW', 'timestamp is more than 7 days in the past');
  if (time > now + MAX_FUTURE_MS) return reject('TIMESTAMP_OUT_OF_WINDOW', 'timestamp is more than 5 minutes in the future');
  return new Date(time).toISOString();
}

/** The event's own fields, checked and normalised; `now` in ms since the epoch. */
export function soundEvent(raw: Record<string, unknown>, now: number): SoundEvent | Rejection {
  const { id, key, order_id: orderId, meter, value, properties } = raw;
  if (typeof id !== 'string' || id.length === 0 || id.length > MAX_EVENT_ID_LENGTH) {
    return reject('INVALID_ID', `id must be a string of 1 to ${MAX_EVENT_ID_LENGTH} characters`);
  }
  const hasKey = key !== undefined && key !== null;
  const hasOrder = orderId !== undefined && orderId !== null;
  if (hasKey === hasOrder) return reject('INVALID_TARGET', 'name the order by exactly one of key and order_id');
  if (hasKey && (typeof key !== 'string' || key.length === 0 || key.length > 256)) return reject('INVALID_TARGET', 'key must be an API key');
  if (hasOrder && (typeof orderId !== 'number' || !Number.isSafeInteger(orderId) || orderId < 1)) {
    return reject('INVALID_TARGET', 'order_id must be a positive integer');
  }
  if (typeof meter !== 'string' || meter.length === 0 || meter.length > 40) return reject('UNKNOWN_METER', 'meter must be the code of a meter on the plan');
  if (value !== undefined && value !== null) {
    // JSON has no NaN or Infinity, but 1e999 parses as Infinity: refused here rather than stored. Whole numbers only
    // (tokens, bytes, milliseconds): their sums are exact in any order, which fractional sums are not (lib/meters).
    if (typeof value !== 'number' || !Number.isFinite(value)) return reject('INVALID_VALUE', 'value must be a finite number');
    if (value < 0) return reject('INVALID_VALUE', 'value must not be negative');
    if (!Number.isSafeInteger(value)) return reject('INVALID_VALUE', 'value must be a whole number (count tokens, bytes or milliseconds) below 2^53');
  }
  if (properties !== undefined && properties !== null) {
    if (!isPlainObject(properties)) return reject('INVALID_PROPERTIES', 'properties must be an object');
    if (nestedDeeperThan(properties, MAX_PROPERTY_DEPTH)) return reject('INVALID_PROPERTIES', `properties must not nest deeper than ${MAX_PROPERTY_DEPTH} levels`);
  }
  const timestamp = timestampOf(raw.timestamp, now);
  if (typeof timestamp !== 'string') return timestamp;
  return {
    id,
    key: typeof key === 'string' ? key : null,
    orderId: typeof orderId === 'number' ? orderId : null,
    meter,
    value: typeof value === 'number' ? value : null,
    timestamp,
    properties: isPlainObject(properties) ? properties : null,
  };
}

/** Whether the event fits its meter's aggregation: null when it does. */
export function meterRejection(event: SoundEvent, rule: IngestMeter): Rejection | null {
  switch (rule.aggregation) {
    case 'count':
      // A count meter counts events; a value would be silently ignored, which hides a sender's mistake.
      return event.value === null ? null : reject('VALUE_NOT_ALLOWED', `meter ${rule.code} counts events and takes no value`);
    case 'sum':
    case 'max':
    case 'latest':
      return event.value !== null ? null : reject('VALUE_REQUIRED', `meter ${rule.code} (${rule.aggregation}) needs a value`);
    case 'unique_count': {
      const property = rule.property ?? '';
      const counted = event.properties?.[property];
      if (typeof counted === 'string' || (typeof counted === 'number' && Number.isFinite(counted)) || typeof counted === 'boolean') return null;
      return reject('PROPERTY_REQUIRED', `meter ${rule.code} counts distinct properties.${property}: it must be a string, number or boolean`);
    }
    default:
      return null;
  }
}
