// client|admin/serviceapikey/alerts_get and alerts_set (issue 23 item 7): a client's own alert percentages per meter
// of their order, beside the plan's. Validation (whole 1–100, at most ten, no repeats, a meter of the plan), another
// client's order, a canceled or keyless order, roles and permissions, and concurrent changes ending as one of them.
// Runs on SQLite, and on PostgreSQL + Redis when TEST_* are set.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { buyKey, createPlan } from '../../helpers/apikey.ts';
import { expectError, expectInvalid } from '../../helpers/assertions.ts';
import { asClient, asStaff, staffWith } from '../../helpers/selling-fixtures.ts';

const TOKENS = { code: 'tokens', name: 'Tokens', unit: 'tokens', aggregation: 'sum', included: 1000, alerts: [50, 100] };
const USERS = { code: 'users', name: 'Users', unit: 'users', aggregation: 'unique_count', property: 'user' };

let t: TestApp;
let owner: Awaited<ReturnType<TestApp['createClient']>>;
let stranger: Awaited<ReturnType<TestApp['createClient']>>;
let orderId: number;

beforeAll(async () => {
  t = await createTestApp();
  owner = await t.createClient();
  stranger = await t.createClient();
  const plan = await createPlan(t, { included: 500, meters: [TOKENS, USERS] });
  orderId = (await buyKey(t, plan, owner.id)).orderId;
});
afterAll(async () => {
  await t.close();
});

const set = (params: Record<string, unknown>, token = owner.token) => asClient(t, token, 'serviceapikey/alerts_set', params);
const get = (params: Record<string, unknown>, token = owner.token) => asClient(t, token, 'serviceapikey/alerts_get', params);

describe('alerts_get and alerts_set', () => {
  it("lists every meter of the plan, calls first, with the plan's percentages and the client's own", async () => {
    const before = await get({ order_id: orderId });
    expect(before.body.error).toBeNull();
    expect(before.result).toEqual({
      order_id: orderId,
      meters: [
        { meter: 'calls', name: 'Calls', unit: 'calls', included: 500, plan: [80, 100], client: [] },
        { meter: 'tokens', name: 'Tokens', unit: 'tokens', included: 1000, plan: [50, 100], client: [] },
        { meter: 'users', name: 'Users', unit: 'users', included: null, plan: [80, 100], client: [] },
      ],
    });
    const after = await set({ order_id: orderId, meter: 'tokens', percentages: [90, 25, 100] });
    expect(after.body.error).toBeNull();
    expect(after.result.meters[1]).toEqual({ meter: 'tokens', name: 'Tokens', unit: 'tokens', included: 1000, plan: [50, 100], client: [25, 90, 100] });
    expect((await set({ order_id: orderId, meter: 'calls', percentages: [10] })).result.meters[0].client).toEqual([10]);
    // A second set replaces the meter's list; [] removes it; the other meters keep theirs.
    expect((await set({ order_id: orderId, meter: 'tokens', percentages: [60] })).result.meters.map((m: { client: number[] }) => m.client)).toEqual([[10], [60], []]);
    expect((await set({ order_id: orderId, meter: 'tokens', percentages: [] })).result.meters.map((m: { client: number[] }) => m.client)).toEqual([[10], [], []]);
    expect((await get({ order_id: orderId })).result.meters.map((m: { client: number[] }) => m.client)).toEqual([[10], [], []]);
  });

  it('refuses missing and wrong-typed parameters with a 422 naming them', async () => {
    expectInvalid(await set({ meter: 'tokens', percentages: [50] }), 'order_id');
    expectInvalid(await set({ order_id: 'seven', meter: 'tokens', percentages: [50] }), 'order_id');
    expectInvalid(await set({ order_id: orderId, percentages: [50] }), 'meter');
    expectInvalid(await set({ order_id: orderId, meter: 7, percentages: [50] }), 'meter');
    expectInvalid(await set({ order_id: orderId, meter: 'tokens' }), 'percentages');
    expectInvalid(await set({ order_id: orderId, meter: 'tokens', percentages: 50 }), 'percentages');
    expectInvalid(await get({}), 'order_id');
    expectInvalid(await get({ order_id: -1 }), 'order_id');
  });

  it('refuses percentages that are not whole numbers from 1 to 100, more than ten, or repeated', async () => {
    expectInvalid(await set({ order_id: orderId, meter: 'tokens', percentages: [50, 0] }), 'percentages.1');
    expectInvalid(await set({ order_id: orderId, meter: 'tokens', percentages: [101] }), 'percentages.0');
    expectInvalid(await set({ order_id: orderId, meter: 'tokens', percentages: [12.5] }), 'percentages.0');
    expectInvalid(await set({ order_id: orderId, meter: 'tokens', percentages: ['half'] }), 'percentages.0');
    expectInvalid(await set({ order_id: orderId, meter: 'tokens', percentages: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11] }), 'percentages');
    const repeated = await set({ order_id: orderId, meter: 'tokens', percentages: [50, 70, 50] });
    expectInvalid(repeated, 'percentages.2');
    expect(repeated.body.error?.message).toContain('repeats 50');
    // The service checks them too, for callers that do not come through the gateway's schema.
    await expect(t.services.apikeys.setAlerts({ order_id: orderId, meter: 'tokens', percentages: [0.5] })).rejects.toThrow(/percentages\.0/);
    await expect(t.services.apikeys.setAlerts({ order_id: orderId, meter: 'tokens', percentages: Array.from({ length: 11 }, (_, n) => n + 1) })).rejects.toThrow(/at most 10/);
    // Ten is the most.
    expect((await set({ order_id: orderId, meter: 'users', percentages: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] })).body.error).toBeNull();
    expect((await set({ order_id: orderId, meter: 'users', percentages: [] })).body.error).toBeNull();
  });

  it('refuses a meter the plan does not have, naming the ones it has', async () => {
    const reply = await set({ order_id: orderId, meter: 'bytes', percentages: [50] });
    expectInvalid(reply, 'meter');
    expect(reply.body.error?.message).toContain('calls, tokens, users');
    expect(await t.services.db.selectFrom('usage_alert_percentages').selectAll().where('meter', '=', 'bytes').execute()).toEqual([]);
  });

  it("answers 404 for another client's order or one that does not exist, and changes nothing", async () => {
    expectError(await set({ order_id: orderId, meter: 'tokens', percentages: [33] }, stranger.token), 404);
    expectError(await get({ order_id: orderId }, stranger.token), 404);
    expectError(await set({ order_id: 999_999, meter: 'tokens', percentages: [33] }), 404);
    expect(await t.services.db.selectFrom('usage_alert_percentages').selectAll().where('percentage', '=', 33).execute()).toEqual([]);
  });

  it('answers 404 for an order without a key yet, and 409 for a canceled order', async () => {
    const plan = await createPlan(t, { meters: [TOKENS] });
    const pending = await t.admin('order/create', { client_id: owner.id, product_id: plan });
    expect(pending.body.error).toBeNull();
    expectError(await get({ order_id: pending.result }), 404);
    const { orderId: doomed } = await buyKey(t, plan, owner.id);
    expect((await t.admin('order/cancel', { id: doomed })).body.error).toBeNull();
    const refused = await set({ order_id: doomed, meter: 'tokens', percentages: [50] });
    expectError(refused, 409);
    expect(refused.body.error?.message).toContain('canceled');
    // Reading stays possible.
    expect((await get({ order_id: doomed })).body.error).toBeNull();
  });

  it('staff with serviceapikey.manage read and set any order; others get 403; a client token on admin/ and no credentials are refused', async () => {
    const manager = await staffWith(t, ['serviceapikey.manage']);
    const changed = await asStaff(t, manager, 'serviceapikey/alerts_set', { order_id: orderId, meter: 'users', percentages: [75] });
    expect(changed.body.error).toBeNull();
    expect(changed.result.meters[2].client).toEqual([75]);
    expect((await asStaff(t, manager, 'serviceapikey/alerts_get', { order_id: orderId })).result.meters[2].client).toEqual([75]);
    expectError(await asStaff(t, manager, 'serviceapikey/alerts_set', { order_id: 999_999, meter: 'users', percentages: [75] }), 404);
    const reader = await staffWith(t, ['order.view']);
    expectError(await asStaff(t, reader, 'serviceapikey/alerts_set', { order_id: orderId, meter: 'users', percentages: [5] }), 403);
    expectError(await asStaff(t, reader, 'serviceapikey/alerts_get', { order_id: orderId }), 403);
    expectError(await t.call('/api/admin/serviceapikey/alerts_get', { order_id: orderId }, { basic: ['admin', owner.token] }), 205, 401);
    expectError(await t.call('/api/client/serviceapikey/alerts_get', { order_id: orderId }), 201, 401);
  });

  it('concurrent sets of one meter end as one of them, never a mix, and never fail', async () => {
    const lists = [[10, 20], [30], [40, 50, 60], [70], [80, 90]];
    const replies = await Promise.all(lists.map((percentages) => set({ order_id: orderId, meter: 'tokens', percentages })));
    expect(replies.map((reply) => reply.status)).toEqual([200, 200, 200, 200, 200]);
    const stored = (await get({ order_id: orderId })).result.meters[1].client as number[];
    expect(lists).toContainEqual(stored);
  });
});
