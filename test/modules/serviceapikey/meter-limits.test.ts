// A plan meter's hard limit on the check (issue 23 item 3) and get_info's `usage.meters` (item 4): a key whose order
// is at a meter's hard_limit is refused (LIMIT_EXCEEDED, get_info names the meter in `usage.limited_by`), below it the
// key is valid, the next period is clean, a plan change raising the limit lets it through, the staff and client reads
// judge it the same, the events stream announces it, and the warm check asks the database nothing.
// Runs on SQLite, and on PostgreSQL + Redis when TEST_DATABASE_URL / TEST_REDIS_URL are set.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { CompiledQuery } from 'kysely';
import { METER_REFRESH_MS } from '../../../src/modules/serviceapikey/check/meter-state.ts';
import type { KeyEvent } from '../../../src/modules/serviceapikey/sync/events-stream.ts';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { asClient, MONTHLY } from '../../helpers/selling-fixtures.ts';

const TOKENS = { code: 'tokens', name: 'Tokens', unit: 'token', aggregation: 'sum', included: 1000, overage: { mode: 'per_unit', unit_price: '0.01' } };
const USERS = { code: 'users', name: 'Users', unit: 'user', aggregation: 'unique_count', property: 'user' };
const requests = (hardLimit: number) => ({ code: 'requests', name: 'Requests', unit: 'request', aggregation: 'count', hard_limit: hardLimit });

let t: TestApp;
let buyer: Awaited<ReturnType<TestApp['createClient']>>;
let events = 0;

beforeAll(async () => {
  t = await createTestApp();
  buyer = await t.createClient();
});
afterAll(async () => {
  vi.useRealTimers();
  await t.close();
});
afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

/** Freezes the clock (Date only: timers and I/O run as usual). */
function at(iso: string): void {
  vi.useFakeTimers({ toFake: ['Date'], now: Date.parse(iso) });
}

async function plan(meters: unknown[], price = '10.00', extra: Record<string, unknown> = {}): Promise<number> {
  const prepared = await t.admin('product/prepare', { title: `Metered ${price} ${Math.random()}`, type: 'apikey' });
  const pricing = { ...MONTHLY, recurrent: { '1M': { price, setup: '0', enabled: true } } };
  const updated = await t.admin('product/update', { id: prepared.result, status: 'enabled', pricing, config: { usage_period: 'calendar_month', meters, ...extra } });
  expect(updated.body).toEqual({ result: true, error: null });
  return prepared.result as number;
}

async function buy(productId: number): Promise<{ orderId: number; key: string }> {
  const created = await t.admin('order/create', { client_id: buyer.id, product_id: productId, activate: true, period: '1M' });
  expect(created.body.error).toBeNull();
  const orderId = created.result as number;
  return { orderId, key: (await t.admin('serviceapikey/get', { order_id: orderId })).result.api_key as string };
}

const check = async (key: string) => (await t.call('/api/guest/serviceapikey/check', { key })).result as boolean;
const info = async (key: string) => (await t.call('/api/guest/serviceapikey/get_info', { key })).result;

/** Ingests `count` events of `meter` for the order through the admin API (each a fresh id). */
async function ingest(orderId: number, meter: string, count: number, extra: (i: number) => Record<string, unknown> = () => ({})): Promise<void> {
  const batch = Array.from({ length: count }, (_, i) => ({ id: `ev-${++events}`, order_id: orderId, meter, ...extra(i) }));
  const reply = await t.admin('usage/ingest', { events: batch });
  expect(reply.body.error).toBeNull();
  expect(reply.result).toMatchObject({ accepted: count, rejected: [] });
}

/** The SQL of every query the app's database runs while `work` runs. */
async function queriesDuring(work: () => Promise<void>): Promise<string[]> {
  const executor = t.services.db.getExecutor();
  const seen: string[] = [];
  const original = executor.executeQuery.bind(executor);
  const spy = vi.spyOn(executor, 'executeQuery').mockImplementation((query: CompiledQuery) => {
    seen.push(query.sql);
    return original(query);
  });
  try {
    await work();
  } finally {
    spy.mockRestore();
  }
  return seen;
}

describe('a plan meter at its hard limit', () => {
  it('below the limit the key is valid and get_info shows every meter; at it check refuses and get_info names the meter', async () => {
    at('2031-03-10T12:00:00Z');
    const { orderId, key } = await buy(await plan([TOKENS, requests(5), USERS]));
    expect(await check(key)).toBe(true);
    await ingest(orderId, 'requests', 4);
    await ingest(orderId, 'tokens', 2, () => ({ value: 700 }));
    await ingest(orderId, 'users', 3, (i) => ({ properties: { user: `u${i % 2}` } }));
    // 4 of 5: still valid; the meters' figures are the period's so far, priced as the close bills them.
    expect(await check(key)).toBe(true);
    const below = await info(key);
    expect(below).toMatchObject({ valid: 1, reason: 'VALID', usage: { limited_by: null } });
    expect(below.usage.meters).toEqual([
      { code: 'tokens', name: 'Tokens', unit: 'token', aggregation: 'sum', used: 1400, included: 1000, overage_units: 400, overage_amount: '4.00', hard_limit: null },
      { code: 'requests', name: 'Requests', unit: 'request', aggregation: 'count', used: 4, included: null, overage_units: 0, overage_amount: null, hard_limit: 5 },
      { code: 'users', name: 'Users', unit: 'user', aggregation: 'unique_count', used: 2, included: null, overage_units: 0, overage_amount: null, hard_limit: null },
    ]);
    // The fifth request reaches the limit: refused at once in this process (ingestion re-read the quantities).
    await ingest(orderId, 'requests', 1);
    expect(await check(key)).toBe(false);
    const stopped = await info(key);
    expect(stopped).toMatchObject({ valid: 0, config: null, reason: 'LIMIT_EXCEEDED', usage: { limited_by: 'requests' } });
    expect(stopped.usage.meters[1]).toMatchObject({ code: 'requests', used: 5, hard_limit: 5 });
    // The verifiers' get_info answers the same.
    const verifier = await t.admin('serviceapikey/get_info', { key });
    expect(verifier.result).toMatchObject({ valid: 0, reason: 'LIMIT_EXCEEDED', order_id: orderId, usage: { limited_by: 'requests' } });
    expect((await t.admin('serviceapikey/check', { key })).result).toBe(false);
    // Refused checks count no use.
    expect(stopped.usage.used).toBe(below.usage.used);
  });

  it('the next usage period is clean', async () => {
    at('2031-04-28T12:00:00Z');
    const { orderId, key } = await buy(await plan([requests(3)]));
    await ingest(orderId, 'requests', 3);
    expect(await check(key)).toBe(false);
    at('2031-05-01T00:00:01Z');
    expect(await check(key)).toBe(true);
    expect((await info(key)).usage).toMatchObject({ limited_by: null, meters: [{ code: 'requests', used: 0, hard_limit: 3 }] });
    // A backfilled event of the closed-over period changes nothing in this one.
    await ingest(orderId, 'requests', 1, () => ({ timestamp: '2031-04-30T23:00:00Z' }));
    expect(await check(key)).toBe(true);
    await ingest(orderId, 'requests', 3);
    expect(await check(key)).toBe(false);
  });

  it('a plan change that raises the limit lets the key through again', async () => {
    at('2031-06-05T12:00:00Z');
    const small = await plan([requests(2)], '10.00');
    const large = await plan([requests(10)], '20.00');
    const { orderId, key } = await buy(small);
    await ingest(orderId, 'requests', 2);
    expect(await info(key)).toMatchObject({ reason: 'LIMIT_EXCEEDED', usage: { limited_by: 'requests' } });
    const changed = await asClient(t, buyer.token, 'order/change_plan', { id: orderId, product_id: large, period: '1M' });
    expect(changed.body.error).toBeNull();
    if (changed.result.invoice_id !== null) await t.admin('invoice/mark_as_paid', { id: changed.result.invoice_id });
    expect((await t.admin('order/get', { id: orderId })).result.product_id).toBe(large);
    expect(await check(key)).toBe(true);
    expect((await info(key)).usage).toMatchObject({ limited_by: null, meters: [{ code: 'requests', used: 2, hard_limit: 10 }] });
  });

  it("a plan without hard limits: get_info's figures follow ingestion at once, and the key stays valid", async () => {
    const { orderId, key } = await buy(await plan([TOKENS, USERS]));
    expect((await info(key)).usage.meters).toMatchObject([{ code: 'tokens', used: 0 }, { code: 'users', used: 0 }]);
    await ingest(orderId, 'tokens', 3, () => ({ value: 500 }));
    expect((await info(key)).usage).toMatchObject({ limited_by: null, meters: [{ code: 'tokens', used: 1500, overage_units: 500, overage_amount: '5.00' }, { code: 'users', used: 0 }] });
    expect(await check(key)).toBe(true);
  });

  it('a hard limit of 0 switches the meter off: refused before any event', async () => {
    const { key } = await buy(await plan([TOKENS, requests(0)]));
    expect(await check(key)).toBe(false);
    expect(await info(key)).toMatchObject({ reason: 'LIMIT_EXCEEDED', usage: { limited_by: 'requests' } });
  });

  it("the built-in calls limit is named `calls`, first when both are reached; a plan without meters shows none", async () => {
    const { orderId, key } = await buy(await plan([requests(1)], '10.00', { hard_limit: 2 }));
    await ingest(orderId, 'requests', 1);
    expect((await info(key)).usage).toMatchObject({ limited_by: 'requests', used: 0 });
    const plain = await buy(await plan([], '10.00', { hard_limit: 2 }));
    expect(await check(plain.key)).toBe(true);
    expect(await check(plain.key)).toBe(true);
    expect((await info(plain.key)).usage).toMatchObject({ limited_by: 'calls', meters: [], used: 2, hard_limit: 2 });
  });

  it('staff and client reads judge the key the same and show the meters', async () => {
    const { orderId, key } = await buy(await plan([TOKENS, requests(2)]));
    await ingest(orderId, 'tokens', 1, () => ({ value: 1500 }));
    const before = await t.admin('order/service', { id: orderId });
    expect(before.result).toMatchObject({ reason: 'VALID', usage: { limited_by: null, meters: [{ code: 'tokens', used: 1500, overage_units: 500, overage_amount: '5.00' }, { code: 'requests', used: 0 }] } });
    await ingest(orderId, 'requests', 2);
    const service = await t.admin('order/service', { id: orderId });
    expect(service.result).toMatchObject({ reason: 'LIMIT_EXCEEDED', usage: { limited_by: 'requests', meters: [{ code: 'tokens' }, { code: 'requests', used: 2, hard_limit: 2 }] } });
    expect((await asClient(t, buyer.token, 'order/service', { id: orderId })).result).toMatchObject({ reason: 'LIMIT_EXCEEDED', usage: { limited_by: 'requests' } });
    expect((await t.admin('serviceapikey/get', { order_id: orderId })).result).toMatchObject({ reason: 'LIMIT_EXCEEDED' });
    expect((await t.admin('serviceapikey/find', { key })).result).toMatchObject({ valid: 1, reason: 'LIMIT_EXCEEDED' });
    const listed = await asClient(t, buyer.token, 'serviceapikey/get_list', { order_id: orderId });
    expect(listed.result.list).toMatchObject([{ order_id: orderId, reason: 'LIMIT_EXCEEDED' }]);
  });

  it('the key change is announced on the events stream once the meter reaches its limit', async () => {
    const { orderId, key } = await buy(await plan([requests(3)]));
    expect(await check(key)).toBe(true);
    const heard: KeyEvent['data'][] = [];
    const hub = t.services.apikeys.keyEvents();
    const unsubscribe = hub.subscribe((event) => heard.push(event.data), () => undefined);
    try {
      await ingest(orderId, 'requests', 2);
      expect(heard.filter((data) => data.type === 'key.changed' && data.order_id === orderId)).toEqual([]);
      await ingest(orderId, 'requests', 1);
      await vi.waitFor(() => expect(heard).toContainEqual(expect.objectContaining({ type: 'key.changed', order_id: orderId })), { timeout: 2000 });
      expect(await check(key)).toBe(false);
    } finally {
      unsubscribe();
    }
  });
});

describe('the warm check asks the database nothing', () => {
  it('no query per check or get_info once warmed; the fallback re-reads the quantities at most every METER_REFRESH_MS', async () => {
    const { orderId, key } = await buy(await plan([TOKENS, requests(1000), USERS]));
    await ingest(orderId, 'requests', 10);
    expect(await check(key)).toBe(true);
    const started = Date.now();
    const queries = await queriesDuring(async () => {
      for (let i = 0; i < 300; i++) expect(await check(key)).toBe(true);
      for (let i = 0; i < 50; i++) expect((await info(key)).usage.meters[1].used).toBe(10);
    });
    const elapsed = Date.now() - started;
    // The usage flush (once a second) writes counts and looks for thresholds crossed; nothing looks a key up or reads a
    // meter unless the fallback's time came.
    const reads = queries.filter((sql) => /usage_meter_days|"key_hash" = /.test(sql));
    expect(reads.length, reads.join("\n")).toBeLessThanOrEqual(Math.floor(elapsed / METER_REFRESH_MS) * 2);
    expect(queries.length).toBeLessThan(30);

    // A change this process did not hear of (as if another process's message were lost): the fallback finds it.
    await t.services.db.updateTable('usage_meter_days').set({ quantity: 1000 }).where('order_id', '=', orderId).where('meter', '=', 'requests').execute();
    await new Promise((resolve) => setTimeout(resolve, METER_REFRESH_MS + 100));
    const fallback = await queriesDuring(async () => {
      await check(key);
      await vi.waitFor(async () => expect(await check(key)).toBe(false), { timeout: 2000 });
    });
    expect(fallback.filter((sql) => sql.includes('usage_meter_days'))).toHaveLength(1);
  });
});
