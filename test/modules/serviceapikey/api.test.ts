// The API key product over HTTP: selling a plan, validating its key, every revoke path, reset, usage metering,
// bad input, permissions and what is stored. Runs on SQLite, and on PostgreSQL (+ Redis) when TEST_* are set.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectError, expectInvalid } from '../../helpers/assertions.ts';

const KEY_FORM = /^[0-9A-F]{8}-[0-9A-F]{8}-[0-9A-F]{8}-[0-9A-F]{8}$/;

async function createPlan(t: TestApp, config: Record<string, unknown>, pricing?: unknown): Promise<number> {
  const prepared = await t.admin('product/prepare', { title: 'API plan', type: 'apikey' });
  expect(prepared.status).toBe(200);
  const id = prepared.result as number;
  const updated = await t.admin('product/update', { id, status: 'enabled', config, ...(pricing !== undefined && { pricing }) });
  expect(updated.body).toEqual({ result: true, error: null });
  return id;
}

async function issueKey(t: TestApp, productId: number, clientId: number, period?: string): Promise<{ orderId: number; key: string }> {
  const created = await t.admin('order/create', { client_id: clientId, product_id: productId, activate: true, ...(period !== undefined && { period }) });
  expect(created.status).toBe(200);
  const orderId = created.result as number;
  const got = await t.admin('serviceapikey/get', { order_id: orderId });
  expect(got.status).toBe(200);
  return { orderId, key: got.result.api_key as string };
}

describe('serviceapikey over HTTP', () => {
  let t: TestApp;
  let plan: number;
  let client: Awaited<ReturnType<TestApp['createClient']>>;
  let other: Awaited<ReturnType<TestApp['createClient']>>;

  const check = async (key: unknown, ip?: string) => {
    const reply = await t.call('/api/guest/serviceapikey/check', { key }, ip === undefined ? {} : { ip });
    return reply;
  };
  const checkTrue = async (key: string) => (await check(key)).result as boolean;
  const info = async (key: unknown) => (await t.call('/api/guest/serviceapikey/get_info', { key })).result;

  beforeAll(async () => {
    t = await createTestApp();
    plan = await createPlan(t, {});
    client = await t.createClient();
    other = await t.createClient();
  });
  afterAll(async () => {
    await t.close();
  });

  it('sells a plan end to end: product, cart, checkout, payment, key, check and get_info', async () => {
    const prepared = await t.admin('product/prepare', { title: 'Pro API', type: 'apikey' });
    const productId = prepared.result as number;
    const updated = await t.admin('product/update', {
      id: productId,
      status: 'enabled',
      pricing: { type: 'recurrent', recurrent: { '1M': { price: '10.00', setup: '0.00', enabled: true } } },
      config: { custom: { monthlyLimit: 1000, tier: 'pro' } },
    });
    expect(updated.body).toEqual({ result: true, error: null });

    // Guests see the custom parameters and nothing else of the config.
    const listed = await t.call('/api/guest/product/get', { id: productId });
    expect(listed.result.config).toEqual({ custom: { monthlyLimit: 1000, tier: 'pro' } });

    const buyer = await t.createClient();
    const basic: [string, string] = ['client', buyer.token];
    expect((await t.call('/api/client/cart/add_item', { id: productId, period: '1M' }, { basic })).result).toBe(true);
    const checkout = await t.call('/api/client/cart/checkout', {}, { basic });
    expect(checkout.status).toBe(200);
    const { order_id: orderId, invoice_id: invoiceId } = checkout.result as { order_id: number; invoice_id: number };

    // Not paid yet: no key.
    const before = await t.call('/api/client/order/service', { id: orderId }, { basic });
    expect(before.result).toMatchObject({ status: 'pending_setup', api_key: null, valid: 0 });

    expect((await t.admin('invoice/mark_as_paid', { id: invoiceId })).result).toBe(true);
    const service = await t.call('/api/client/order/service', { id: orderId }, { basic });
    expect(service.status).toBe(200);
    expect(service.result).toMatchObject({ status: 'active', config: { monthlyLimit: 1000, tier: 'pro' }, valid: 1, reason: 'VALID' });
    const key = service.result.api_key as string;
    expect(key).toMatch(KEY_FORM);

    const adminService = await t.admin('order/service', { id: orderId });
    expect(adminService.result).toMatchObject({ api_key: key, valid: 1, config: { monthlyLimit: 1000, tier: 'pro' } });

    const checked = await check(key);
    expect(checked.status).toBe(200);
    expect(checked.body).toEqual({ result: true, error: null });

    const got = await info(key);
    expect(got).toMatchObject({ valid: 1, config: { monthlyLimit: 1000, tier: 'pro' }, reason: 'VALID' });
    const now = new Date().toISOString();
    expect(got.usage).toEqual({
      period_start: `${now.slice(0, 7)}-01`,
      period_end: expect.stringMatching(new RegExp(`^${now.slice(0, 7)}-(28|29|30|31)$`)),
      used: 2,
      limit: 1000,
      remaining: 998,
      // CONTRACT §12: the included uses default to monthlyLimit; this plan bills no overage.
      included: 1000,
      overage_units: 0,
      overage_amount: null,
      hard_limit: null,
      // Issue 23: no limit reached, and a plan without meters of its own.
      limited_by: null,
      meters: [],
    });

    // The client's own list.
    const list = await t.call('/api/client/serviceapikey/get_list', {}, { basic });
    expect(list.result).toMatchObject({ total: 1, list: [{ order_id: orderId, api_key: key, valid: 1, config: { tier: 'pro' } }] });
    expect(Object.keys(list.result.list[0]).toSorted()).toEqual(['api_key', 'config', 'created_at', 'id', 'name', 'order_id', 'reason', 'rotating_until', 'updated_at', 'valid']);

    // Later product edits do not change existing keys' parameters.
    await t.admin('product/update', { id: productId, config: { custom: { monthlyLimit: 5, tier: 'basic' } } });
    expect((await info(key)).config).toEqual({ monthlyLimit: 1000, tier: 'pro' });
  });

  it('client/serviceapikey/get_list: only the caller keys, paginated; wrong role and bad pages refused', async () => {
    const mine = await issueKey(t, plan, client.id);
    const theirs = await issueKey(t, plan, other.id);
    const listOf = async (token: string, params: Record<string, unknown> = {}) =>
      t.call('/api/client/serviceapikey/get_list', { per_page: 500, ...params }, { basic: ['client', token] });
    const own = (await listOf(client.token)).result.list as Array<{ order_id: number }>;
    expect(own.map((row) => row.order_id)).toContain(mine.orderId);
    expect(own.map((row) => row.order_id)).not.toContain(theirs.orderId);

    const paged = await listOf(client.token, { per_page: 1, page: 1 });
    expect(paged.result).toMatchObject({ page: 1, per_page: 1, list: [expect.any(Object)] });
    expect((await listOf(client.token, { per_page: 1, page: 100_000 })).result.list).toEqual([]);
    expectInvalid(await listOf(client.token, { per_page: 501 }), 'per_page');
    expectInvalid(await listOf(client.token, { page: 0 }), 'page');
    expectInvalid(await listOf(client.token, { page: 'two' }), 'page');
    expectError(await t.call('/api/client/serviceapikey/get_list', {}, { basic: ['admin', t.adminToken] }), 203, 401);
    expectError(await t.call('/api/client/serviceapikey/get_list', {}, { basic: ['client', t.adminToken] }), 204, 401);
  });

  it('answers every revoke path at once, without changing the key', async () => {
    const { orderId, key } = await issueKey(t, plan, client.id);
    expect(await checkTrue(key)).toBe(true); // warms the cache

    const steps: Array<[string, Record<string, unknown>, boolean, string]> = [
      ['order/suspend', { id: orderId, reason: 'abuse' }, false, 'NOT_ACTIVE'],
      ['order/unsuspend', { id: orderId }, true, 'VALID'],
      ['order/cancel', { id: orderId }, false, 'NOT_ACTIVE'],
      ['order/uncancel', { id: orderId }, true, 'VALID'],
      ['serviceapikey/update', { order_id: orderId, valid: 0 }, false, 'DISABLED'],
      ['serviceapikey/update', { order_id: orderId, valid: true }, true, 'VALID'],
      ['serviceapikey/update', { order_id: orderId, valid: '0' }, false, 'DISABLED'],
      ['serviceapikey/update', { order_id: orderId, valid: 1 }, true, 'VALID'],
    ];
    for (const [path, params, valid, reason] of steps) {
      const reply = await t.admin(path, params);
      expect(reply.body, path).toEqual({ result: true, error: null });
      expect(await checkTrue(key), `${path} ${JSON.stringify(params)}`).toBe(valid);
      const got = await info(key);
      expect(got.valid).toBe(valid ? 1 : 0);
      expect(got.reason).toBe(reason);
      expect(got.config).toEqual(valid ? {} : null);
    }
    expect((await t.admin('serviceapikey/get', { order_id: orderId })).result.api_key).toBe(key);
  });

  it('expires with the order and validates again after renewal', async () => {
    const recurring = await createPlan(t, {}, { type: 'recurrent', recurrent: { '1M': { price: '5.00', setup: '0', enabled: true } } });
    const { orderId, key } = await issueKey(t, recurring, client.id, '1M');
    expect(await checkTrue(key)).toBe(true);
    const past = new Date(Date.now() - 60_000).toISOString().replace(/\.\d{3}Z$/, 'Z');
    expect((await t.admin('order/update', { id: orderId, expires_at: past })).result).toBe(true);
    expect(await checkTrue(key)).toBe(false);
    expect(await info(key)).toMatchObject({ valid: 0, config: null, reason: 'EXPIRED' });
    expect((await t.admin('order/renew', { id: orderId })).result).toBe(true);
    expect(await checkTrue(key)).toBe(true);

    // Expiry is judged against the clock at each call, not when the record was cached. The clock is moved rather
    // than waited for: a check "before expiry" that only ran when the machine was fast enough was no assertion.
    const soon = new Date(Date.now() + 60_000).toISOString().replace(/\.\d{3}Z$/, 'Z');
    expect((await t.admin('order/update', { id: orderId, expires_at: soon })).result).toBe(true);
    expect(await checkTrue(key)).toBe(true);
    vi.useFakeTimers({ toFake: ['Date'], now: Date.parse(soon) + 1000 });
    try {
      expect(await checkTrue(key)).toBe(false);
    } finally {
      vi.useRealTimers();
    }
    expect(await checkTrue(key)).toBe(true);
  });

  it('treats a key whose order is not active (pending, failed) as invalid', async () => {
    const { orderId, key } = await issueKey(t, plan, client.id);
    // Set up a state selling cannot reach with a key (an issued key on a pending order) before the key is ever read.
    await t.services.db.updateTable('orders').set({ status: 'failed_setup' }).where('id', '=', orderId).execute();
    expect(await checkTrue(key)).toBe(false);
    expect(await info(key)).toMatchObject({ valid: 0, config: null, reason: 'NOT_ACTIVE' });
    const service = await t.admin('order/service', { id: orderId });
    expect(service.result).toMatchObject({ api_key: key, valid: 1, reason: 'NOT_ACTIVE' });
  });

  it('deletes the key with its order', async () => {
    const { orderId, key } = await issueKey(t, plan, client.id);
    expect(await checkTrue(key)).toBe(true);
    await t.admin('order/cancel', { id: orderId });
    expect((await t.admin('order/delete', { id: orderId })).result).toBe(true);
    expect(await checkTrue(key)).toBe(false);
    expect(await info(key)).toEqual({ valid: 0, config: null, reason: 'NOT_FOUND', usage: null, retry_after: null, rotating_until: null });
    expect((await t.admin('serviceapikey/get', { order_id: orderId })).status).toBe(404);
    const rows = await t.services.db.selectFrom('api_keys').select('id').where('order_id', '=', orderId).execute();
    expect(rows).toEqual([]);
  });

  it('resets keys: the old one fails at once, the new one works; ownership and state are checked', async () => {
    const { orderId, key } = await issueKey(t, plan, client.id);
    expect(await checkTrue(key)).toBe(true);

    const basic: [string, string] = ['client', client.token];
    const reset = await t.call('/api/client/serviceapikey/reset', { order_id: orderId }, { basic });
    expect(reset.status).toBe(200);
    const fresh = reset.result as string;
    expect(fresh).toMatch(KEY_FORM);
    expect(fresh).not.toBe(key);
    expect(await checkTrue(key)).toBe(false);
    expect(await checkTrue(fresh)).toBe(true);

    // By key, through the admin.
    const byKey = await t.admin('serviceapikey/reset', { key: fresh });
    expect(byKey.status).toBe(200);
    const third = byKey.result as string;
    expect(await checkTrue(fresh)).toBe(false);
    expect(await checkTrue(third)).toBe(true);
    expect((await t.call('/api/client/order/service', { id: orderId }, { basic })).result.api_key).toBe(third);

    // Another client's order (or key) is 404, like one that does not exist.
    const otherBasic: [string, string] = ['client', other.token];
    for (const params of [{ order_id: orderId }, { key: third }, { order_id: 999_999 }, { key: 'not-a-key' }]) {
      const denied = await t.call('/api/client/serviceapikey/reset', params, { basic: otherBasic });
      expect(denied.status).toBe(404);
      expect(denied.body.error?.code).toBe(404);
    }
    expect(await checkTrue(third)).toBe(true);

    // Neither order_id nor key → 422 naming order_id.
    const none = await t.admin('serviceapikey/reset', {});
    expect(none.status).toBe(422);
    expect(none.body.error?.message).toContain('order_id');

    // A suspended order's key cannot be reset.
    await t.admin('order/suspend', { id: orderId });
    const conflict = await t.call('/api/client/serviceapikey/reset', { order_id: orderId }, { basic });
    expect(conflict.status).toBe(409);
    expect(conflict.body.error?.code).toBe(409);
    expect((await t.admin('serviceapikey/reset', { order_id: orderId })).status).toBe(409);
    await t.admin('order/unsuspend', { id: orderId });
    expect(await checkTrue(third)).toBe(true);
  });

  it('admin update: config replaces the custom parameters; a different api_key → 422 "use reset"', async () => {
    const { orderId, key } = await issueKey(t, plan, client.id);
    expect((await t.admin('serviceapikey/update', { order_id: orderId, config: { tier: 'enterprise', monthlyLimit: 50 } })).result).toBe(true);
    expect((await info(key)).config).toEqual({ tier: 'enterprise', monthlyLimit: 50 });
    expect((await t.admin('serviceapikey/update', { order_id: orderId, config: { custom_tier: 'basic', custom_monthlyLimit: '7' } })).result).toBe(true);
    expect((await info(key)).config).toEqual({ tier: 'basic', monthlyLimit: 7 });

    const different = await t.admin('serviceapikey/update', { order_id: orderId, api_key: 'AAAAAAAA-BBBBBBBB-CCCCCCCC-DDDDDDDD' });
    expect(different.status).toBe(422);
    expect(different.body.error?.message).toContain('api_key');
    expect(different.body.error?.message).toContain('use reset');
    // The same key is accepted and ignored.
    expect((await t.admin('serviceapikey/update', { order_id: orderId, api_key: key, valid: 1 })).result).toBe(true);

    const badLimit = await t.admin('serviceapikey/update', { order_id: orderId, config: { monthlyLimit: -1 } });
    expect(badLimit.status).toBe(422);
    expect(badLimit.body.error?.message).toContain('config.monthlyLimit');
    expect((await t.admin('serviceapikey/update', { order_id: 999_999, valid: 0 })).status).toBe(404);
    expect((await t.admin('serviceapikey/update', { valid: 0 })).status).toBe(422);
    expect((await t.admin('serviceapikey/update', { order_id: orderId, valid: 'maybe' })).status).toBe(422);
    expect((await t.admin('serviceapikey/update', { order_id: orderId, config: 'x' })).status).toBe(422);
  });

  it('answers bad keys with 422 or false, never a 500', async () => {
    for (const bad of [undefined, '', 42, { key: 'x' }, ['a'], 'x'.repeat(10 * 1024)]) {
      const reply = await t.call('/api/guest/serviceapikey/check', bad === undefined ? {} : { key: bad });
      expect(reply.status, JSON.stringify(bad)?.slice(0, 40)).toBe(422);
      expect(reply.body.error?.code).toBe(422);
      expect(reply.body.error?.message).toContain('key');
      const infoReply = await t.call('/api/guest/serviceapikey/get_info', bad === undefined ? {} : { key: bad });
      expect(infoReply.status).toBe(422);
    }
    for (const odd of ["' OR 1=1 --", "x'; DROP TABLE api_keys; --", 'AAAAAAAA-BBBBBBBB-CCCCCCCC-DDDDDDDD', 'é€😀', '%00', '\\x00']) {
      const reply = await check(odd);
      expect(reply.status).toBe(200);
      expect(reply.result).toBe(false);
      expect(await info(odd)).toEqual({ valid: 0, config: null, reason: 'NOT_FOUND', usage: null, retry_after: null, rotating_until: null });
    }
    // NUL bytes: refused by the gateway for every parameter (422 naming it), or answered false — never a 500.
    for (const nul of ['ABCDEF12\u0000-ABCDEF12', '\u0000']) {
      for (const path of ['check', 'get_info']) {
        const reply = await t.call(`/api/guest/serviceapikey/${path}`, { key: nul });
        expect([200, 422]).toContain(reply.status);
        if (reply.status === 422) expect(reply.body.error?.message).toContain('key');
        else expect(reply.result === false || reply.result?.valid === 0).toBe(true);
      }
    }
    // Form data and GET work too (FOSSBilling clients use both).
    const { key } = await issueKey(t, plan, client.id);
    const form = await t.call('/api/guest/serviceapikey/check', {}, { raw: { body: `key=${encodeURIComponent(key)}`, contentType: 'application/x-www-form-urlencoded' } });
    expect(form.result).toBe(true);
    const get = await t.call('/api/guest/serviceapikey/check', { key }, { method: 'GET' });
    expect(get.result).toBe(true);
    // Keys are compared exactly as issued: case and dashes matter.
    expect(await checkTrue(key.toLowerCase())).toBe(false);
    expect(await checkTrue(key.replaceAll('-', ''))).toBe(false);
    expect((await t.call('/api/guest/serviceapikey/check', { key: key.toLowerCase() }, { method: 'GET' })).result).toBe(false);
    expect(await checkTrue(key)).toBe(true);
  });

  it('issues keys of exactly the configured form', async () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ capitalization: 'lowercase' }, /^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}$/],
      [{ case: 'lower' }, /^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}$/],
      [{ capitalization: 'mixed', length: 128, split: false }, /^[0-9a-fA-F]{128}$/],
      [{ split: false }, /^[0-9A-F]{32}$/],
      [{ length: 8 }, /^[0-9A-F]{8}$/],
      [{ length: 128 }, /^[0-9A-F]{8}(-[0-9A-F]{8}){15}$/],
      [{ length: 12, split_interval: 5 }, /^[0-9A-F]{5}-[0-9A-F]{5}-[0-9A-F]{2}$/],
      [{ length: '16', split: '1', split_interval: '4', case: 'upper' }, /^[0-9A-F]{4}(-[0-9A-F]{4}){3}$/],
    ];
    for (const [config, form] of cases) {
      const product = await createPlan(t, config);
      const { key } = await issueKey(t, product, client.id);
      expect(key, JSON.stringify(config)).toMatch(form);
      expect(await checkTrue(key)).toBe(true);
    }
    const mixed = await createPlan(t, { capitalization: 'mixed', length: 128, split: false });
    const { key } = await issueKey(t, mixed, client.id);
    expect(key).toMatch(/[a-f]/);
    expect(key).toMatch(/[A-F]/);
  });

  it('validates product options: 422 naming config.<option>, nothing saved', async () => {
    const product = await createPlan(t, { length: 16 });
    const bad: Array<[Record<string, unknown>, string]> = [
      [{ length: 7 }, 'config.length'],
      [{ length: 129 }, 'config.length'],
      [{ length: 'long' }, 'config.length'],
      [{ split_interval: 0 }, 'config.split_interval'],
      [{ split_interval: 17 }, 'config.split_interval'],
      [{ split: 'sometimes' }, 'config.split'],
      [{ capitalization: 'title' }, 'config.capitalization'],
      [{ case: 'camel' }, 'config.case'],
      [{ enforce_limit: 'maybe' }, 'config.enforce_limit'],
      [{ custom: 'x' }, 'config.custom'],
      [{ custom: { monthlyLimit: 'lots' } }, 'config.custom.monthlyLimit'],
    ];
    for (const [config, param] of bad) {
      const reply = await t.admin('product/update', { id: product, config });
      expect(reply.status, JSON.stringify(config)).toBe(422);
      expect(reply.body.error?.message).toContain(param);
    }
    const stored = await t.admin('product/get', { id: product });
    expect(stored.result.config).toMatchObject({ length: 16, split: true, split_interval: 8, capitalization: 'uppercase', enforce_limit: false, custom: {} });

    // FOSSBilling's flat custom_<name> keys: numeric strings become numbers.
    await t.admin('product/update', { id: product, config: { custom_monthlyLimit: '250', custom_tier: 'basic', custom_ratio: '0.5', custom_code: '007x' } });
    const flat = await t.admin('product/get', { id: product });
    expect(flat.result.config.custom).toEqual({ monthlyLimit: 250, tier: 'basic', ratio: 0.5, code: '007x' });
    const { key } = await issueKey(t, product, client.id);
    expect((await info(key)).config).toEqual({ monthlyLimit: 250, tier: 'basic', ratio: 0.5, code: '007x' });
  });

  it('meters usage per month and enforces the limit when asked', async () => {
    const limited = await createPlan(t, { enforce_limit: true, custom: { monthlyLimit: 3, tier: 'basic' } });
    const { orderId, key } = await issueKey(t, limited, client.id);
    expect([await checkTrue(key), await checkTrue(key), await checkTrue(key)]).toEqual([true, true, true]);
    expect(await checkTrue(key)).toBe(false);
    const got = await info(key);
    expect(got).toMatchObject({ valid: 0, config: null, reason: 'LIMIT_EXCEEDED' });
    expect(got.usage).toMatchObject({ used: 3, limit: 3, remaining: 0 });

    // Invalid calls count nothing; raising the limit validates again.
    await t.admin('serviceapikey/update', { order_id: orderId, config: { monthlyLimit: 5, tier: 'basic' } });
    expect(await checkTrue(key)).toBe(true);
    expect((await info(key)).usage).toMatchObject({ used: 5, limit: 5, remaining: 0 });
    expect(await checkTrue(key)).toBe(false);

    const today = new Date().toISOString().slice(0, 10);
    const basic: [string, string] = ['client', client.token];
    const usage = await t.call('/api/client/serviceapikey/usage', { order_id: orderId }, { basic });
    expect(usage.status).toBe(200);
    expect(usage.result.total).toBe(5);
    expect(usage.result.days.find((day: { date: string }) => day.date === today)).toEqual({ date: today, count: 5 });
    expect(usage.result.days[0].date).toBe(`${today.slice(0, 7)}-01`);

    // Counts reach the database within a flush and survive it exactly.
    await t.services.apikeys.flushUsage();
    const rows = await t.services.db.selectFrom('api_key_usage').innerJoin('api_keys', 'api_keys.id', 'api_key_usage.api_key_id').select(['day', 'count']).where('api_keys.order_id', '=', orderId).execute();
    expect(rows).toEqual([{ day: today, count: 5 }]);
    const admin = await t.admin('serviceapikey/usage', { order_id: orderId, from: today, to: today });
    expect(admin.result).toEqual({ total: 5, days: [{ date: today, count: 5 }], meters: [] });

    // Date validation.
    for (const params of [
      { order_id: orderId, from: '2026-13-01' },
      { order_id: orderId, from: '2026-02-30' },
      { order_id: orderId, from: '2026-03-02', to: '2026-03-01' },
      { order_id: orderId, from: '2024-01-01', to: '2025-12-31' },
      { order_id: orderId, to: 'yesterday' },
    ]) {
      const reply = await t.admin('serviceapikey/usage', params);
      expect(reply.status, JSON.stringify(params)).toBe(422);
    }
    const year = await t.admin('serviceapikey/usage', { order_id: orderId, from: '2024-01-01', to: '2024-12-31' });
    expect(year.result.days).toHaveLength(366);
    expect(year.result.total).toBe(0);
    expect((await t.call('/api/client/serviceapikey/usage', { order_id: orderId }, { basic: ['client', other.token] })).status).toBe(404);
  });

  it('checks roles and permissions', async () => {
    const { orderId } = await issueKey(t, plan, client.id);
    const clientOnAdmin = await t.call('/api/admin/serviceapikey/get', { order_id: orderId }, { basic: ['client', client.token] });
    expect(clientOnAdmin.status).toBe(401);
    expect(clientOnAdmin.body.error?.code).toBe(203);
    expect((await t.call('/api/client/serviceapikey/get_list', {})).status).toBe(401);

    const group = await t.admin('staff/group_create', { name: 'Support', permissions: ['client.view'] });
    const email = `support-${Date.now()}@example.com`;
    const password = 'Support-Passw0rd';
    await t.admin('staff/create', { email, password, name: 'Support', admin_group_id: group.result });
    const browser = await t.login('staff', email, password);
    for (const action of ['get', 'update', 'reset', 'usage']) {
      const denied = await t.call(`/api/admin/serviceapikey/${action}`, { order_id: orderId }, { browser, csrf: true });
      expect(denied.status, action).toBe(403);
      expect(denied.body.error?.code).toBe(403);
    }
    expect((await t.admin('serviceapikey/get', { order_id: 'one' })).status).toBe(422);
    expect((await t.admin('serviceapikey/get', {})).status).toBe(422);
  });

  it('shows the key in admin/order/service only to staff who manage keys', async () => {
    const { orderId, key } = await issueKey(t, plan, client.id);
    const group = await t.admin('staff/group_create', { name: 'Order desk', permissions: ['order.view'] });
    const email = `orders-${Date.now()}@example.com`;
    await t.admin('staff/create', { email, password: 'Orders-Passw0rd', name: 'Orders', admin_group_id: group.result });
    const browser = await t.login('staff', email, 'Orders-Passw0rd');
    const masked = await t.call('/api/admin/order/service', { id: orderId }, { browser, csrf: true });
    expect(masked.status).toBe(200);
    expect(masked.result).toMatchObject({ id: orderId, api_key: null });
    // The validity switch of a new key is on (FOSSBilling's 0/1), and staff who cannot see the key see that too.
    expect(masked.result.valid).toBe(1);
    const full = (await t.admin('order/service', { id: orderId })).result;
    expect(full.api_key).toBe(key);
    // Only the key is masked: everything else is the answer key managers get.
    expect(masked.result).toEqual({ ...full, api_key: null });
  });

  it('answers from a warm cache without waiting for the database', async () => {
    const limited = await createPlan(t, { enforce_limit: true, custom: { monthlyLimit: 100 } });
    const { key } = await issueKey(t, limited, client.id);
    const { key: second } = await issueKey(t, plan, client.id);
    expect(await checkTrue(key)).toBe(true);
    expect(await checkTrue(second)).toBe(true);
    // Hold a transaction open (on SQLite it owns the only connection: any query would wait for it).
    let release = (): void => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let started = (): void => undefined;
    const open = new Promise<void>((resolve) => {
      started = resolve;
    });
    const transaction = t.services.db.transaction().execute(async (trx) => {
      await trx.selectFrom('api_keys').select('id').limit(1).execute();
      started();
      await held;
    });
    await open;
    try {
      const timeout = new Promise<string>((resolve) => setTimeout(() => resolve('waited'), 1500));
      for (let i = 0; i < 5; i++) {
        expect(await Promise.race([checkTrue(key), timeout])).toBe(true);
        expect(await Promise.race([info(second).then((got) => got.reason as string), timeout])).toBe('VALID');
      }
    } finally {
      release();
      await transaction;
    }
  });

  it('stores neither the key nor a reversible encoding of it without the instance secret', async () => {
    const { orderId, key } = await issueKey(t, plan, client.id);
    const row = await t.services.db.selectFrom('api_keys').selectAll().where('order_id', '=', orderId).executeTakeFirstOrThrow();
    const text = JSON.stringify(row);
    const bare = key.replaceAll('-', '');
    for (const form of [key, key.toLowerCase(), bare, bare.toLowerCase(), Buffer.from(key).toString('base64'), Buffer.from(key).toString('base64url'), Buffer.from(key).toString('hex')]) {
      expect(text.toLowerCase()).not.toContain(form.toLowerCase());
    }
    // The sealed copy decodes to nothing recognisable without the key derived from the instance secret.
    for (const part of row.key_enc.split('.')) {
      const decoded = Buffer.from(part, 'base64url');
      expect(decoded.toString('latin1')).not.toContain(bare);
      expect(decoded.toString('hex')).not.toContain(bare.toLowerCase());
    }
    expect(row.key_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(row.key_hash).toBe(t.services.secrets.hash(key));
    expect(t.services.secrets.decrypt(row.key_enc)).toBe(key);
  });
});

describe('serviceapikey brute-force protection', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_API_KEY_CHECK_FAILED: '3/60' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('blocks an address after too many unknown keys, for every key, until the window ends', async () => {
    const product = await createPlan(t, {});
    const client = await t.createClient();
    const { key } = await issueKey(t, product, client.id);
    const ip = '203.0.113.7';
    const call = (path: string, k: string, from = ip) => t.call(`/api/guest/serviceapikey/${path}`, { key: k }, { ip: from });

    expect((await call('check', key)).result).toBe(true);
    for (let i = 0; i < 3; i++) expect((await call('check', `DEADBEEF-0000000${i}`)).result).toBe(false);
    const over = await call('get_info', 'DEADBEEF-00000009');
    expect(over.status).toBe(429);
    expect(over.body.error?.code).toBe(429);
    expect(Number(over.headers['retry-after'])).toBeGreaterThan(0);
    // Now even a valid key is refused from that address…
    const valid = await call('check', key);
    expect(valid.status).toBe(429);
    expect(Number(valid.headers['retry-after'])).toBeGreaterThan(0);
    expect((await call('get_info', key)).status).toBe(429);
    // …and junk that never reaches the database counts too; other addresses are unaffected.
    expect((await call('check', key, '203.0.113.8')).result).toBe(true);
    for (let i = 0; i < 3; i++) expect((await call('check', `junk ${i}`, '203.0.113.9')).result).toBe(false);
    expect((await call('check', key, '203.0.113.9')).result).toBe(true);
    expect((await call('check', 'junk 4', '203.0.113.9')).status).toBe(429);
    expect((await call('check', key, '203.0.113.9')).status).toBe(429);
    // Valid keys never count as failures.
    for (let i = 0; i < 10; i++) expect((await call('check', key, '203.0.113.10')).result).toBe(true);
  });
});

describe('serviceapikey usage counts at shutdown', () => {
  it('writes the unflushed counts before the database closes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-apikey-'));
    const file = join(dir, 'usage.db');
    try {
      const t = await createTestApp({ DATABASE_URL: `sqlite:${file}` });
      const product = await createPlan(t, {});
      const client = await t.createClient();
      const { orderId, key } = await issueKey(t, product, client.id);
      for (let i = 0; i < 7; i++) expect((await t.call('/api/guest/serviceapikey/check', { key })).result).toBe(true);
      await t.close();
      const sqlite = new SqliteDatabase(file, { readonly: true });
      const row = sqlite
        .prepare('select sum(u.count) as total from api_key_usage u join api_keys k on k.id = u.api_key_id where k.order_id = ?')
        .get(orderId) as { total: number };
      sqlite.close();
      expect(row.total).toBe(7);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
