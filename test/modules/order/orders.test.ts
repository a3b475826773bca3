// Orders: the status machine over HTTP (409 for forbidden transitions), expiry arithmetic, staff create/update/delete,
// client reads limited to their own orders, product type hooks and events, and client deletion.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addPeriod } from '../../../src/lib/periods.ts';
import { isoSeconds } from '../../../src/lib/time.ts';
import type { OrderSnapshot, ProductType } from '../../../src/modules/product/product-type.ts';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { asClient, asStaff, expectError, makeProduct, staffWith } from '../../helpers/selling-fixtures.ts';

const calls: Array<{ hook: string; order: OrderSnapshot }> = [];
const record =
  (hook: string) =>
  async (_trx: unknown, order: OrderSnapshot): Promise<void> => {
    calls.push({ hook, order });
  };
const recordingType: ProductType = {
  code: 'recording',
  normalizeConfig: (config) => config,
  publicConfig: () => ({}),
  create: record('create'),
  activate: record('activate'),
  renew: record('renew'),
  suspend: record('suspend'),
  unsuspend: record('unsuspend'),
  cancel: record('cancel'),
  uncancel: record('uncancel'),
  update: record('update'),
  delete: record('delete'),
  service: async (_trx, order) => ({ token: `svc-${order.id}`, level: order.config.level ?? null }),
};

describe('orders', () => {
  let t: TestApp;
  let monthly: number;
  const events: string[] = [];
  beforeAll(async () => {
    t = await createTestApp();
    t.services.productTypes.register(recordingType);
    for (const name of ['order.activated', 'order.renewed', 'order.suspended', 'order.unsuspended', 'order.canceled', 'order.uncanceled', 'order.deleted', 'order.updated'] as const) {
      t.services.events.on(name, (payload) => {
        events.push(`${name}:${payload.orderId}`);
      });
    }
    monthly = await makeProduct(t, { title: 'Monthly' });
  });
  afterAll(async () => {
    await t.close();
  });

  async function newOrder(clientId: number, extra: Record<string, unknown> = {}): Promise<number> {
    const reply = await t.admin('order/create', { client_id: clientId, product_id: monthly, period: '1M', ...extra });
    expect(reply.body.error).toBeNull();
    return reply.result as number;
  }

  it('walks the status machine and refuses forbidden transitions with 409', async () => {
    const client = await t.createClient();
    const id = await newOrder(client.id);
    const get = async () => (await t.admin('order/get', { id })).result;
    expect(await get()).toMatchObject({ status: 'pending_setup', period: '1M', quantity: 1, price: '10.00', currency: 'USD', expires_at: null, notes: null });

    for (const action of ['renew', 'suspend', 'unsuspend', 'uncancel']) expectError(await t.admin(`order/${action}`, { id }), 409);
    expect((await t.admin('order/activate', { id })).result).toBe(true);
    const active = await get();
    expect(active.status).toBe('active');
    expect(active.expires_at).toBe(isoSeconds(addPeriod(new Date(active.activated_at), '1M')));
    expectError(await t.admin('order/activate', { id }), 409);
    expectError(await t.admin('order/unsuspend', { id }), 409);

    expect((await t.admin('order/renew', { id })).result).toBe(true);
    expect((await get()).expires_at).toBe(isoSeconds(addPeriod(new Date(active.expires_at), '1M')));

    expect((await t.admin('order/suspend', { id, reason: 'Abuse' })).result).toBe(true);
    expect(await get()).toMatchObject({ status: 'suspended', reason: 'Abuse', suspended_at: expect.any(String) });
    expectError(await t.admin('order/suspend', { id }), 409);
    expect((await t.admin('order/unsuspend', { id })).result).toBe(true);
    expect(await get()).toMatchObject({ status: 'active', reason: null, suspended_at: null });

    expect((await t.admin('order/cancel', { id, reason: 'Asked to' })).result).toBe(true);
    expect(await get()).toMatchObject({ status: 'canceled', reason: 'Asked to', canceled_at: expect.any(String) });
    for (const action of ['activate', 'renew', 'suspend', 'unsuspend', 'cancel']) expectError(await t.admin(`order/${action}`, { id }), 409);
    expect((await t.admin('order/uncancel', { id })).result).toBe(true);
    expect(await get()).toMatchObject({ status: 'active', canceled_at: null, reason: null });

    const history = (await t.admin('order/history', { id })).result as Array<{ to_status: string }>;
    expect(history.map((row) => row.to_status)).toEqual(['pending_setup', 'active', 'active', 'suspended', 'active', 'canceled', 'active']);
    expect(events.filter((event) => event.endsWith(`:${id}`))).toEqual(
      ['order.activated', 'order.renewed', 'order.suspended', 'order.unsuspended', 'order.canceled', 'order.uncanceled'].map((name) => `${name}:${id}`),
    );
  });

  it('renews from now when the order has already expired', async () => {
    const client = await t.createClient();
    const id = await newOrder(client.id, { activate: true });
    await t.admin('order/update', { id, expires_at: '2020-01-31T12:00:00Z' });
    expect((await t.admin('order/get', { id })).result.expires_at).toBe('2020-01-31T12:00:00Z');
    const before = Date.now();
    await t.admin('order/renew', { id });
    const expires = Date.parse((await t.admin('order/get', { id })).result.expires_at);
    expect(expires).toBeGreaterThanOrEqual(addPeriod(new Date(before - 1000), '1M').getTime());
    expect(expires).toBeLessThanOrEqual(addPeriod(new Date(), '1M').getTime());
  });

  it('uses calendar arithmetic for expiry (31 Jan + 1M = end of February)', () => {
    expect(isoSeconds(addPeriod(new Date('2026-01-31T10:00:00Z'), '1M'))).toBe('2026-02-28T10:00:00Z');
    expect(isoSeconds(addPeriod(new Date('2028-01-31T10:00:00Z'), '1M'))).toBe('2028-02-29T10:00:00Z');
    expect(isoSeconds(addPeriod(new Date('2026-03-01T00:00:00Z'), '1Y'))).toBe('2027-03-01T00:00:00Z');
  });

  it('creates orders for staff with validation', async () => {
    const client = await t.createClient();
    const create = (params: Record<string, unknown>) => t.admin('order/create', { client_id: client.id, product_id: monthly, ...params });
    const checks: Array<[Record<string, unknown>, string]> = [
      [{}, 'period'],
      [{ period: '2M' }, 'period'],
      [{ period: '0M' }, 'period'],
      [{ period: '1M', quantity: 0 }, 'quantity'],
      [{ period: '1M', quantity: -2 }, 'quantity'],
      [{ period: '1M', quantity: 'x' }, 'quantity'],
      [{ period: '1M', price: '-5' }, 'price'],
      [{ period: '1M', price: 'free' }, 'price'],
      [{ period: '1M', price: '1.234' }, 'price'],
      [{ period: '1M', price: '99999999999' }, 'price'],
      [{ period: '1M', invoice_option: 'maybe' }, 'invoice_option'],
    ];
    for (const [params, param] of checks) {
      const reply = await create(params);
      expectError(reply, 422);
      expect(reply.body.error!.message).toContain(`"${param}"`);
    }
    expectError(await t.admin('order/create', { client_id: 999_999, product_id: monthly, period: '1M' }), 404);
    expectError(await t.admin('order/create', { client_id: client.id, product_id: 999_999, period: '1M' }), 404);
    expectError(await t.admin('order/create', { product_id: monthly, period: '1M' }), 422);

    const custom = (await create({ period: '1M', price: '7.25', quantity: 2, invoice_option: 'issue-invoice' })).result;
    const order = (await t.admin('order/get', { id: custom })).result;
    expect(order).toMatchObject({ price: '7.25', quantity: 2, status: 'pending_setup' });
    expect(order.unpaid_invoice_id).toEqual(expect.any(Number));
    expect((await t.admin('invoice/get', { id: order.unpaid_invoice_id })).result.total).toBe('14.50');
    await t.admin('invoice/mark_as_paid', { id: order.unpaid_invoice_id });
    expect((await t.admin('order/get', { id: custom })).result.status).toBe('active');
  });

  it('updates expiry, period, price and notes', async () => {
    const client = await t.createClient();
    const multi = await makeProduct(t, { pricing: { type: 'recurrent', recurrent: { '1M': { price: 10 }, '1Y': { price: 100, enabled: false } } } });
    const id = (await t.admin('order/create', { client_id: client.id, product_id: multi, period: '1M' })).result;
    expect((await t.admin('order/update', { id, period: '1Y', price: '90', notes: 'VIP', expires_at: '2030-05-01T08:30:00.000Z' })).result).toBe(true);
    expect((await t.admin('order/get', { id })).result).toMatchObject({ period: '1Y', price: '90.00', notes: 'VIP', expires_at: '2030-05-01T08:30:00Z' });
    expectError(await t.admin('order/update', { id, period: '3M' }), 422);
    expectError(await t.admin('order/update', { id, period: '0D' }), 422);
    expectError(await t.admin('order/update', { id, price: '-1' }), 422);
    expectError(await t.admin('order/update', { id, expires_at: 'next tuesday' }), 422);
    expectError(await t.admin('order/update', { id: 999_999, notes: 'x' }), 404);
    const once = await makeProduct(t, { pricing: { type: 'once', once: { price: 3 } } });
    const oneOff = (await t.admin('order/create', { client_id: client.id, product_id: once })).result;
    expectError(await t.admin('order/update', { id: oneOff, period: '1M' }), 422);
    await t.admin('order/activate', { id: oneOff });
    expect((await t.admin('order/get', { id: oneOff })).result.expires_at).toBeNull();
    expectError(await t.admin('order/renew', { id: oneOff }), 409);
  });

  it('calls the product type hooks with the order snapshot and merges service fields', async () => {
    const product = await makeProduct(t, { type: 'recording', config: { level: 'gold' } });
    const client = await t.createClient();
    const id = (await t.admin('order/create', { client_id: client.id, product_id: product, period: '1M', activate: true })).result;
    await t.admin('order/suspend', { id });
    await t.admin('order/update', { id, notes: 'n' });
    const mine = calls.filter((call) => call.order.id === id);
    expect(mine.map((call) => call.hook)).toEqual(['create', 'activate', 'suspend', 'update']);
    expect(mine[1]!.order).toMatchObject({ status: 'active', client_id: client.id, period: '1M', config: { level: 'gold' } });
    expect(mine[1]!.order.expires_at).toEqual(expect.any(String));
    expect(mine[2]!.order.status).toBe('suspended');

    const service = (await asClient(t, client.token, 'order/service', { id })).result;
    expect(service).toMatchObject({ id, status: 'suspended', token: `svc-${id}`, level: 'gold' });
    expect((await t.admin('order/service', { id })).result.token).toBe(`svc-${id}`);
    // A custom order has nothing extra.
    const plain = await newOrder(client.id);
    expect(Object.keys((await t.admin('order/service', { id: plain })).result).toSorted()).toEqual(
      Object.keys((await t.admin('order/get', { id: plain })).result).toSorted(),
    );

    expect((await t.admin('order/delete', { id })).result).toBe(true);
    expect(calls.at(-1)).toMatchObject({ hook: 'delete', order: { id } });
    expect(events.at(-1)).toBe(`order.deleted:${id}`);
    expectError(await t.admin('order/get', { id }), 404);
    expectError(await t.admin('order/delete', { id }), 404);
  });

  it('lets clients read only their own orders', async () => {
    const alice = await t.createClient();
    const bob = await t.createClient();
    const mine = await newOrder(alice.id);
    await newOrder(alice.id, { activate: true });
    const theirs = await newOrder(bob.id);
    const list = (await asClient(t, alice.token, 'order/get_list')).result;
    expect(list.total).toBe(2);
    expect(list.list.every((order: { client_id: number }) => order.client_id === alice.id)).toBe(true);
    expect(list.list[0]).not.toHaveProperty('notes');
    expect((await asClient(t, alice.token, 'order/get_list', { status: 'active' })).result.total).toBe(1);
    expect((await asClient(t, alice.token, 'order/get', { id: mine })).result.id).toBe(mine);
    expectError(await asClient(t, alice.token, 'order/get', { id: theirs }), 404);
    expectError(await asClient(t, alice.token, 'order/service', { id: theirs }), 404);
    expectError(await asClient(t, alice.token, 'order/get', { id: 999_999 }), 404);
    expectError(await asClient(t, alice.token, 'order/activate', { id: mine }), 740, 404);
    expectError(await asClient(t, alice.token, 'order/get', {}), 422);

    const staffList = (await t.admin('order/get_list', { client_id: bob.id })).result;
    expect(staffList.list.map((order: { id: number }) => order.id)).toEqual([theirs]);
    expectError(await t.admin('order/get_list', { status: 'dormant' }), 422);
  });

  it('checks order permissions', async () => {
    const client = await t.createClient();
    const id = await newOrder(client.id);
    const viewer = await staffWith(t, ['order.view']);
    expect((await asStaff(t, viewer, 'order/get', { id })).status).toBe(200);
    expectError(await asStaff(t, viewer, 'order/activate', { id }), 403);
    expectError(await t.call('/api/admin/order/activate', { id }, { basic: ['client', client.token] }), 203, 401);
  });

  it('refuses to delete a client with orders, and deletes one with only a cart', async () => {
    const buyer = await t.createClient();
    await newOrder(buyer.id);
    expectError(await t.admin('client/delete', { id: buyer.id }), 409);
    expect((await t.admin('client/get', { id: buyer.id })).status).toBe(200);

    const browser = await t.createClient();
    await asClient(t, browser.token, 'cart/add_item', { id: monthly, period: '1M' });
    expect((await t.admin('client/delete', { id: browser.id })).result).toBe(true);
    const left = await t.services.db.selectFrom('cart_items').select('id').where('client_id', '=', browser.id).execute();
    expect(left).toEqual([]);
  });
});
