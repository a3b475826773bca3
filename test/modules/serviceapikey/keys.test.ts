// Several keys per order, per-key rate limits and rotation with a grace period (CONTRACT §12), over HTTP on SQLite,
// and on PostgreSQL + Redis when TEST_* are set: create / delete / rename / list for clients and staff with their
// failure paths, concurrency at max_keys, the shared quota and usage, RATE_LIMITED on check and get_info (guest and
// verifier) never counted as a use, and the grace rules.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectError, expectInvalid } from '../../helpers/assertions.ts';
import { buyKey, createPlan, staffToken } from '../../helpers/apikey.ts';

type Client = Awaited<ReturnType<TestApp['createClient']>>;

const buy = (t: TestApp, productId: number, client: Client) => buyKey(t, productId, client.id);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('several keys per order', () => {
  let t: TestApp;
  let plan: number;
  let alice: Client;
  let bob: Client;
  const as = (client: Client, path: string, params: Record<string, unknown> = {}) => t.call(`/api/client/${path}`, params, { basic: ['client', client.token] });
  const check = async (key: string) => (await t.call('/api/guest/serviceapikey/check', { key })).result as boolean;
  const info = async (key: string) => (await t.call('/api/guest/serviceapikey/get_info', { key })).result;

  beforeAll(async () => {
    t = await createTestApp();
    plan = await createPlan(t, { max_keys: 3, enforce_limit: true, custom: { monthlyLimit: 10, tier: 'pro' } });
    alice = await t.createClient();
    bob = await t.createClient();
  });
  afterAll(async () => {
    await t.close();
  });

  it('creates named keys up to max_keys (409 past it); every key validates, shares the parameters, lists with id and name', async () => {
    const { orderId, key, keyId } = await buy(t, plan, alice);
    const second = await as(alice, 'serviceapikey/create', { order_id: orderId, name: 'staging' });
    expect(second.status).toBe(200);
    expect(second.result).toEqual({ id: expect.any(Number), api_key: expect.stringMatching(/^[0-9A-F-]{35}$/), name: 'staging' });
    expect(second.result.api_key).not.toBe(key);
    const third = await t.admin('serviceapikey/create', { order_id: orderId });
    expect(third.result).toMatchObject({ name: null });
    expectError(await as(alice, 'serviceapikey/create', { order_id: orderId, name: 'one too many' }), 409);
    expectError(await t.admin('serviceapikey/create', { order_id: orderId }), 409);

    for (const each of [key, second.result.api_key, third.result.api_key]) {
      expect(await check(each)).toBe(true);
      expect(await info(each)).toMatchObject({ valid: 1, config: { tier: 'pro', monthlyLimit: 10 }, reason: 'VALID', rotating_until: null });
    }

    const listed = await as(alice, 'serviceapikey/get_list', { order_id: orderId });
    expect(listed.result.total).toBe(3);
    expect(listed.result.list.map((k: { id: number; name: string | null }) => [k.id, k.name])).toEqual([
      [third.result.id, null],
      [second.result.id, 'staging'],
      [keyId, null],
    ]);
    const got = await t.admin('serviceapikey/get', { order_id: orderId });
    expect(got.result.id).toBe(keyId);
    expect(got.result.keys.map((k: { id: number; api_key: string }) => k.api_key)).toEqual([key, second.result.api_key, third.result.api_key]);

    // Renaming: own keys only; empty clears.
    expect((await as(alice, 'serviceapikey/rename', { id: keyId, name: 'production' })).result).toBe(true);
    expectError(await as(bob, 'serviceapikey/rename', { id: keyId, name: 'mine' }), 404);
    expect((await t.admin('serviceapikey/rename', { id: third.result.id, name: 'ci' })).result).toBe(true);
    const renamed = await as(alice, 'serviceapikey/get_list', { order_id: orderId });
    expect(renamed.result.list.map((k: { name: string | null }) => k.name)).toEqual(['ci', 'staging', 'production']);
    expect((await as(alice, 'serviceapikey/rename', { id: keyId, name: '' })).result).toBe(true);
    expect((await as(alice, 'serviceapikey/get_list', { order_id: orderId })).result.list[2].name).toBeNull();
  });

  it('deletes a key at once (it stops validating); the last key cannot go (409); another client\'s key is 404', async () => {
    const { orderId, key, keyId } = await buy(t, plan, alice);
    const extra = await as(alice, 'serviceapikey/create', { order_id: orderId });
    expect(await check(extra.result.api_key)).toBe(true);

    expectError(await as(bob, 'serviceapikey/delete', { id: extra.result.id }), 404);
    expect(await check(extra.result.api_key)).toBe(true);
    expect((await as(alice, 'serviceapikey/delete', { id: extra.result.id })).result).toBe(true);
    expect(await check(extra.result.api_key)).toBe(false);
    expect(await info(extra.result.api_key)).toMatchObject({ valid: 0, reason: 'NOT_FOUND' });
    // Already gone.
    expectError(await as(alice, 'serviceapikey/delete', { id: extra.result.id }), 404);
    expectError(await t.admin('serviceapikey/delete', { id: extra.result.id }), 404);
    // The last key: reset it instead.
    expectError(await as(alice, 'serviceapikey/delete', { id: keyId }), 409);
    expectError(await t.admin('serviceapikey/delete', { id: keyId }), 409);
    expect(await check(key)).toBe(true);
    // A deleted key frees its place: a new one can be created.
    expect((await t.admin('serviceapikey/create', { order_id: orderId })).status).toBe(200);
  });

  it('refuses another client\'s order (404), an order that is not active (409) and bad parameters (422)', async () => {
    const { orderId } = await buy(t, plan, alice);
    expectError(await as(bob, 'serviceapikey/create', { order_id: orderId }), 404);
    expectError(await as(alice, 'serviceapikey/create', { order_id: 999_999 }), 404);
    expectInvalid(await as(alice, 'serviceapikey/create', {}), 'order_id');
    expectInvalid(await as(alice, 'serviceapikey/create', { order_id: 'seven' }), 'order_id');
    expectInvalid(await as(alice, 'serviceapikey/create', { order_id: orderId, name: 'x'.repeat(101) }), 'name');
    expectInvalid(await as(alice, 'serviceapikey/create', { order_id: orderId, name: 12 }), 'name');
    expectInvalid(await as(alice, 'serviceapikey/delete', {}), 'id');
    expectInvalid(await as(alice, 'serviceapikey/delete', { id: -1 }), 'id');
    expectInvalid(await as(alice, 'serviceapikey/rename', { id: 1 }), 'name');
    expectInvalid(await as(alice, 'serviceapikey/usage', { order_id: orderId, key_id: 'a' }), 'key_id');
    expect((await t.admin('order/suspend', { id: orderId })).status).toBe(200);
    expectError(await as(alice, 'serviceapikey/create', { order_id: orderId }), 409);
  });

  it('checks roles: guests and clients cannot use the admin actions, guests not the client ones', async () => {
    const { orderId, keyId } = await buy(t, plan, alice);
    expectError(await t.call('/api/guest/serviceapikey/create', { order_id: orderId }), 740, 404);
    expectError(await t.call('/api/client/serviceapikey/create', { order_id: orderId }), 201, 401);
    expectError(await t.call('/api/client/serviceapikey/delete', { id: keyId }), 201, 401);
    expectError(await t.call('/api/admin/serviceapikey/create', { order_id: orderId }, { basic: ['admin', alice.token] }), 205, 401);
    const reader = await staffToken(t, ['client.view']);
    expectError(await t.call('/api/admin/serviceapikey/create', { order_id: orderId }, { basic: ['admin', reader] }), 403);
    expectError(await t.call('/api/admin/serviceapikey/delete', { id: keyId }, { basic: ['admin', reader] }), 403);
  });

  it('creates concurrently up to exactly max_keys', async () => {
    const { orderId } = await buy(t, plan, alice);
    const replies = await Promise.all(Array.from({ length: 8 }, (_, i) => as(alice, 'serviceapikey/create', { order_id: orderId, name: `k${i}` })));
    const ok = replies.filter((reply) => reply.status === 200);
    expect(ok).toHaveLength(2);
    for (const reply of replies) if (reply.status !== 200) expectError(reply, 409);
    expect((await as(alice, 'serviceapikey/get_list', { order_id: orderId })).result.total).toBe(3);
  });

  it('shares the quota and validity of the order; counts usage per key and per order', async () => {
    const { orderId, key, keyId } = await buy(t, plan, alice);
    const other = (await as(alice, 'serviceapikey/create', { order_id: orderId })).result as { id: number; api_key: string };
    for (let i = 0; i < 6; i++) expect(await check(key)).toBe(true);
    for (let i = 0; i < 4; i++) expect(await check(other.api_key)).toBe(true);
    // 10 of 10 used between the two keys: both stop.
    expect(await check(key)).toBe(false);
    expect(await info(other.api_key)).toMatchObject({ valid: 0, reason: 'LIMIT_EXCEEDED', usage: { used: 10, limit: 10, remaining: 0 } });
    await t.services.apikeys.flushUsage();
    expect((await as(alice, 'serviceapikey/usage', { order_id: orderId })).result.total).toBe(10);
    expect((await as(alice, 'serviceapikey/usage', { order_id: orderId, key_id: keyId })).result.total).toBe(6);
    expect((await t.admin('serviceapikey/usage', { order_id: orderId, key_id: other.id })).result.total).toBe(4);
    expectError(await as(bob, 'serviceapikey/usage', { order_id: orderId }), 404);
    expectError(await as(alice, 'serviceapikey/usage', { order_id: orderId, key_id: 999_999 }), 404);
    // Deleting a key keeps its uses counted: no quota handed back.
    expect((await as(alice, 'serviceapikey/delete', { id: other.id })).result).toBe(true);
    expect((await as(alice, 'serviceapikey/usage', { order_id: orderId })).result.total).toBe(10);
    expect(await check(key)).toBe(false);

    // Validity is the order's: disabling switches every key.
    const fresh = await buy(t, plan, alice);
    const second = (await as(alice, 'serviceapikey/create', { order_id: fresh.orderId })).result as { api_key: string };
    expect((await t.admin('serviceapikey/update', { order_id: fresh.orderId, valid: false })).result).toBe(true);
    expect(await check(fresh.key)).toBe(false);
    expect(await check(second.api_key)).toBe(false);
    expect((await t.admin('serviceapikey/update', { order_id: fresh.orderId, valid: true, config: { tier: 'gold' } })).result).toBe(true);
    expect(await info(second.api_key)).toMatchObject({ valid: 1, config: { tier: 'gold' } });
  });

  it('asks for a key id when resetting by order_id an order holding several keys', async () => {
    const { orderId, key } = await buy(t, plan, alice);
    const other = (await as(alice, 'serviceapikey/create', { order_id: orderId })).result as { id: number; api_key: string };
    expectInvalid(await as(alice, 'serviceapikey/reset', { order_id: orderId }), 'id');
    const reset = await as(alice, 'serviceapikey/reset', { id: other.id });
    expect(reset.status).toBe(200);
    expect(await check(other.api_key)).toBe(false);
    expect(await check(reset.result as string)).toBe(true);
    expect(await check(key)).toBe(true);
    expectError(await as(bob, 'serviceapikey/reset', { id: other.id }), 404);
  });

  it('refuses bad rate_limit and max_keys options, naming the field', async () => {
    const id = (await t.admin('product/prepare', { title: 'Bad', type: 'apikey' })).result as number;
    expectInvalid(await t.admin('product/update', { id, config: { max_keys: 0 } }), 'config.max_keys');
    expectInvalid(await t.admin('product/update', { id, config: { max_keys: 'many' } }), 'config.max_keys');
    expectInvalid(await t.admin('product/update', { id, config: { rate_limit: 5 } }), 'config.rate_limit');
    expectInvalid(await t.admin('product/update', { id, config: { rate_limit: { limit: -1, window_seconds: 1 } } }), 'config.rate_limit.limit');
    expectInvalid(await t.admin('product/update', { id, config: { rate_limit: { limit: 10 } } }), 'config.rate_limit.window_seconds');
    expectInvalid(await t.admin('product/update', { id, config: { rate_limit: { limit: 10, window_seconds: 0 } } }), 'config.rate_limit.window_seconds');
    expect((await t.admin('product/update', { id, config: { rate_limit: { limit: '10', window_seconds: '60' }, max_keys: '2' } })).status).toBe(200);
    expect((await t.admin('product/get', { id })).result.config).toMatchObject({ rate_limit: { limit: 10, window_seconds: 60 }, max_keys: 2 });
  });
});

describe('per-key rate limits', () => {
  let t: TestApp;
  let alice: Client;

  beforeAll(async () => {
    t = await createTestApp();
    alice = await t.createClient();
  });
  afterAll(async () => {
    await t.close();
  });

  it('refuses past the limit on check and get_info with RATE_LIMITED and retry_after; refused calls are not uses', async () => {
    const plan = await createPlan(t, { rate_limit: { limit: 5, window_seconds: 60 }, max_keys: 2 });
    const { orderId, key } = await buy(t, plan, alice);
    const other = (await t.call('/api/client/serviceapikey/create', { order_id: orderId }, { basic: ['client', alice.token] })).result as { api_key: string };
    const answers: boolean[] = [];
    for (let i = 0; i < 3; i++) answers.push((await t.call('/api/guest/serviceapikey/check', { key })).result as boolean);
    // The order's keys share the limit: two more through the second key, then both are refused.
    for (let i = 0; i < 3; i++) answers.push((await t.call('/api/guest/serviceapikey/check', { key: other.api_key })).result as boolean);
    expect(answers).toEqual([true, true, true, true, true, false]);
    const limited = await t.call('/api/guest/serviceapikey/get_info', { key });
    expect(limited.status).toBe(200);
    expect(limited.result).toMatchObject({ valid: 0, config: null, reason: 'RATE_LIMITED', usage: { used: 5 } });
    expect(limited.result.retry_after).toBeGreaterThanOrEqual(1);
    expect(limited.result.retry_after).toBeLessThanOrEqual(60);
    // The verifier actions answer the same.
    expect((await t.admin('serviceapikey/check', { key })).result).toBe(false);
    expect((await t.admin('serviceapikey/get_info', { key })).result).toMatchObject({ valid: 0, reason: 'RATE_LIMITED', order_id: orderId });
    await t.services.apikeys.flushUsage();
    expect((await t.admin('serviceapikey/usage', { order_id: orderId })).result.total).toBe(5);
    // Other orders are not affected.
    const another = await buy(t, plan, alice);
    expect((await t.call('/api/guest/serviceapikey/check', { key: another.key })).result).toBe(true);
  });

  it('lets calls through again when the window ends', async () => {
    const plan = await createPlan(t, { rate_limit: { limit: 2, window_seconds: 1 } });
    const { key } = await buy(t, plan, alice);
    const run = async () => {
      const out: boolean[] = [];
      for (let i = 0; i < 3; i++) out.push((await t.call('/api/guest/serviceapikey/check', { key })).result as boolean);
      return out;
    };
    expect(await run()).toEqual([true, true, false]);
    await sleep(1100);
    expect(await run()).toEqual([true, true, false]);
  });
});

describe('rotation with a grace period', () => {
  let t: TestApp;
  let alice: Client;
  let bob: Client;
  let plan: number;
  const as = (client: Client, path: string, params: Record<string, unknown> = {}) => t.call(`/api/client/${path}`, params, { basic: ['client', client.token] });
  const check = async (key: string) => (await t.call('/api/guest/serviceapikey/check', { key })).result as boolean;

  beforeAll(async () => {
    t = await createTestApp();
    alice = await t.createClient();
    bob = await t.createClient();
    plan = await createPlan(t, {});
  });
  afterAll(async () => {
    await t.close();
  });

  it('keeps the old key validating until the grace ends, showing rotating_until; then it is unknown', async () => {
    const { orderId, key } = await buy(t, plan, alice);
    const before = Date.now();
    const reset = await as(alice, 'serviceapikey/reset', { order_id: orderId, grace_seconds: 2 });
    expect(reset.status).toBe(200);
    const fresh = reset.result as string;
    expect(await check(fresh)).toBe(true);
    expect(await check(key)).toBe(true);
    const old = (await t.call('/api/guest/serviceapikey/get_info', { key })).result;
    expect(old).toMatchObject({ valid: 1, reason: 'VALID' });
    const until = Date.parse(old.rotating_until as string);
    expect(until).toBeGreaterThanOrEqual(before + 1000);
    expect(until).toBeLessThanOrEqual(Date.now() + 2000);
    expect((await t.call('/api/guest/serviceapikey/get_info', { key: fresh })).result.rotating_until).toBeNull();
    expect((await as(alice, 'serviceapikey/get_list', { order_id: orderId })).result.list[0].rotating_until).toBe(old.rotating_until);
    await sleep(Math.max(0, until - Date.now()) + 50);
    expect(await check(key)).toBe(false);
    expect((await t.call('/api/guest/serviceapikey/get_info', { key })).result).toMatchObject({ valid: 0, reason: 'NOT_FOUND', rotating_until: null });
    expect(await check(fresh)).toBe(true);
  });

  it('a second rotation during a grace ends the first grace at once (staff reset too)', async () => {
    const { orderId, key: first } = await buy(t, plan, alice);
    const second = (await t.admin('serviceapikey/reset', { order_id: orderId, grace_seconds: 3600 })).result as string;
    expect(await check(first)).toBe(true);
    const third = (await as(alice, 'serviceapikey/reset', { key: second, grace_seconds: 3600 })).result as string;
    expect(await check(first)).toBe(false);
    expect(await check(second)).toBe(true);
    expect(await check(third)).toBe(true);
    // Without grace the old key stops at once, and so does the one in its grace.
    const fourth = (await as(alice, 'serviceapikey/reset', { order_id: orderId })).result as string;
    expect(await check(second)).toBe(false);
    expect(await check(third)).toBe(false);
    expect(await check(fourth)).toBe(true);
  });

  it('a suspended client account stops the old key in its grace too', async () => {
    const carol = await t.createClient();
    const { orderId, key } = await buy(t, plan, carol);
    const fresh = (await as(carol, 'serviceapikey/reset', { order_id: orderId, grace_seconds: 600 })).result as string;
    expect(await check(key)).toBe(true);
    expect((await t.admin('client/update', { id: carol.id, status: 'suspended' })).result).toBe(true);
    expect(await check(key)).toBe(false);
    expect(await check(fresh)).toBe(false);
    expect((await t.admin('client/update', { id: carol.id, status: 'active' })).result).toBe(true);
    expect(await check(key)).toBe(true);
  });

  it('a suspended order stops the old key in its grace too; bad grace_seconds are 422', async () => {
    const { orderId, key } = await buy(t, plan, alice);
    const fresh = (await as(alice, 'serviceapikey/reset', { order_id: orderId, grace_seconds: 600 })).result as string;
    expect((await t.admin('order/suspend', { id: orderId })).status).toBe(200);
    expect(await check(key)).toBe(false);
    expect(await check(fresh)).toBe(false);
    expectError(await as(alice, 'serviceapikey/reset', { order_id: orderId, grace_seconds: 60 }), 409);
    expectInvalid(await as(alice, 'serviceapikey/reset', { order_id: orderId, grace_seconds: -1 }), 'grace_seconds');
    expectInvalid(await as(alice, 'serviceapikey/reset', { order_id: orderId, grace_seconds: 604_801 }), 'grace_seconds');
    expectInvalid(await t.admin('serviceapikey/reset', { order_id: orderId, grace_seconds: 'soon' }), 'grace_seconds');
    expectError(await as(bob, 'serviceapikey/reset', { order_id: orderId, grace_seconds: 60 }), 404);
  });
});
