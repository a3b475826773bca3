// One metered event as track() takes it: checked here, where the caller can still be told (a TypeError naming the
// argument), and serialised once, so a retry resends the very bytes (same id, same timestamp) and a properties object
// the app changes afterwards changes nothing. The limits mirror what admin/usage/ingest accepts (docs/metering.md).
import { randomUUID } from 'node:crypto';

/** A meter's code on the plan: a lower-case letter, then up to 39 lower-case letters, digits or underscores. */
const METER_CODE = /^[a-z][a-z0-9_]{0,39}$/;
const MAX_KEY_LENGTH = 256;
/**
 * Tollgate refuses a request body nested deeper than 32 levels as a whole (a 400 for the batch); `{events: [{properties:
 * …}]}` leaves the bag 30 levels. A deeper bag is refused here rather than poison the batch it would travel in.
 */
export const MAX_PROPERTY_DEPTH = 30;
/** One event's JSON at most, so a batch of them fits a request (see MAX_BATCH_BYTES in event-queue.ts). */
export const MAX_EVENT_BYTES = 64 * 1024;

/** An event ready to send: its JSON and what an error report may name (never the key). */
export interface QueuedEvent {
  id: string;
  meter: string;
  json: string;
  /** UTF-8 bytes of `json`. */
  bytes: number;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/** A bad argument, shown in an error: a number or a short string as such, anything else by its type. */
function shown(value: unknown): string {
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') return JSON.stringify(value.slice(0, 60));
  return value === null ? 'null' : typeof value;
}

/** Whether objects or arrays nest more than `limit` levels (the bag is level 1); iterative, and ends on a cycle. */
function nestedDeeperThan(value: unknown, limit: number): boolean {
  const stack: Array<{ node: unknown; depth: number }> = [{ node: value, depth: 1 }];
  while (stack.length > 0) {
    const { node, depth } = stack.pop()!;
    if (typeof node !== 'object' || node === null) continue;
    if (depth > limit) return true;
    for (const child of Object.values(node)) stack.push({ node: child, depth: depth + 1 });
  }
  return false;
}

/** The event for `admin/usage/ingest`, with a fresh id and the current time; throws TypeError on bad arguments. */
export function shapeEvent(key: unknown, meter: unknown, value: unknown, properties: unknown): QueuedEvent {
  if (typeof key !== 'string' || key === '' || key.length > MAX_KEY_LENGTH) {
    throw new TypeError(`track: key must be an API key (a non-empty string of at most ${MAX_KEY_LENGTH} characters)`);
  }
  if (typeof meter !== 'string' || !METER_CODE.test(meter)) {
    throw new TypeError(`track: meter must be a meter's code on the plan (a lower-case letter, then up to 39 lower-case letters, digits or underscores), not ${shown(meter)}`);
  }
  // Tollgate takes whole numbers ≥ 0 (tokens, bytes, milliseconds) and refuses the event otherwise: say so now.
  if (value !== undefined && value !== null && !(typeof value === 'number' && Number.isSafeInteger(value) && value >= 0)) {
    throw new TypeError(`track: value must be a whole number ≥ 0 (or left out for a count meter), not ${shown(value)}`);
  }
  if (properties !== undefined && properties !== null) {
    if (!isPlainObject(properties)) throw new TypeError('track: properties must be a plain object');
    if (nestedDeeperThan(properties, MAX_PROPERTY_DEPTH)) throw new TypeError(`track: properties must not nest deeper than ${MAX_PROPERTY_DEPTH} levels`);
  }
  const id = randomUUID();
  const event = {
    id,
    key,
    meter,
    ...(typeof value === 'number' && { value }),
    timestamp: new Date().toISOString(),
    ...(isPlainObject(properties) && { properties }),
  };
  let json: string;
  try {
    json = JSON.stringify(event);
  } catch (error) {
    // a BigInt, or a toJSON that throws: JSON cannot carry it
    throw new TypeError(`track: properties cannot be sent as JSON (${error instanceof Error ? error.message : String(error)})`, { cause: error });
  }
  const bytes = Buffer.byteLength(json);
  if (bytes > MAX_EVENT_BYTES) throw new TypeError(`track: the event is ${bytes} bytes as JSON, more than ${MAX_EVENT_BYTES}; send smaller properties`);
  return { id, meter, json, bytes };
}
