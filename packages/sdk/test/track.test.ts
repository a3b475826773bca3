// tollgate.track() against a real Tollgate process (issue 23 item 6): events arrive once, in batches of at most 1,000;
// a batch that failed (503, connection cut before or after Tollgate stored it, an answer slower than timeoutMs) is
// sent again with the same ids and stored once; per-event rejections reach onError once per code and are not retried;
// a batch refused as a whole is dropped (413 splits it first); close() flushes; the queue is bounded; bad arguments
// are a TypeError. The SDK uses a verifier token, as apps do. A proxy (proxy.ts) sits between the SDK and Tollgate.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { Tollgate, TollgateEventRejection, TollgateEventsDropped, TollgateHttpError, type TollgateOptions } from '../src/index.ts';
import { startIngestProxy, type IngestProxy } from './proxy.ts';
import { sellKey, startTollgate, type TollgateProcess } from './server.ts';
import { storedEvents } from './stored-events.ts';

const METERS = [
  { code: 'tokens', name: 'Tokens', unit: 'token', aggregation: 'sum' },
  { code: 'requests', name: 'Requests', unit: 'request', aggregation: 'count' },
  { code: 'users', name: 'Users', unit: 'user', aggregation: 'unique_count', property: 'user' },
];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let server: TollgateProcess;
let proxy: IngestProxy;
let verifierToken: string;
const clients: Tollgate[] = [];

interface Reported {
  error: unknown;
  what: string;
}

/** An SDK through the proxy with the verifier token; reports land in the returned list. Nothing is sent on a timer. */
function sdk(options: Partial<TollgateOptions> = {}): { tollgate: Tollgate; reported: Reported[] } {
  const reported: Reported[] = [];
  const tollgate = new Tollgate({ baseUrl: proxy.url, token: verifierToken, reportIntervalMs: 60_000, onError: (error, what) => reported.push({ error, what }), ...options });
  clients.push(tollgate);
  return { tollgate, reported };
}

const meteredKey = () => sellKey(server, { meters: METERS });
const idsOf = (events: Array<Record<string, unknown>>) => events.map((event) => String(event.id)).toSorted((a, b) => a.localeCompare(b));
/** The stored values of an order's events, ascending. */
const storedValues = (orderId: number) => storedEvents(server, orderId).map((row) => row.value ?? 0).toSorted((a, b) => a - b);

beforeAll(async () => {
  server = await startTollgate();
  proxy = await startIngestProxy(() => server.baseUrl);
  verifierToken = ((await server.admin('staff/verifier_create', { name: 'SDK metering' })).result as { token: string }).token;
}, 180_000);
afterEach(async () => {
  proxy.decide = () => 'pass';
  await Promise.all(clients.splice(0).map((client) => client.close()));
});
afterAll(async () => {
  await proxy?.close();
  await server?.stop();
});

describe('track', () => {
  it('sends each tracked event once, with a generated id, the current time, its value and properties', async () => {
    const { key, orderId } = await meteredKey();
    const { tollgate, reported } = sdk();
    const before = Date.now();
    tollgate.track(key, 'tokens', 1532, { model: 'large' });
    tollgate.track(key, 'requests');
    tollgate.track(key, 'users', undefined, { user: 'u-981' });
    expect(tollgate.queuedEvents).toBe(3);
    await tollgate.flush();
    expect(tollgate.queuedEvents).toBe(0);
    const rows = storedEvents(server, orderId);
    expect(rows.map(({ meter, value, properties }) => ({ meter, value, properties }))).toEqual(
      expect.arrayContaining([
        { meter: 'tokens', value: 1532, properties: { model: 'large' } },
        { meter: 'requests', value: null, properties: null },
        { meter: 'users', value: null, properties: { user: 'u-981' } },
      ]),
    );
    expect(rows).toHaveLength(3);
    for (const row of rows) {
      expect(row.event_id).toMatch(UUID);
      expect(Date.parse(row.timestamp)).toBeGreaterThanOrEqual(before - 1);
      expect(Date.parse(row.timestamp)).toBeLessThanOrEqual(Date.now());
    }
    expect(new Set(rows.map((row) => row.event_id)).size).toBe(3);
    // Nothing left to send: a second flush makes no request.
    const requests = proxy.ingests.length;
    await tollgate.flush();
    expect(proxy.ingests.length).toBe(requests);
    expect(reported).toEqual([]);
  });

  it('sends 2,500 events as requests of at most 1,000, and large events in requests under 1 MB', async () => {
    const { key, orderId } = await meteredKey();
    const { tollgate } = sdk();
    const first = proxy.ingests.length;
    for (let i = 0; i < 2500; i++) tollgate.track(key, 'tokens', i);
    await tollgate.flush();
    expect(proxy.ingests.slice(first).map((events) => events.length)).toEqual([1000, 1000, 500]);
    expect(storedEvents(server, orderId)).toHaveLength(2500);

    // 20 events of ~60 KB each: one request would be 1.2 MB, past Tollgate's body limit.
    const big = await meteredKey();
    const start = proxy.ingests.length;
    for (let i = 0; i < 20; i++) tollgate.track(big.key, 'tokens', 1, { blob: 'x'.repeat(60_000) });
    await tollgate.flush();
    const sent = proxy.ingests.slice(start);
    expect(sent.length).toBeGreaterThanOrEqual(3);
    for (const events of sent) expect(JSON.stringify({ events }).length).toBeLessThan(600_000);
    expect(storedEvents(server, big.orderId)).toHaveLength(20);
  });

  it.each([
    ['a 503', { status: 503 }],
    ['a 429', { status: 429 }],
    ['the connection cut before Tollgate saw the batch', 'cut-before'],
    ['the connection cut after Tollgate stored the batch (answer lost)', 'cut-after'],
    ['an answer slower than timeoutMs (Tollgate stored the batch)', { slowMs: 800 }],
  ] as const)('after %s, sends the batch again with the same ids, and Tollgate stores each event once', async (_name, failure) => {
    const { key, orderId } = await meteredKey();
    const { tollgate, reported } = sdk({ timeoutMs: 400 });
    for (let i = 1; i <= 4; i++) tollgate.track(key, 'tokens', i * 10);
    tollgate.track(key, 'users', undefined, { user: 'u-1' });
    let attempts = 0;
    proxy.decide = () => (attempts++ === 0 ? failure : 'pass');
    const first = proxy.ingests.length;

    await tollgate.flush();
    expect(tollgate.queuedEvents, 'kept for the next flush').toBe(5);
    expect(reported).toHaveLength(1);
    expect(reported[0]!.what).toBe('usage events');
    if (typeof failure === 'object' && 'status' in failure) expect(reported[0]!.error).toMatchObject({ status: failure.status });

    await tollgate.flush();
    expect(tollgate.queuedEvents).toBe(0);
    const [tried, retried] = proxy.ingests.slice(first);
    expect(retried, 'the very same events: ids, values, timestamps').toEqual(tried);
    const rows = storedEvents(server, orderId);
    expect(rows.map((row) => row.event_id).toSorted((a, b) => a.localeCompare(b))).toEqual(idsOf(tried!));
    expect(rows.reduce((sum, row) => sum + (row.value ?? 0), 0)).toBe(100);
    expect(reported).toHaveLength(1);
  });

  it('keeps retrying a failed batch on each flush (stopping at it, so later batches wait their turn)', async () => {
    const { key, orderId } = await meteredKey();
    const { tollgate } = sdk();
    for (let i = 0; i < 1500; i++) tollgate.track(key, 'requests');
    proxy.decide = () => ({ status: 502 });
    const first = proxy.ingests.length;
    await tollgate.flush();
    await tollgate.flush();
    expect(proxy.ingests.length - first, 'one try of the first batch per flush').toBe(2);
    proxy.decide = () => 'pass';
    await tollgate.flush();
    expect(storedEvents(server, orderId)).toHaveLength(1500);
  });

  it('reports per-event rejections to onError once per code, with the events (never the key), and does not send them again', async () => {
    const { key, orderId } = await meteredKey();
    const { tollgate, reported } = sdk();
    tollgate.track(key, 'nope', 1);
    tollgate.track(key, 'tokens', 5);
    tollgate.track(key, 'nope', 2);
    tollgate.track('FFFFFFFF-FFFFFFFF-FFFFFFFF-FFFFFFFF', 'tokens', 1);
    tollgate.track(key, 'requests', 3);
    tollgate.track(key, 'users', undefined, { other: 'x' });
    await tollgate.flush();
    const sent = proxy.ingests.at(-1)!;
    expect(storedEvents(server, orderId).map((row) => row.value)).toEqual([5]);
    expect(reported.map(({ what }) => what)).toEqual(Array(4).fill('usage event rejected'));
    const byCode = new Map(reported.map(({ error }) => [(error as TollgateEventRejection).code, error as TollgateEventRejection]));
    expect([...byCode.keys()].toSorted()).toEqual(['PROPERTY_REQUIRED', 'UNKNOWN_KEY', 'UNKNOWN_METER', 'VALUE_NOT_ALLOWED']);
    expect(byCode.get('UNKNOWN_METER')).toBeInstanceOf(TollgateEventRejection);
    expect(byCode.get('UNKNOWN_METER')!.events).toEqual([
      { id: sent[0]!.id, meter: 'nope' },
      { id: sent[2]!.id, meter: 'nope' },
    ]);
    expect(byCode.get('UNKNOWN_METER')!.message).toMatch(/^Tollgate rejected 2 usage events with UNKNOWN_METER: /);
    expect(byCode.get('UNKNOWN_KEY')!.events).toEqual([{ id: sent[3]!.id, meter: 'tokens' }]);
    expect(JSON.stringify(reported.map(({ error }) => [String(error), (error as TollgateEventRejection).events]))).not.toContain(key);
    expect(tollgate.queuedEvents).toBe(0);
    const requests = proxy.ingests.length;
    await tollgate.flush();
    expect(proxy.ingests.length, 'rejected events are not sent again').toBe(requests);
  });

  it('drops a batch Tollgate refuses as a whole (404 from a Tollgate without ingestion) and reports it', async () => {
    const { key, orderId } = await meteredKey();
    const { tollgate, reported } = sdk();
    tollgate.track(key, 'requests');
    proxy.decide = () => ({ status: 404 });
    await tollgate.flush();
    expect(tollgate.queuedEvents).toBe(0);
    expect(reported).toEqual([{ what: 'usage events refused', error: expect.any(TollgateHttpError) }]);
    proxy.decide = () => 'pass';
    tollgate.track(key, 'tokens', 7);
    await tollgate.flush();
    expect(storedEvents(server, orderId).map((row) => row.value)).toEqual([7]);
  });

  it('splits a batch answered 413 (a smaller body limit) down to what passes; a single event answered 413 is dropped', async () => {
    const { key, orderId } = await meteredKey();
    const { tollgate, reported } = sdk();
    for (let i = 1; i <= 5; i++) tollgate.track(key, 'tokens', i);
    proxy.decide = (events) => (events.length > 2 ? { status: 413 } : 'pass');
    const first = proxy.ingests.length;
    await tollgate.flush();
    expect(proxy.ingests.slice(first).map((events) => events.length)).toEqual([5, 3, 2, 1, 2]);
    expect(storedValues(orderId)).toEqual([1, 2, 3, 4, 5]);
    expect(reported).toEqual([]);

    proxy.decide = () => ({ status: 413 });
    tollgate.track(key, 'tokens', 6);
    await tollgate.flush();
    expect(tollgate.queuedEvents).toBe(0);
    expect(reported).toEqual([{ what: 'usage events refused', error: expect.objectContaining({ status: 413 }) }]);
  });

  it('reports a refused token like verify does, and keeps the events (the token may be re-enabled)', async () => {
    const { key } = await meteredKey();
    const { tollgate, reported } = sdk({ token: 'not-a-verifier-token' });
    tollgate.track(key, 'requests');
    await tollgate.flush();
    // (The events stream is refused too, under its own name.)
    expect(reported.filter(({ what }) => what !== 'events stream')).toEqual([{ what: 'verifier token refused', error: expect.objectContaining({ status: 401 }) }]);
    expect(tollgate.queuedEvents).toBe(1);

    // A 403 (a staff token without usage.ingest) is the same configuration error.
    const forbidden = sdk();
    forbidden.tollgate.track(key, 'requests');
    proxy.decide = () => ({ status: 403 });
    await forbidden.tollgate.flush();
    expect(forbidden.reported).toEqual([{ what: 'verifier token refused', error: expect.objectContaining({ status: 403 }) }]);
    expect(forbidden.tollgate.queuedEvents).toBe(1);
  });

  it('close() sends what is queued; what it cannot send is reported as dropped; track after close is reported, not thrown', async () => {
    const { key, orderId } = await meteredKey();
    const { tollgate, reported } = sdk();
    for (let i = 0; i < 10; i++) tollgate.track(key, 'requests');
    await tollgate.close();
    expect(storedEvents(server, orderId)).toHaveLength(10);
    expect(reported).toEqual([]);
    tollgate.track(key, 'requests');
    expect(reported).toEqual([{ what: 'usage events dropped', error: expect.any(TollgateEventsDropped) }]);
    expect((reported[0]!.error as TollgateEventsDropped).count).toBe(1);

    // One last try, against a Tollgate that answers 503: close() ends and says how many were lost.
    const down = sdk();
    for (let i = 0; i < 3; i++) down.tollgate.track(key, 'requests');
    proxy.decide = () => ({ status: 503 });
    const started = Date.now();
    await down.tollgate.close();
    expect(Date.now() - started).toBeLessThan(2000);
    const dropped = down.reported.find(({ what }) => what === 'usage events dropped')?.error;
    expect(dropped).toBeInstanceOf(TollgateEventsDropped);
    expect((dropped as TollgateEventsDropped).count).toBe(3);
    expect(down.tollgate.queuedEvents).toBe(0);
  });

  it('keeps events tracked while a batch is in flight out of it: sent next, once; the bound never cuts the batch in flight', async () => {
    const { key, orderId } = await meteredKey();
    const { tollgate, reported } = sdk({ maxQueuedEvents: 4 });
    for (let i = 1; i <= 3; i++) tollgate.track(key, 'tokens', i);
    proxy.decide = () => ({ slowMs: 300 });
    const first = proxy.ingests.length;
    const flushing = tollgate.flush();
    await expect.poll(() => proxy.ingests.length, { timeout: 2000, interval: 5 }).toBe(first + 1);
    // In flight: 1, 2, 3 (counted in the bound of 4), so of 10 and 20 only the newest can wait.
    tollgate.track(key, 'tokens', 10);
    tollgate.track(key, 'tokens', 20);
    expect(tollgate.queuedEvents).toBe(4);
    await flushing;
    expect(proxy.ingests.slice(first).map((events) => events.map((event) => event.value))).toEqual([[1, 2, 3], [20]]);
    expect(storedValues(orderId)).toEqual([1, 2, 3, 20]);
    expect(reported.map(({ what }) => what)).toEqual(['usage events dropped']);
  });

  it('flushes tracked events every reportIntervalMs', async () => {
    const { key, orderId } = await meteredKey();
    const { tollgate } = sdk({ reportIntervalMs: 100 });
    tollgate.track(key, 'requests');
    await expect.poll(() => storedEvents(server, orderId).length, { timeout: 3000, interval: 50 }).toBe(1);
  });

  it('bounds the queue: past maxQueuedEvents the oldest events go, and onError says how many', async () => {
    const { key, orderId } = await meteredKey();
    const { tollgate, reported } = sdk({ maxQueuedEvents: 5 });
    proxy.decide = () => 'cut-before';
    for (let i = 1; i <= 3; i++) tollgate.track(key, 'tokens', i);
    await tollgate.flush(); // fails: the three wait
    for (let i = 4; i <= 8; i++) tollgate.track(key, 'tokens', i);
    expect(tollgate.queuedEvents).toBe(5);
    proxy.decide = () => 'pass';
    await tollgate.flush();
    expect(storedValues(orderId)).toEqual([4, 5, 6, 7, 8]);
    const dropped = reported.filter(({ what }) => what === 'usage events dropped');
    expect(dropped).toHaveLength(1);
    expect((dropped[0]!.error as TollgateEventsDropped).count).toBe(3);
    expect(String(dropped[0]!.error)).toContain('more than 5 events waited');
  });

  it('refuses bad arguments with a TypeError naming them, and queues nothing', () => {
    const { tollgate } = sdk();
    const deep: Record<string, unknown> = {};
    let node = deep;
    for (let i = 0; i < 30; i++) node = node.next = {};
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    const bad: Array<[string, () => void, RegExp]> = [
      ['empty key', () => tollgate.track('', 'tokens', 1), /key must be an API key/],
      ['key not a string', () => tollgate.track(42 as unknown as string, 'tokens', 1), /key must be an API key/],
      ['key too long', () => tollgate.track('K'.repeat(257), 'tokens', 1), /key must be an API key/],
      ['meter with capitals', () => tollgate.track('KEY', 'Tokens', 1), /meter must be .* not "Tokens"/],
      ['meter missing', () => tollgate.track('KEY', undefined as unknown as string), /meter must be .* not undefined/],
      ['negative value', () => tollgate.track('KEY', 'tokens', -1), /value must be a whole number ≥ 0 .* not -1/],
      ['fractional value', () => tollgate.track('KEY', 'tokens', 1.5), /value must be a whole number/],
      ['NaN', () => tollgate.track('KEY', 'tokens', Number.NaN), /value must be a whole number/],
      ['Infinity', () => tollgate.track('KEY', 'tokens', Infinity), /value must be a whole number/],
      ['value as text', () => tollgate.track('KEY', 'tokens', '5' as unknown as number), /value must be a whole number .* not "5"/],
      ['properties a list', () => tollgate.track('KEY', 'users', undefined, ['u'] as unknown as Record<string, unknown>), /properties must be a plain object/],
      ['properties a Date', () => tollgate.track('KEY', 'users', undefined, new Date() as unknown as Record<string, unknown>), /properties must be a plain object/],
      ['properties 31 levels deep', () => tollgate.track('KEY', 'users', undefined, deep), /nest deeper than 30/],
      ['properties cyclic', () => tollgate.track('KEY', 'users', undefined, cyclic), /nest deeper than 30/],
      ['properties with a BigInt', () => tollgate.track('KEY', 'users', undefined, { n: 1n }), /cannot be sent as JSON/],
      ['event over 64 KiB', () => tollgate.track('KEY', 'users', undefined, { blob: 'x'.repeat(70_000) }), /more than 65536/],
    ];
    for (const [name, call, message] of bad) {
      expect(call, name).toThrow(TypeError);
      expect(call, name).toThrow(message);
    }
    expect(tollgate.queuedEvents).toBe(0);
    // 30 levels is fine (the deepest bag Tollgate's body limit lets through).
    tollgate.track('KEY', 'users', undefined, (deep.next as Record<string, unknown>));
    expect(tollgate.queuedEvents).toBe(1);
    for (const maxQueuedEvents of [0, -1, 1.5, Number.NaN]) {
      expect(() => new Tollgate({ baseUrl: proxy.url, token: 't', maxQueuedEvents }), String(maxQueuedEvents)).toThrow(/maxQueuedEvents must be a whole number/);
    }
  });

  it('the default onError logs each rejection code once, however many batches repeat it', async () => {
    const { key } = await meteredKey();
    const lines: string[] = [];
    vi.spyOn(console, 'error').mockImplementation((line: unknown) => void lines.push(String(line)));
    try {
      const { tollgate } = sdk({ onError: undefined });
      for (let round = 0; round < 3; round++) {
        tollgate.track(key, 'nope', 1);
        tollgate.track(key, 'requests', 1);
        await tollgate.flush();
      }
      const rejected = lines.filter((line) => line.includes('usage event rejected'));
      expect(rejected).toHaveLength(2);
      expect(rejected.join('\n')).toContain('UNKNOWN_METER');
      expect(rejected.join('\n')).toContain('VALUE_NOT_ALLOWED');
      expect(lines.join('\n')).not.toContain(key);
    } finally {
      vi.restoreAllMocks();
    }
  });

  it('snapshots an event when tracked: changing the properties object afterwards changes nothing', async () => {
    const { key, orderId } = await meteredKey();
    const { tollgate } = sdk();
    const properties: Record<string, unknown> = { user: 'first' };
    tollgate.track(key, 'users', undefined, properties);
    properties.user = 'second';
    await tollgate.flush();
    expect(storedEvents(server, orderId).map((row) => row.properties)).toEqual([{ user: 'first' }]);
  });
});
