// admin|client/serviceapikey/analytics and admin/serviceapikey/analytics_not_found (issue 25 items 5–6): every check,
// get_info and verifier answer counted per key by outcome (unknown keys per address), zero-filled series per range
// and granularity, the last use; validation, roles, permissions, another client's key, a failed flush that loses
// nothing and counts nothing twice, concurrent checks, and the retention prune. SQLite, and PostgreSQL + Redis when
// TEST_* are set.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { buyKey, createPlan, staffToken } from '../../helpers/apikey.ts';
import { expectError, expectInvalid } from '../../helpers/assertions.ts';
import { asClient, asStaff } from '../../helpers/selling-fixtures.ts';

let t: TestApp;
let owner: Awaited<ReturnType<TestApp['createClient']>>;
let stranger: Awaited<ReturnType<TestApp['createClient']>>;

beforeAll(async () => {
  t = await createTestApp();
  owner = await t.createClient();
  stranger = await t.createClient();
});
afterAll(async () => {
  await t.close();
});

const check = (key: string, ip = '198.51.100.1') => t.call('/api/guest/serviceapikey/check', { key }, { ip });
const info = (key: string, ip = '198.51.100.1') => t.call('/api/guest/serviceapikey/get_info', { key }, { ip });
const analytics = (params: Record<string, unknown>) => t.admin('serviceapikey/analytics', params);

type Point = Record<string, number | string>;
/** The series' counts summed over its buckets, outcome by outcome. */
function totals(series: Point[]): Record<string, number> {
  const sum: Record<string, number> = {};
  for (const point of series) for (const [name, value] of Object.entries(point)) if (name !== 'at') sum[name] = (sum[name] ?? 0) + Number(value);
  return sum;
}
const NO_COUNTS = { valid: 0, not_active: 0, disabled: 0, client_inactive: 0, rate_limited: 0, limit_exceeded: 0, no_credit: 0, trial_ended: 0, expired: 0 };
const ZERO = { valid: 0, not_active: 0, disabled: 0, client_inactive: 0, rate_limited: 0, limit_exceeded: 0, no_credit: 0, trial_ended: 0, expired: 0, not_found: 0 };

describe('counting answers by outcome', () => {
  it('counts valid, disabled, not active, expired, client inactive, limit exceeded and rate limited answers of check, get_info and the verifier', async () => {
    const client = await t.createClient();
    const plan = await createPlan(t, { enforce_limit: true, custom: { monthlyLimit: 3 } });
    const { orderId, key, keyId } = await buyKey(t, plan, client.id);
    const verifier = await staffToken(t, ['serviceapikey.check']);
    const verify = (path: string, ip?: string) => asStaff(t, verifier, `serviceapikey/${path}`, ip === undefined ? { key } : { key, ip });

    expect((await check(key)).result).toBe(true);
    expect((await info(key, '198.51.100.2')).result.reason).toBe('VALID');
    expect((await verify('check', '2001:db8::7')).result).toBe(true);
    // The quota (3) is spent: the next answers are LIMIT_EXCEEDED, counted but not used.
    expect((await verify('get_info')).result.reason).toBe('LIMIT_EXCEEDED');
    expect((await check(key)).result).toBe(false);
    await t.admin('product/update', { id: plan, config: { enforce_limit: true, custom: { monthlyLimit: 3 } } });
    await t.admin('serviceapikey/update', { order_id: orderId, config: { monthlyLimit: 1000 } });
    await t.admin('serviceapikey/update', { order_id: orderId, valid: false });
    expect((await info(key)).result.reason).toBe('DISABLED');
    await t.admin('serviceapikey/update', { order_id: orderId, valid: true });
    await t.admin('client/update', { id: client.id, status: 'suspended' });
    expect((await info(key)).result.reason).toBe('CLIENT_INACTIVE');
    await t.admin('client/update', { id: client.id, status: 'active' });
    await t.admin('order/suspend', { id: orderId });
    expect((await info(key)).result.reason).toBe('NOT_ACTIVE');
    await t.admin('order/unsuspend', { id: orderId });
    await t.admin('order/update', { id: orderId, expires_at: new Date(Date.now() - 60_000).toISOString() });
    expect((await info(key)).result.reason).toBe('EXPIRED');

    const reply = await analytics({ id: keyId, range: '24h' });
    expect(reply.body.error).toBeNull();
    expect(reply.result).toMatchObject({ key_id: keyId, order_id: orderId, range: '24h', granularity: 'hour' });
    expect(reply.result.series).toHaveLength(24);
    expect(totals(reply.result.series)).toEqual({ ...ZERO, valid: 3, limit_exceeded: 2, disabled: 1, client_inactive: 1, not_active: 1, expired: 1 });
    // The last answer was a guest get_info from 198.51.100.1, a moment ago.
    expect(reply.result.last_used_ip).toBe('198.51.100.1');
    expect(Date.now() - Date.parse(reply.result.last_used_at)).toBeLessThan(60_000);
    // The same counts in every unit that serves 24 hours; everything in the current bucket.
    for (const granularity of ['minute', 'hour', 'day'] as const) {
      const series = (await analytics({ order_id: orderId, range: '24h', granularity })).result.series as Point[];
      expect(series).toHaveLength({ minute: 1440, hour: 24, day: 2 }[granularity]);
      expect(totals(series).valid).toBe(3);
      expect(Number(series.at(-1)!.valid)).toBe(3);
    }
  });

  it('counts answers refused by the per-key rate limit as rate_limited, and an order is the sum of its keys', async () => {
    const plan = await createPlan(t, { rate_limit: { limit: 2, window_seconds: 60 }, max_keys: 3 });
    const { orderId, key, keyId } = await buyKey(t, plan, owner.id);
    const second = (await t.admin('serviceapikey/create', { order_id: orderId })).result as { id: number; api_key: string };
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push((await check(key)).result);
    answers.push((await check(second.api_key)).result);
    expect(answers).toEqual([true, true, false, false]);
    expect(totals((await analytics({ id: keyId, range: '24h' })).result.series)).toMatchObject({ valid: 2, rate_limited: 1 });
    expect(totals((await analytics({ id: second.id, range: '24h' })).result.series)).toMatchObject({ valid: 0, rate_limited: 1 });
    const order = (await analytics({ order_id: orderId, range: '30d' })).result;
    expect(order).toMatchObject({ key_id: null, order_id: orderId, granularity: 'day' });
    expect(order.series).toHaveLength(30);
    expect(totals(order.series)).toMatchObject({ valid: 2, rate_limited: 2 });
  });

  it('counts unknown keys per caller address, never per key, and shows staff the addresses making most of them', async () => {
    const before = (await t.admin('serviceapikey/analytics_not_found', { range: '24h' })).result;
    const seen = (ip: string | null) => Number(before.top.find((row: { ip: string | null }) => row.ip === ip)?.not_found ?? 0);
    for (let i = 0; i < 3; i++) await check(`UNKNOWN-KEY-${i}`, '192.0.2.50');
    await info('UNKNOWN-KEY-X', '192.0.2.51');
    const verifier = await staffToken(t, ['serviceapikey.check']);
    await asStaff(t, verifier, 'serviceapikey/check', { key: 'UNKNOWN-KEY-Y' });
    const after = await t.admin('serviceapikey/analytics_not_found', { range: '24h', granularity: 'minute' });
    expect(after.body.error).toBeNull();
    expect(after.result.series).toHaveLength(1440);
    const count = (ip: string | null) => Number(after.result.top.find((row: { ip: string | null }) => row.ip === ip)?.not_found ?? 0);
    expect(count('192.0.2.50') - seen('192.0.2.50')).toBe(3);
    expect(count('192.0.2.51') - seen('192.0.2.51')).toBe(1);
    // A verifier that names no address: counted under none.
    expect(count(null) - seen(null)).toBe(1);
    expect(Number(totals(after.result.series).not_found) - Number(totals(before.series).not_found)).toBe(5);
    // Most first.
    const counts = after.result.top.map((row: { not_found: number }) => row.not_found);
    expect(counts).toEqual(counts.toSorted((a: number, b: number) => b - a));
    expect((await t.admin('serviceapikey/analytics_not_found', { range: '12m', limit: 1 })).result.top).toHaveLength(1);
  });

  it('counts concurrent checks exactly', async () => {
    const plan = await createPlan(t, {});
    const { key, keyId } = await buyKey(t, plan, owner.id);
    const flushes: Array<Promise<void>> = [];
    const answers = await Promise.all(
      Array.from({ length: 200 }, async (_, i) => {
        if (i % 50 === 0) flushes.push(t.services.apikeys.flushUsage());
        return (await check(key)).result;
      }),
    );
    await Promise.all(flushes);
    expect(answers.every((answer) => answer === true)).toBe(true);
    expect(totals((await analytics({ id: keyId, range: '12m' })).result.series).valid).toBe(200);
  });
});

describe('ranges and granularity', () => {
  it('zero-fills every bucket, oldest first, each at its start', async () => {
    const plan = await createPlan(t, {});
    const { keyId } = await buyKey(t, plan, owner.id);
    const year = (await analytics({ id: keyId, range: '12m' })).result;
    expect(year).toMatchObject({ granularity: 'day', last_used_at: null, last_used_ip: null });
    expect(year.series).toHaveLength(365);
    expect(year.series.every((point: Point) => Object.entries(point).every(([name, value]) => name === 'at' || value === 0))).toBe(true);
    const today = new Date().toISOString().slice(0, 10);
    expect(year.series.at(-1).at).toBe(`${today}T00:00:00Z`);
    const days = year.series.map((point: Point) => Date.parse(String(point.at)));
    expect(days.slice(1).every((at: number, i: number) => at - days[i] === 86_400_000)).toBe(true);
    const hours = (await analytics({ id: keyId, range: '30d', granularity: 'hour' })).result.series;
    expect(hours).toHaveLength(720);
    expect(hours.at(-1).at).toMatch(/T\d\d:00:00Z$/);
  });

  it('refuses a granularity the range is not served in, with a 422 naming what is', async () => {
    const plan = await createPlan(t, {});
    const { keyId } = await buyKey(t, plan, owner.id);
    for (const [range, granularity] of [['30d', 'minute'], ['12m', 'minute'], ['12m', 'hour']]) {
      const reply = await analytics({ id: keyId, range, granularity });
      expectInvalid(reply, 'granularity');
      expect(reply.body.error?.message).toMatch(/at most 3000/);
    }
    expectInvalid(await t.admin('serviceapikey/analytics_not_found', { range: '30d', granularity: 'minute' }), 'granularity');
  });
});

describe('bad input, roles and ownership', () => {
  let keyId: number;
  let orderId: number;
  beforeAll(async () => {
    const plan = await createPlan(t, {});
    ({ keyId, orderId } = await buyKey(t, plan, owner.id));
    await check((await t.admin('serviceapikey/get', { order_id: orderId })).result.api_key);
  });

  it('refuses missing and wrong-typed parameters with a 422 naming them', async () => {
    expectInvalid(await analytics({ id: keyId }), 'range');
    expectInvalid(await analytics({ id: keyId, range: '7d' }), 'range');
    expectInvalid(await analytics({ id: keyId, range: 24 }), 'range');
    expectInvalid(await analytics({ id: 'one', range: '24h' }), 'id');
    expectInvalid(await analytics({ order_id: -3, range: '24h' }), 'order_id');
    expectInvalid(await analytics({ id: keyId, range: '24h', granularity: 'week' }), 'granularity');
    expectInvalid(await analytics({ range: '24h' }), 'id');
    expectInvalid(await analytics({ id: keyId, order_id: orderId, range: '24h' }), 'id');
    expectInvalid(await t.admin('serviceapikey/analytics_not_found', {}), 'range');
    expectInvalid(await t.admin('serviceapikey/analytics_not_found', { range: '24h', limit: 0 }), 'limit');
  });

  it('answers 404 for a key or order that is not there', async () => {
    expectError(await analytics({ id: 2_000_000_000, range: '24h' }), 404);
    expectError(await analytics({ order_id: 2_000_000_000, range: '24h' }), 404);
  });

  it("gives a client their own key's and order's analytics, and another client's the same 404 as a missing one", async () => {
    const own = await asClient(t, owner.token, 'serviceapikey/analytics', { id: keyId, range: '24h' });
    expect(own.body.error).toBeNull();
    expect(totals(own.result.series).valid).toBe(1);
    expect((await asClient(t, owner.token, 'serviceapikey/analytics', { order_id: orderId, range: '12m' })).result.order_id).toBe(orderId);
    const foreign = await asClient(t, stranger.token, 'serviceapikey/analytics', { id: keyId, range: '24h' });
    const missing = await asClient(t, stranger.token, 'serviceapikey/analytics', { id: 2_000_000_000, range: '24h' });
    expectError(foreign, 404);
    expect(foreign.body).toEqual(missing.body);
    expectError(await asClient(t, stranger.token, 'serviceapikey/analytics', { order_id: orderId, range: '24h' }), 404);
    // Unknown keys' addresses are for staff only.
    expectError(await asClient(t, owner.token, 'serviceapikey/analytics_not_found', { range: '24h' }), 740, 404);
  });

  it('needs serviceapikey.analytics for staff, and refuses the client token and verifiers on the admin actions', async () => {
    const without = await staffToken(t, ['serviceapikey.manage']);
    expectError(await asStaff(t, without, 'serviceapikey/analytics', { id: keyId, range: '24h' }), 403);
    expectError(await asStaff(t, without, 'serviceapikey/analytics_not_found', { range: '24h' }), 403);
    const reader = await staffToken(t, ['serviceapikey.analytics']);
    expect((await asStaff(t, reader, 'serviceapikey/analytics', { id: keyId, range: '24h' })).body.error).toBeNull();
    expect((await asStaff(t, reader, 'serviceapikey/analytics_not_found', { range: '24h' })).body.error).toBeNull();
    expectError(await t.call('/api/admin/serviceapikey/analytics', { id: keyId, range: '24h' }, { basic: ['client', owner.token] }), 203, 401);
    const verifier = await staffToken(t, ['serviceapikey.check']);
    expectError(await asStaff(t, verifier, 'serviceapikey/analytics', { id: keyId, range: '24h' }), 403);
  });
});

describe('the keys list by last use', () => {
  it('lists keys most recently used first, never-used last, with the last address; filters and validates', async () => {
    const buyer = await t.createClient();
    const plan = await createPlan(t, {});
    const first = await buyKey(t, plan, buyer.id);
    const second = await buyKey(t, plan, buyer.id);
    const idle = await buyKey(t, plan, buyer.id);
    await check(first.key, '203.0.113.1');
    await new Promise((resolve) => setTimeout(resolve, 5));
    await check(second.key, '203.0.113.2');
    await t.services.apikeys.flushUsage();
    const listed = await t.admin('serviceapikey/get_list', { client_id: buyer.id });
    expect(listed.body.error).toBeNull();
    expect(listed.result).toMatchObject({ page: 1, total: 3, pages: 1 });
    expect(listed.result.list.map((row: { id: number }) => row.id)).toEqual([second.keyId, first.keyId, idle.keyId]);
    expect(listed.result.list[0]).toMatchObject({ order_id: second.orderId, client_id: buyer.id, order_status: 'active', valid: 1, last_used_ip: '203.0.113.2' });
    expect(listed.result.list[2]).toMatchObject({ last_used_at: null, last_used_ip: null });
    const newest = await t.admin('serviceapikey/get_list', { client_id: buyer.id, sort: 'newest' });
    expect(newest.result.list.map((row: { id: number }) => row.id)).toEqual([idle.keyId, second.keyId, first.keyId]);
    const one = await t.admin('serviceapikey/get_list', { order_id: first.orderId, per_page: 1 });
    expect(one.result.list).toHaveLength(1);
    expect(one.result.list[0].last_used_ip).toBe('203.0.113.1');
    await t.admin('order/suspend', { id: idle.orderId });
    expect((await t.admin('serviceapikey/get_list', { client_id: buyer.id, status: 'suspended' })).result.list.map((row: { id: number }) => row.id)).toEqual([idle.keyId]);
    expectInvalid(await t.admin('serviceapikey/get_list', { sort: 'oldest' }), 'sort');
    expectInvalid(await t.admin('serviceapikey/get_list', { per_page: 501 }), 'per_page');
    expectInvalid(await t.admin('serviceapikey/get_list', { client_id: 'x' }), 'client_id');
    expectError(await asStaff(t, await staffToken(t, ['serviceapikey.check']), 'serviceapikey/get_list', {}), 403);
  });
});

describe('flush and retention', () => {
  it('keeps the counts of a failed flush and writes them once at the next one', async () => {
    const plan = await createPlan(t, {});
    const { key, keyId } = await buyKey(t, plan, owner.id);
    const meter = t.services.apikeys.internals.outcomeMeter;
    await meter.flush();
    const db = t.services.db;
    await db.schema.alterTable('api_key_last_use').renameTo('api_key_last_use_away').execute();
    try {
      for (let i = 0; i < 4; i++) await check(key);
      await check('UNKNOWN-IN-FAILED-FLUSH', '192.0.2.99');
      await meter.flush();
      // The outcomes and unknown-key rows were written before the last-use write failed; the last use still waits.
      expect(meter.unwritten).toBeGreaterThan(0);
    } finally {
      await db.schema.alterTable('api_key_last_use_away').renameTo('api_key_last_use').execute();
    }
    await check(key);
    await meter.flush();
    expect(meter.unwritten).toBe(0);
    const reply = (await analytics({ id: keyId, range: '24h' })).result;
    expect(totals(reply.series).valid).toBe(5);
    expect(reply.last_used_at).not.toBeNull();
  });

  it('prunes minutes after 48 hours, hours after 90 days and days after 2 years', async () => {
    const plan = await createPlan(t, {});
    const { keyId } = await buyKey(t, plan, owner.id);
    const db = t.services.db;
    const now = Date.UTC(2031, 5, 15, 12, 0, 0);
    const at = (msAgo: number) => new Date(now - msAgo).toISOString().slice(0, 16) + ':00Z';
    const H = 3_600_000;
    const D = 24 * H;
    const rows = [
      ['minute', at(47 * H)],
      ['minute', at(49 * H)],
      ['hour', at(89 * D)],
      ['hour', at(91 * D)],
      ['day', at(729 * D)],
      ['day', at(731 * D)],
    ] as const;
    await db.insertInto('api_key_outcomes').values(rows.map(([unit, when]) => ({ api_key_id: keyId, unit, at: when, ...NO_COUNTS, valid: 1 }))).execute();
    await db.insertInto('api_key_not_found').values(rows.map(([unit, when]) => ({ ip: '192.0.2.200', unit, at: when, count: 1 }))).execute();
    const pruned = await t.services.apikeys.pruneAnalytics(new Date(now));
    expect(pruned.deleted).toBeGreaterThanOrEqual(6);
    const left = await db.selectFrom('api_key_outcomes').select(['unit', 'at']).where('api_key_id', '=', keyId).orderBy('unit').orderBy('at').execute();
    expect(left).toEqual([
      { unit: 'day', at: at(729 * D) },
      { unit: 'hour', at: at(89 * D) },
      { unit: 'minute', at: at(47 * H) },
    ]);
    const addresses = await db.selectFrom('api_key_not_found').select(['unit', 'at']).where('ip', '=', '192.0.2.200').orderBy('unit').execute();
    expect(addresses).toHaveLength(3);
    // The scheduler runs it (cron's usage pruning step).
    await db.insertInto('api_key_outcomes').values({ api_key_id: keyId, unit: 'minute', at: '2001-01-01T00:00:00Z', ...NO_COUNTS, valid: 1 }).execute();
    await t.services.cron.run(new Date());
    expect(await db.selectFrom('api_key_outcomes').select('at').where('at', '=', '2001-01-01T00:00:00Z').execute()).toEqual([]);
  });
});
