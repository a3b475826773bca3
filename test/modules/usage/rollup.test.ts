// What ingestion measures (issue 23): the events a batch stores for the first time are folded into each meter's day
// rows in the same transaction (src/modules/usage/rollup.ts), and a period's quantity read from them
// (quantities.ts) equals lib/meters' aggregate() over the distinct events — whatever the batch splits, repeats,
// arrival order or filters. `calls` events are uses of a key; an event of a closed period is refused alone.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aggregate } from '../../../src/lib/meters/aggregate.ts';
import type { MeterEvent } from '../../../src/lib/meters/events.ts';
import { meterDays, periodQuantities } from '../../../src/modules/usage/quantities.ts';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { ingest, meteredOrder } from './helpers.ts';

/** mulberry32: a failure names its seed and replays. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let r = a;
    r = Math.imul(r ^ (r >>> 15), r | 1);
    r ^= r + Math.imul(r ^ (r >>> 7), r | 61);
    return ((r ^ (r >>> 14)) >>> 0) / 4294967296;
  };
}

const METERS = [
  { code: 'tokens', name: 'Tokens', unit: 'token', aggregation: 'sum' },
  { code: 'large_tokens', name: 'Large-model tokens', unit: 'token', aggregation: 'sum', filter: { model: 'large' } },
  { code: 'requests', name: 'Requests', unit: 'request', aggregation: 'count' },
  { code: 'users', name: 'Users', unit: 'user', aggregation: 'unique_count', property: 'user' },
  { code: 'peak', name: 'Peak', unit: 'request/s', aggregation: 'max' },
  { code: 'seats', name: 'Seats', unit: 'seat', aggregation: 'latest' },
] as const;

// Mid-month, so a week of backfill stays inside one calendar month (the default usage period).
const NOW = new Date(Date.UTC(2031, 4, 20, 12, 0, 0));

describe('usage rollups: what the meters measured', () => {
  let t: TestApp;
  let clientId: number;

  beforeAll(async () => {
    t = await createTestApp();
    clientId = (await t.createClient()).id;
  });
  afterAll(async () => {
    await t.close();
  });

  const period = '2031-05-01T00:00:00Z';

  it('random streams sent twice in different splits, shuffled: each meter equals aggregate() of the distinct events', async () => {
    for (const seed of [1, 2, 3]) {
      const random = rng(seed);
      const { orderId } = await meteredOrder(t, clientId, METERS);
      const events: Array<Record<string, unknown>> = [];
      for (let i = 0; i < 300; i++) {
        const meter = METERS[Math.floor(random() * METERS.length)]!;
        // Timestamps spread over the last six days, out of arrival order; a few share one instant.
        const at = new Date(NOW.getTime() - Math.floor(random() * 6 * 86_400) * 1000 - (i % 7 === 0 ? 0 : Math.floor(random() * 999))).toISOString();
        const properties = { model: random() < 0.5 ? 'large' : 'small', user: `u${Math.floor(random() * 40)}` };
        const event: Record<string, unknown> = { id: `s${seed}-${i}`, order_id: orderId, meter: meter.code, timestamp: at, properties };
        if (meter.aggregation !== 'count' && meter.aggregation !== 'unique_count') event.value = Math.floor(random() * 1000);
        events.push(event);
      }
      // First pass in batches of 37, then the same events again, reversed, in batches of 90: each counted once.
      for (let i = 0; i < events.length; i += 37) await t.services.usage.ingest(events.slice(i, i + 37), NOW);
      const again = events.toReversed();
      let duplicates = 0;
      for (let i = 0; i < again.length; i += 90) duplicates += (await t.services.usage.ingest(again.slice(i, i + 90), NOW)).duplicates;
      expect(duplicates).toBe(events.length);

      const quantities = await periodQuantities(t.services.db, orderId, period, METERS);
      for (const meter of METERS) {
        const own: MeterEvent[] = events
          .filter((event) => event.meter === meter.code)
          .map((event) => ({ value: event.value as number | undefined, timestamp: Date.parse(event.timestamp as string), properties: event.properties as Record<string, unknown> }));
        expect(quantities.get(meter.code), `seed ${seed}, meter ${meter.code}`).toBe(aggregate(meter, own));
      }
    }
  });

  it('latest takes the value of the latest timestamp, not of the last arrival; max the greatest', async () => {
    const { orderId } = await meteredOrder(t, clientId, METERS);
    const at = (hours: number) => new Date(NOW.getTime() - hours * 3600_000).toISOString();
    await t.services.usage.ingest([{ id: 'l1', order_id: orderId, meter: 'seats', value: 7, timestamp: at(1) }], NOW);
    await t.services.usage.ingest([{ id: 'l2', order_id: orderId, meter: 'seats', value: 3, timestamp: at(30) }], NOW);
    await t.services.usage.ingest([{ id: 'p1', order_id: orderId, meter: 'peak', value: 40, timestamp: at(50) }, { id: 'p2', order_id: orderId, meter: 'peak', value: 12, timestamp: at(1) }], NOW);
    const quantities = await periodQuantities(t.services.db, orderId, period, METERS);
    expect(quantities.get('seats')).toBe(7);
    expect(quantities.get('peak')).toBe(40);
  });

  it('a filtered meter counts only matching events; the events outside it are still stored (and still idempotent)', async () => {
    const { orderId } = await meteredOrder(t, clientId, METERS);
    const answer = await t.services.usage.ingest(
      [
        { id: 'f1', order_id: orderId, meter: 'large_tokens', value: 100, properties: { model: 'large' } },
        { id: 'f2', order_id: orderId, meter: 'large_tokens', value: 50, properties: { model: 'small' } },
        { id: 'f3', order_id: orderId, meter: 'large_tokens', value: 25 },
      ],
      NOW,
    );
    expect(answer).toEqual({ accepted: 3, duplicates: 0, rejected: [] });
    expect((await periodQuantities(t.services.db, orderId, period, METERS)).get('large_tokens')).toBe(100);
  });

  it('a unique value counts on the day it is first seen in the period; the daily series adds up to the period', async () => {
    const { orderId } = await meteredOrder(t, clientId, METERS);
    const day = (n: number) => new Date(Date.UTC(2031, 4, 15 + n, 9)).toISOString();
    await t.services.usage.ingest(
      [
        { id: 'u1', order_id: orderId, meter: 'users', properties: { user: 'ann' }, timestamp: day(0) },
        { id: 'u2', order_id: orderId, meter: 'users', properties: { user: 'ann' }, timestamp: day(1) },
        { id: 'u3', order_id: orderId, meter: 'users', properties: { user: 'bob' }, timestamp: day(1) },
        { id: 'u4', order_id: orderId, meter: 'users', properties: { user: 'x'.repeat(500) }, timestamp: day(2) },
        { id: 'u5', order_id: orderId, meter: 'users', properties: { user: 'x'.repeat(500) }, timestamp: day(2) },
        { id: 't1', order_id: orderId, meter: 'tokens', value: 10, timestamp: day(0) },
        { id: 't2', order_id: orderId, meter: 'tokens', value: 5, timestamp: day(2) },
      ],
      NOW,
    );
    const days = await meterDays(t.services.db, orderId, '2031-05-15', '2031-05-20', METERS);
    expect(days).toEqual([
      { meter: 'tokens', day: '2031-05-15', quantity: 10 },
      { meter: 'users', day: '2031-05-15', quantity: 1 },
      { meter: 'users', day: '2031-05-16', quantity: 1 },
      { meter: 'tokens', day: '2031-05-17', quantity: 5 },
      { meter: 'users', day: '2031-05-17', quantity: 1 },
    ]);
    expect((await periodQuantities(t.services.db, orderId, period, METERS)).get('users')).toBe(3);
  });

  it('a backfilled event lands in the period of its timestamp, not of its arrival', async () => {
    const { orderId } = await meteredOrder(t, clientId, METERS);
    const early = new Date(Date.UTC(2031, 5, 2, 8)); // 2 June: a week back reaches into May
    await t.services.usage.ingest(
      [
        { id: 'b-may', order_id: orderId, meter: 'tokens', value: 300, timestamp: '2031-05-30T10:00:00Z' },
        { id: 'b-june', order_id: orderId, meter: 'tokens', value: 7 },
      ],
      early,
    );
    expect((await periodQuantities(t.services.db, orderId, period, METERS)).get('tokens')).toBe(300);
    expect((await periodQuantities(t.services.db, orderId, '2031-06-01T00:00:00Z', METERS)).get('tokens')).toBe(7);
  });

  it('an event for a closed period is refused with PERIOD_CLOSED, alone; the others are stored and measured', async () => {
    const { orderId } = await meteredOrder(t, clientId, METERS);
    const client = await t.services.db.selectFrom('orders').select('client_id').where('id', '=', orderId).executeTakeFirstOrThrow();
    await t.services.db
      .insertInto('usage_closes')
      .values({ order_id: orderId, client_id: client.client_id, period_start: period, period_end: '2031-06-01T00:00:00Z', used: 0, included: null, overage_units: 0, amount: 0, invoice_id: null, created_at: '2031-06-01T00:00:10Z' })
      .execute();
    const june = new Date(Date.UTC(2031, 5, 3, 8));
    const answer = await t.services.usage.ingest(
      [
        { id: 'c-may', order_id: orderId, meter: 'tokens', value: 300, timestamp: '2031-05-31T23:59:59Z' },
        { id: 'c-june', order_id: orderId, meter: 'tokens', value: 9 },
      ],
      june,
    );
    expect(answer).toEqual({ accepted: 1, duplicates: 0, rejected: [{ index: 0, code: 'PERIOD_CLOSED', message: expect.any(String) }] });
    expect((await periodQuantities(t.services.db, orderId, period, METERS)).get('tokens')).toBe(0);
    const stored = await t.services.db.selectFrom('usage_events').select('event_id').where('order_id', '=', orderId).execute();
    expect(stored.map((row) => row.event_id)).toEqual(['c-june']);
  });

  it('calls events are uses of the key (or of the order\'s first live key), in its period and its day, once', async () => {
    const { orderId, key, keyId } = await meteredOrder(t, clientId, METERS);
    const events = [
      { id: 'k1', key, meter: 'calls' },
      { id: 'k2', order_id: orderId, meter: 'calls' },
      { id: 'k3', order_id: orderId, meter: 'calls' },
    ];
    expect(await ingest(t, events)).toEqual({ accepted: 3, duplicates: 0, rejected: [] });
    expect(await ingest(t, events)).toEqual({ accepted: 0, duplicates: 3, rejected: [] });
    const periods = await t.services.db.selectFrom('api_key_period_usage').select(['api_key_id', 'count']).where('api_key_id', '=', keyId).execute();
    expect(periods.map((row) => Number(row.count))).toEqual([3]);
    const days = await t.services.db.selectFrom('api_key_usage').select('count').where('api_key_id', '=', keyId).execute();
    expect(days.map((row) => row.count)).toEqual([3]);
  });

  it('listeners hear what a batch measured, after it committed, once per order and period; a failing one fails nothing', async () => {
    const { orderId } = await meteredOrder(t, clientId, METERS);
    const heard: unknown[] = [];
    t.services.usage.onMeasured((measured) => {
      heard.push(...measured.filter((entry) => entry.orderId === orderId));
    });
    t.services.usage.onMeasured(() => {
      throw new Error('a broken listener');
    });
    const events = [
      { id: 'm1', order_id: orderId, meter: 'tokens', value: 5 },
      { id: 'm2', order_id: orderId, meter: 'requests' },
      { id: 'm3', order_id: orderId, meter: 'tokens', value: 1, timestamp: '2031-05-31T10:00:00Z' },
    ];
    expect(await t.services.usage.ingest(events, new Date(Date.UTC(2031, 5, 2)))).toEqual({ accepted: 3, duplicates: 0, rejected: [] });
    expect(heard).toEqual([
      { orderId, periodStart: '2031-06-01T00:00:00Z', periodEnd: '2031-07-01T00:00:00Z', meters: ['tokens', 'requests'], mayAlert: false },
      { orderId, periodStart: '2031-05-01T00:00:00Z', periodEnd: '2031-06-01T00:00:00Z', meters: ['tokens'], mayAlert: false },
    ]);
    // A plan with included units (or a batch with calls) may have alerts due: the listeners are told so.
    const included = await meteredOrder(t, clientId, [{ code: 'tokens', name: 'Tokens', unit: 'token', aggregation: 'sum', included: 10 }]);
    const alerting: unknown[] = [];
    t.services.usage.onMeasured((measured) => {
      alerting.push(...measured.filter((entry) => entry.orderId === included.orderId || entry.orderId === orderId).map((entry) => [entry.orderId, entry.mayAlert]));
    });
    await t.services.usage.ingest([{ id: 'i1', order_id: included.orderId, meter: 'tokens', value: 1 }, { id: 'c1', order_id: orderId, meter: 'calls' }], new Date(Date.UTC(2031, 5, 2)));
    expect(alerting).toEqual([[included.orderId, true], [orderId, true]]);
    // Duplicates measured nothing: nobody is told.
    heard.length = 0;
    await t.services.usage.ingest(events, new Date(Date.UTC(2031, 5, 2)));
    expect(heard).toEqual([]);
  });
});
