// client and admin serviceapikey/usage with the plan's meters (issue 23 item 4): each meter's measure on every day of
// the range (0 where nothing was measured, null on a `latest` meter nobody reported that day) and its figures this
// usage period, beside the calls series, which stays as it was; the failure paths (parameters, roles, another client's
// order) answer as they did.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectError, expectInvalid } from '../../helpers/assertions.ts';
import { buyKey, createPlan, staffToken } from '../../helpers/apikey.ts';

type Client = Awaited<ReturnType<TestApp['createClient']>>;

const METERS = [
  { code: 'tokens', name: 'Tokens', unit: 'token', aggregation: 'sum', included: 1000, overage: { mode: 'per_unit', unit_price: '0.01' }, hard_limit: 5000 },
  { code: 'seats', name: 'Seats', unit: 'seat', aggregation: 'latest' },
];

const DAY_MS = 86_400_000;
const isoDay = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

interface MeterAnswer {
  code: string;
  series: Array<{ day: string; quantity: number | null }>;
  used: number;
  [field: string]: unknown;
}

describe('serviceapikey/usage: the meters', () => {
  let t: TestApp;
  let alice: Client;
  let bob: Client;
  let metered: number;
  let plain: number;
  const as = (client: Client, path: string, params: Record<string, unknown> = {}) => t.call(`/api/client/${path}`, params, { basic: ['client', client.token] });

  beforeAll(async () => {
    t = await createTestApp();
    metered = await createPlan(t, { meters: METERS, custom: { tier: 'ai' } });
    plain = await createPlan(t, { included: 100, custom: { tier: 'plain' } });
    alice = await t.createClient();
    bob = await t.createClient();
  });
  afterAll(async () => {
    await t.close();
  });

  it('gives each meter its day series over the range asked and its figures this period, priced as the close bills them', async () => {
    const { orderId, key } = await buyKey(t, metered, alice.id);
    // Someone else's order on the same plan: its events never show in Alice's series.
    const { orderId: bobsOrder } = await buyKey(t, metered, bob.id);
    const now = Date.now();
    const today = isoDay(now);
    const yesterday = isoDay(now - DAY_MS);
    const ingested = await t.admin('usage/ingest', {
      events: [
        { id: 't1', order_id: orderId, meter: 'tokens', value: 700, timestamp: new Date(now - DAY_MS).toISOString() },
        { id: 's1', order_id: orderId, meter: 'seats', value: 3, timestamp: new Date(now - DAY_MS - 60_000).toISOString() },
        { id: 's2', order_id: orderId, meter: 'seats', value: 5, timestamp: new Date(now - DAY_MS).toISOString() },
        { id: 't2', order_id: orderId, meter: 'tokens', value: 800, timestamp: new Date(now - 60_000).toISOString() },
        { id: 't3', order_id: orderId, meter: 'tokens', value: 50, timestamp: new Date(now - 30_000).toISOString() },
        { id: 'b1', order_id: bobsOrder, meter: 'tokens', value: 99_999, timestamp: new Date(now - 60_000).toISOString() },
      ],
    });
    expect(ingested.result).toEqual({ accepted: 6, duplicates: 0, rejected: [] });
    expect(await t.call('/api/guest/serviceapikey/check', { key })).toMatchObject({ result: true });
    await t.services.apikeys.flushUsage();

    // Yesterday may lie in the previous calendar month (the usage period): then it is in the series, not in `used`.
    const sameMonth = yesterday.slice(0, 7) === today.slice(0, 7);
    const tokensUsed = (sameMonth ? 700 : 0) + 850;
    const reply = await as(alice, 'serviceapikey/usage', { order_id: orderId, from: yesterday, to: today });
    expect(reply.status).toBe(200);
    // The calls are as before: the check, today.
    expect(reply.result.total).toBe(1);
    expect(reply.result.days).toEqual([
      { date: yesterday, count: 0 },
      { date: today, count: 1 },
    ]);
    expect(reply.result.meters).toEqual([
      {
        code: 'tokens',
        name: 'Tokens',
        unit: 'token',
        aggregation: 'sum',
        series: [
          { day: yesterday, quantity: 700 },
          { day: today, quantity: 850 },
        ],
        used: tokensUsed,
        included: 1000,
        overage_units: Math.max(0, tokensUsed - 1000),
        overage_amount: tokensUsed > 1000 ? '5.50' : '0.00',
        hard_limit: 5000,
      },
      {
        code: 'seats',
        name: 'Seats',
        unit: 'seat',
        aggregation: 'latest',
        // Yesterday's last report; nobody reported seats today: null, not 0.
        series: [
          { day: yesterday, quantity: 5 },
          { day: today, quantity: null },
        ],
        used: sameMonth ? 5 : 0,
        included: null,
        overage_units: 0,
        overage_amount: null,
        hard_limit: null,
      },
    ]);

    // Staff read the same; key_id narrows the calls, never the meters (they are measured per order).
    const admin = await t.admin('serviceapikey/usage', { order_id: orderId, from: yesterday, to: today });
    expect(admin.result).toEqual(reply.result);
    const keyId = (await t.admin('serviceapikey/get', { order_id: orderId })).result.id as number;
    const byKey = await t.admin('serviceapikey/usage', { order_id: orderId, key_id: keyId, from: yesterday, to: today });
    expect(byKey.result.meters).toEqual(reply.result.meters);
  });

  it('covers every day of the default range (the current period) and of a past range, 0 where nothing was measured', async () => {
    const { orderId } = await buyKey(t, metered, alice.id);
    const now = Date.now();
    const today = isoDay(now);
    expect((await t.admin('usage/ingest', { events: [{ id: 'x', order_id: orderId, meter: 'tokens', value: 42, timestamp: new Date(now - 1000).toISOString() }] })).result.accepted).toBe(1);

    const current = await as(alice, 'serviceapikey/usage', { order_id: orderId });
    const days = current.result.days.map((day: { date: string }) => day.date);
    expect(days[0]).toBe(`${today.slice(0, 7)}-01`);
    const [tokens, seats] = current.result.meters as MeterAnswer[];
    expect(tokens!.series.map((day) => day.day)).toEqual(days);
    expect(seats!.series.map((day) => day.day)).toEqual(days);
    expect(tokens!.series.filter((day) => day.day !== today).every((day) => day.quantity === 0)).toBe(true);
    expect(tokens!.series.find((day) => day.day === today)).toEqual({ day: today, quantity: 42 });
    expect(seats!.series.every((day) => day.quantity === null)).toBe(true);
    expect([tokens!.used, seats!.used]).toEqual([42, 0]);

    // A range before anything was measured: the days, all 0 (null for latest), and still this period's figures.
    const past = await t.admin('serviceapikey/usage', { order_id: orderId, from: '2024-02-27', to: '2024-03-01' });
    const [pastTokens, pastSeats] = past.result.meters as MeterAnswer[];
    expect(pastTokens!.series).toEqual(['2024-02-27', '2024-02-28', '2024-02-29', '2024-03-01'].map((day) => ({ day, quantity: 0 })));
    expect(pastSeats!.series.map((day) => day.quantity)).toEqual([null, null, null, null]);
    expect(pastTokens!.used).toBe(42);
  });

  it('shows max as the day greatest and unique_count as the values first seen that day', async () => {
    const plan = await createPlan(t, {
      meters: [
        { code: 'peak', name: 'Peak', unit: 'request/s', aggregation: 'max' },
        { code: 'users', name: 'Users', unit: 'user', aggregation: 'unique_count', property: 'user' },
      ],
    });
    const { orderId } = await buyKey(t, plan, alice.id);
    const now = Date.now();
    const today = isoDay(now);
    const yesterday = isoDay(now - DAY_MS);
    const at = (ms: number) => new Date(ms).toISOString();
    const events = [
      { id: 'p1', order_id: orderId, meter: 'peak', value: 40, timestamp: at(now - DAY_MS) },
      { id: 'p2', order_id: orderId, meter: 'peak', value: 9, timestamp: at(now - DAY_MS + 1000) },
      { id: 'p3', order_id: orderId, meter: 'peak', value: 12, timestamp: at(now - 1000) },
      ...['ann', 'bob'].map((user) => ({ id: `y-${user}`, order_id: orderId, meter: 'users', timestamp: at(now - DAY_MS), properties: { user } })),
      ...['ann', 'cy'].map((user) => ({ id: `t-${user}`, order_id: orderId, meter: 'users', timestamp: at(now - 1000), properties: { user } })),
    ];
    expect((await t.admin('usage/ingest', { events })).result.accepted).toBe(7);
    const [peak, users] = (await as(alice, 'serviceapikey/usage', { order_id: orderId, from: yesterday, to: today })).result.meters as MeterAnswer[];
    // Across a month boundary yesterday is another period, where ann is new again.
    const sameMonth = yesterday.slice(0, 7) === today.slice(0, 7);
    expect(peak!.series).toEqual([
      { day: yesterday, quantity: 40 },
      { day: today, quantity: 12 },
    ]);
    expect(peak!.used).toBe(sameMonth ? 40 : 12);
    expect(users!.series).toEqual([
      { day: yesterday, quantity: 2 },
      { day: today, quantity: sameMonth ? 1 : 2 },
    ]);
    expect(users!.used).toBe(sameMonth ? 3 : 2);
  });

  it('gives an empty list for a plan without meters, and keeps the calls fields as they were', async () => {
    const { orderId, key } = await buyKey(t, plain, alice.id);
    expect(await t.call('/api/guest/serviceapikey/check', { key })).toMatchObject({ result: true });
    await t.services.apikeys.flushUsage();
    const today = isoDay(Date.now());
    const reply = await as(alice, 'serviceapikey/usage', { order_id: orderId, from: today, to: today });
    expect(reply.result).toEqual({ total: 1, days: [{ date: today, count: 1 }], meters: [] });
  });

  it('answers another client, an unknown order, bad parameters and the wrong role as before', async () => {
    const { orderId } = await buyKey(t, metered, alice.id);
    // Bob asking for Alice's order reads exactly what an order that does not exist reads.
    const unknown = await as(bob, 'serviceapikey/usage', { order_id: 2_000_000_000 });
    const foreign = await as(bob, 'serviceapikey/usage', { order_id: orderId });
    expectError(foreign, 404);
    expect(foreign.body).toEqual(unknown.body);
    expectError(await t.admin('serviceapikey/usage', { order_id: 2_000_000_000 }), 404);

    expectInvalid(await as(alice, 'serviceapikey/usage', {}), 'order_id');
    expectInvalid(await as(alice, 'serviceapikey/usage', { order_id: 'one' }), 'order_id');
    expectInvalid(await as(alice, 'serviceapikey/usage', { order_id: orderId, from: 20240101 }), 'from');
    expectInvalid(await t.admin('serviceapikey/usage', { order_id: orderId, to: 'today' }), 'to');
    expectInvalid(await t.admin('serviceapikey/usage', { order_id: orderId, from: '2024-03-02', to: '2024-03-01' }), 'to');

    // A client on the staff road, and staff without serviceapikey.manage, are refused.
    const clientAsStaff = await t.call('/api/admin/serviceapikey/usage', { order_id: orderId }, { basic: ['client', alice.token] });
    expect(clientAsStaff.status).toBe(401);
    const token = await staffToken(t, ['order.view']);
    expectError(await t.call('/api/admin/serviceapikey/usage', { order_id: orderId }, { basic: ['admin', token] }), 403);
  });
});
