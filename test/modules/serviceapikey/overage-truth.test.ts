// Issue 21 item 4: usage pages tell the truth about overage. Past its included calls an overage plan is not "used
// up": get_info's `remaining` is what is left to the hard limit (null without one), the key pages say "N calls beyond
// the included 1,000, projected extra charge X" in neutral colour, and only a hard limit (or a plan without overage
// whose quota is reached) is "used up". Runs on SQLite, and on PostgreSQL + Redis when TEST_* are set.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageState, type UsageSummary } from '../../../web/src/lib/usage-summary.ts';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectError } from '../../helpers/assertions.ts';
import { asClient, makeProduct } from '../../helpers/selling-fixtures.ts';

const PACKAGE = { mode: 'package', package_size: 100, package_price: '1.00' };

describe('get_info.usage.remaining', () => {
  let t: TestApp;
  let client: Awaited<ReturnType<TestApp['createClient']>>;

  beforeAll(async () => {
    t = await createTestApp();
    client = await t.createClient();
  });
  afterAll(async () => {
    await t.close();
  });

  async function keyOf(config: Record<string, unknown>): Promise<{ orderId: number; key: string }> {
    const product = await makeProduct(t, { type: 'apikey', config: { usage_period: 'calendar_month', ...config } });
    const orderId = (await t.admin('order/create', { client_id: client.id, product_id: product, activate: true, period: '1M' })).result as number;
    return { orderId, key: (await t.admin('serviceapikey/get', { order_id: orderId })).result.api_key as string };
  }
  const info = async (key: string) => (await t.call('/api/guest/serviceapikey/get_info', { key })).result as { valid: number; usage: UsageSummary };
  async function use(key: string, times: number): Promise<void> {
    for (let i = 0; i < times; i++) expect((await t.call('/api/guest/serviceapikey/check', { key })).result).toBe(true);
  }

  it('an overage plan counts down to its hard limit, past the included calls', async () => {
    const { orderId, key } = await keyOf({ custom: { monthlyLimit: 3 }, overage: PACKAGE, hard_limit: 6 });
    await use(key, 4);
    const got = await info(key);
    expect(got.valid).toBe(1);
    // The fifth use (get_info counts one): two past the three included; one left before the hard limit.
    expect(got.usage).toMatchObject({ used: 5, limit: 3, included: 3, overage_units: 2, overage_amount: '1.00', hard_limit: 6, remaining: 1 });
    // The client's order page reads the same figures.
    const service = (await asClient(t, client.token, 'order/service', { id: orderId })).result as { usage: UsageSummary; max_keys: number };
    expect(service.usage).toMatchObject({ used: 5, remaining: 1 });
    expect(service.max_keys).toBe(1);
    await use(key, 1);
    const stopped = await info(key);
    expect(stopped).toMatchObject({ valid: 0, reason: 'LIMIT_EXCEEDED' });
    expect(stopped.usage.remaining).toBe(0);
    // Another client's order is a 404, as before.
    const stranger = await t.createClient();
    expectError(await asClient(t, stranger.token, 'order/service', { id: orderId }), 404);
  });

  it('an overage plan without a hard limit has no remaining (null), however far past the included calls', async () => {
    const { key } = await keyOf({ custom: { monthlyLimit: 2 }, overage: PACKAGE });
    await use(key, 3);
    expect((await info(key)).usage).toMatchObject({ used: 4, limit: 2, overage_units: 2, remaining: null });
  });

  it('a plan without overage keeps counting down to its quota (CONTRACT §7.1)', async () => {
    const { key } = await keyOf({ custom: { monthlyLimit: 3 } });
    await use(key, 1);
    expect((await info(key)).usage).toMatchObject({ used: 2, limit: 3, remaining: 1, overage_amount: null });
    await use(key, 2);
    expect((await info(key)).usage).toMatchObject({ used: 5, remaining: 0 });
  });
});

describe('what the key pages say (web/src/lib/usage-summary.ts)', () => {
  const base: UsageSummary = {
    period_start: '2026-11-01',
    period_end: '2026-11-30',
    used: 0,
    limit: null,
    remaining: null,
    included: 1000,
    overage_units: 0,
    overage_amount: '0.00',
    hard_limit: null,
    limited_by: null,
    meters: [],
  };

  it('past the included calls of an overage plan: calls beyond, the projected charge, not "used up"', () => {
    const state = usageState({ ...base, used: 1250, overage_units: 250, overage_amount: '3.00' }, 'USD');
    expect(state).toEqual({ kind: 'beyond', text: '250 calls beyond the included 1,000, projected extra charge 3.00 USD.' });
    expect(usageState({ ...base, used: 999 }, 'USD')).toEqual({ kind: 'within' });
  });

  it('only a hard limit reached, or a quota without overage, is used up', () => {
    expect(usageState({ ...base, used: 2000, overage_units: 1000, overage_amount: '10.00', hard_limit: 2000, remaining: 0 }, 'USD').kind).toBe('used_up');
    expect(usageState({ ...base, used: 1000, overage_amount: null, remaining: 0 }, 'USD')).toEqual({ kind: 'used_up', text: 'The 1,000 calls included this period are used up.' });
    // The quota may be only the monthlyLimit parameter (no `included` option).
    expect(usageState({ ...base, included: null, limit: 10, used: 10, overage_amount: null, remaining: 0 }).kind).toBe('used_up');
    expect(usageState({ ...base, included: null, used: 10 ** 6, overage_amount: null }).kind).toBe('within');
  });
});
