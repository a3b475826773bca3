// CONTRACT §6 selling, action by action: each action only for its role (401 for another role's credentials, 403 for
// staff without the permission), 422 naming every bad parameter, 404 for another client's record, pagination on every
// list, the exact result shapes, money as decimal strings in and out, and the rules the other selling test files do
// not already pin down.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addPeriod } from '../../../src/lib/periods.ts';
import { isoSeconds } from '../../../src/lib/time.ts';
import { Browser, createTestApp, type Reply, type TestApp } from '../../helpers/app.ts';
import { expectInvalid } from '../../helpers/assertions.ts';
import { asClient, asStaff, expectError, makeProduct, ORDER_FIELDS, staffWith } from '../../helpers/selling-fixtures.ts';

const INVOICE_FIELDS = ['id', 'hash', 'number', 'client_id', 'status', 'currency', 'currency_rate', 'currency_rate_at', 'currency_base', 'seller', 'buyer', 'subtotal', 'discount', 'promocode', 'tax_name', 'tax_rate', 'tax', 'total', 'tax_inclusive', 'tax_rule', 'tax_note', 'tax_evidence', 'credit_applied', 'amount_due', 'due_at', 'paid_at', 'created_at', 'items', 'credited', 'credit_notes'];
const INVOICE_ITEM_FIELDS = ['title', 'order_id', 'task', 'quantity', 'price', 'total', 'credited', 'tax_rule'];
const CART_ITEM_FIELDS = ['id', 'product_id', 'title', 'type', 'period', 'quantity', 'price', 'setup_price', 'total', 'usage_terms'];
const PAGE_FIELDS = ['list', 'page', 'per_page', 'pages', 'total'];
const AMOUNT = /^\d+\.\d{2}$/;
const DAY = 86_400_000;

const keysOf = (value: object): string[] => Object.keys(value).toSorted();
const sorted = (names: string[]): string[] => names.toSorted();


describe('selling contract', () => {
  let t: TestApp;
  let monthly: number;
  let alice: { id: number; token: string };
  let bob: { id: number; token: string };
  /** Alice's checkout: an unpaid invoice for a pending order. */
  let mine: { order_id: number; invoice_id: number; invoice_hash: string };
  /** Bob's order made by staff, with its unpaid invoice. */
  let theirs: { order_id: number; invoice_id: number };
  let bobCartItem: number;

  const admin = (path: string, params: Record<string, unknown> = {}) => t.admin(path, params);
  const guest = (path: string, params: Record<string, unknown> = {}) => t.call(`/api/guest/${path}`, params);

  beforeAll(async () => {
    t = await createTestApp();
    monthly = await makeProduct(t, { title: 'Monthly' });
    alice = await t.createClient();
    bob = await t.createClient();
    await asClient(t, alice.token, 'cart/add_item', { id: monthly, period: '1M' });
    mine = (await asClient(t, alice.token, 'cart/checkout')).result;
    const order = (await admin('order/create', { client_id: bob.id, product_id: monthly, period: '1M', invoice_option: 'issue-invoice' })).result;
    theirs = { order_id: order, invoice_id: (await admin('order/get', { id: order })).result.unpaid_invoice_id };
    await asClient(t, bob.token, 'cart/add_item', { id: monthly, period: '1M' });
    bobCartItem = (await asClient(t, bob.token, 'cart/get')).result.items[0].id;
  });
  afterAll(async () => {
    await t.close();
  });

  it('answers admin actions to staff only, and to staff holding the permission', async () => {
    const viewer = await staffWith(t, ['product.view', 'order.view', 'invoice.view']);
    const nobody = await staffWith(t, []);
    const cases: Array<[string, 'view' | 'manage', Record<string, unknown>]> = [
      ['product/prepare', 'manage', { title: 'X', type: 'custom' }],
      ['product/update', 'manage', { id: monthly }],
      ['product/update_config', 'manage', { id: monthly, config: {} }],
      ['product/get', 'view', { id: monthly }],
      ['product/get_list', 'view', {}],
      ['product/delete', 'manage', { id: monthly }],
      ['order/create', 'manage', { client_id: alice.id, product_id: monthly, period: '1M' }],
      ['order/activate', 'manage', { id: mine.order_id }],
      ['order/renew', 'manage', { id: mine.order_id }],
      ['order/suspend', 'manage', { id: mine.order_id }],
      ['order/unsuspend', 'manage', { id: mine.order_id }],
      ['order/cancel', 'manage', { id: mine.order_id }],
      ['order/uncancel', 'manage', { id: mine.order_id }],
      ['order/delete', 'manage', { id: mine.order_id }],
      ['order/update', 'manage', { id: mine.order_id }],
      ['order/get', 'view', { id: mine.order_id }],
      ['order/get_list', 'view', {}],
      ['order/service', 'view', { id: mine.order_id }],
      ['invoice/get_list', 'view', {}],
      ['invoice/get', 'view', { id: mine.invoice_id }],
      ['invoice/mark_as_paid', 'manage', { id: mine.invoice_id }],
      ['invoice/cancel', 'manage', { id: mine.invoice_id }],
      ['invoice/refund', 'manage', { id: mine.invoice_id }],
      ['cron/run', 'manage', {}],
    ];
    for (const [path, kind, params] of cases) {
      const url = `/api/admin/${path}`;
      expectError(await t.call(url, params), 201, 401);
      expectError(await t.call(url, params, { basic: ['client', alice.token] }), 203, 401);
      expectError(await t.call(url, params, { basic: ['admin', alice.token] }), 205, 401);
      expectError(await asStaff(t, nobody, path, params), 403);
      const asViewer = await asStaff(t, viewer, path, params);
      if (kind === 'manage') expectError(asViewer, 403);
      else expect(asViewer.body, path).toMatchObject({ error: null });
    }
    // Nothing above changed anything: every write was refused.
    expect((await admin('order/get', { id: mine.order_id })).result.status).toBe('pending_setup');
    expect((await admin('invoice/get', { id: mine.invoice_id })).result.status).toBe('unpaid');

    // Each permission opens exactly its actions.
    const seller = await staffWith(t, ['product.manage', 'order.manage', 'invoice.manage']);
    const made = await asStaff(t, seller, 'product/prepare', { title: 'By seller', type: 'custom' });
    expect(made.body.error).toBeNull();
    expectError(await asStaff(t, seller, 'product/get', { id: made.result }), 403);
    expect((await asStaff(t, seller, 'product/delete', { id: made.result })).result).toBe(true);
    expectError(await admin('product/get', { id: made.result }), 404);
    const order = (await asStaff(t, seller, 'order/create', { client_id: alice.id, product_id: monthly, period: '1M' })).result;
    expect((await asStaff(t, seller, 'order/cancel', { id: order })).result).toBe(true);
    expect((await admin('order/get', { id: order })).result).toMatchObject({ status: 'canceled', canceled_at: expect.any(String) });
    expectError(await asStaff(t, seller, 'order/get', { id: order }), 403);
    expectError(await asStaff(t, seller, 'cron/run'), 403);
    const operator = await staffWith(t, ['system.manage']);
    expect((await asStaff(t, operator, 'cron/run')).body.error).toBeNull();
  });

  it('answers client actions to clients only, guest actions to anyone, and nothing for other roles', async () => {
    const clientPaths: Array<[string, Record<string, unknown>]> = [
      ['cart/add_item', { id: monthly, period: '1M' }],
      ['cart/get', {}],
      ['cart/remove_item', { id: 1 }],
      ['cart/reset', {}],
      ['cart/checkout', {}],
      ['order/get_list', {}],
      ['order/get', { id: mine.order_id }],
      ['order/service', { id: mine.order_id }],
      ['invoice/get_list', {}],
      ['invoice/get', { id: mine.invoice_id }],
      ['invoice/renewal_invoice', { order_id: mine.order_id }],
    ];
    for (const [path, params] of clientPaths) {
      const url = `/api/client/${path}`;
      expectError(await t.call(url, params), 201, 401);
      expectError(await t.call(url, params, { basic: ['admin', t.adminToken] }), 203, 401);
      expectError(await t.call(url, params, { basic: ['client', t.adminToken] }), 204, 401);
    }
    // Guest actions need no credentials and ignore any that are sent.
    for (const [path, params] of [
      ['product/get_list', {}],
      ['product/get', { id: monthly }],
      ['cart/get', {}],
      ['invoice/get', { hash: mine.invoice_hash }],
      ['invoice/gateways', {}],
    ] as const) {
      expect((await guest(path, params)).body.error, path).toBeNull();
      expect((await t.call(`/api/guest/${path}`, params, { basic: ['client', 'wrong-token'] })).body.error, path).toBeNull();
    }
    for (const path of [
      '/api/guest/cart/checkout',
      '/api/guest/order/get_list',
      '/api/guest/invoice/get_list',
      '/api/guest/invoice/mark_as_paid',
      '/api/guest/product/prepare',
      '/api/client/product/get_list',
      '/api/client/order/create',
      '/api/client/invoice/refund',
    ]) {
      expectError(await t.call(path, {}, { basic: ['client', alice.token] }), 740, 404);
    }
    expectError(await admin('cart/get'), 740, 404);
    expectError(await admin('order/checkout'), 740, 404);
  });

  it('names every missing, mistyped or out-of-range parameter in a 422', async () => {
    const id = monthly;
    const adminCases: Array<[string, Record<string, unknown>, string]> = [
      ['product/prepare', { type: 'custom' }, 'title'],
      ['product/prepare', { title: 'X' }, 'type'],
      ['product/prepare', { title: 42, type: 'custom' }, 'title'],
      ['product/prepare', { title: '', type: 'custom' }, 'title'],
      ['product/prepare', { title: '   ', type: 'custom' }, 'title'],
      ['product/prepare', { title: 'X', type: 'hosting' }, 'type'],
      ['product/update', {}, 'id'],
      ['product/update', { id: 'one' }, 'id'],
      ['product/update', { id: 2_147_483_648 }, 'id'],
      ['product/update', { id, title: '' }, 'title'],
      ['product/update', { id, description: 5 }, 'description'],
      ['product/update', { id, status: 'active' }, 'status'],
      ['product/update', { id, hidden: 'perhaps' }, 'hidden'],
      ['product/update', { id, setup: 'now' }, 'setup'],
      ['product/update', { id, config: [1] }, 'config'],
      ['product/update', { id, pricing: { type: 'once', once: { price: 'x' } } }, 'pricing.once.price'],
      ['product/update_config', { id }, 'config'],
      ['product/update_config', { config: {} }, 'id'],
      ['product/update_config', { id, config: 'x' }, 'config'],
      ['product/get', {}, 'id'],
      ['product/get', { id: 1.5 }, 'id'],
      ['product/get_list', { status: 'on' }, 'status'],
      ['product/get_list', { search: 'x'.repeat(256) }, 'search'],
      ['product/delete', {}, 'id'],
      ['order/create', { product_id: id, period: '1M' }, 'client_id'],
      ['order/create', { client_id: alice.id, period: '1M' }, 'product_id'],
      ['order/create', { client_id: 'me', product_id: id, period: '1M' }, 'client_id'],
      ['order/create', { client_id: alice.id, product_id: id, period: '1M', quantity: 1001 }, 'quantity'],
      ['order/create', { client_id: alice.id, product_id: id, period: '1M', activate: 'perhaps' }, 'activate'],
      ['order/create', { client_id: alice.id, product_id: id, period: '1M', price: true }, 'price'],
      ['order/create', { client_id: alice.id, product_id: id, period: '1M', invoice_option: 'email' }, 'invoice_option'],
      ['order/activate', {}, 'id'],
      ['order/renew', { id: 'x' }, 'id'],
      ['order/suspend', { id: mine.order_id, reason: 5 }, 'reason'],
      ['order/suspend', { id: mine.order_id, reason: 'r'.repeat(256) }, 'reason'],
      ['order/unsuspend', {}, 'id'],
      ['order/cancel', { id: mine.order_id, reason: ['x'] }, 'reason'],
      ['order/uncancel', {}, 'id'],
      ['order/delete', {}, 'id'],
      ['order/update', {}, 'id'],
      ['order/update', { id: mine.order_id, expires_at: 'soon' }, 'expires_at'],
      ['order/update', { id: mine.order_id, expires_at: '2030-02-30' }, 'expires_at'],
      ['order/update', { id: mine.order_id, expires_at: '2030-05-01T25:00:00Z' }, 'expires_at'],
      ['order/update', { id: mine.order_id, period: 'monthly' }, 'period'],
      ['order/update', { id: mine.order_id, price: 'ten' }, 'price'],
      ['order/update', { id: mine.order_id, price: {} }, 'price'],
      ['order/update', { id: mine.order_id, notes: 7 }, 'notes'],
      ['order/get', {}, 'id'],
      ['order/get_list', { status: 'paid' }, 'status'],
      ['order/get_list', { client_id: 0 }, 'client_id'],
      ['order/get_list', { product_id: 'x' }, 'product_id'],
      ['order/get_list', { type: 'x'.repeat(33) }, 'type'],
      ['order/service', {}, 'id'],
      ['order/history', {}, 'id'],
      ['invoice/get_list', { status: 'open' }, 'status'],
      ['invoice/get_list', { client_id: -1 }, 'client_id'],
      ['invoice/get', {}, 'id'],
      ['invoice/mark_as_paid', {}, 'id'],
      ['invoice/mark_as_paid', { id: mine.invoice_id, execute: 'perhaps' }, 'execute'],
      ['invoice/mark_as_paid', { id: mine.invoice_id, transaction_id: 't'.repeat(256) }, 'transaction_id'],
      ['invoice/mark_as_paid', { id: mine.invoice_id, transactionId: 5 }, 'transactionId'],
      ['invoice/mark_as_paid', { id: mine.invoice_id, gateway_id: 'bank' }, 'gateway_id'],
      ['invoice/mark_as_paid', { id: mine.invoice_id, gateway_id: 77 }, 'gateway_id'],
      ['invoice/cancel', {}, 'id'],
      ['invoice/refund', { id: 'x' }, 'id'],
    ];
    for (const [path, params, param] of adminCases) expectInvalid(await admin(path, params), param);

    const clientCases: Array<[string, Record<string, unknown>, string]> = [
      ['cart/add_item', { period: '1M' }, 'id'],
      ['cart/add_item', { id, period: 12 }, 'period'],
      ['cart/add_item', { id, period: '1M', multiple: 'perhaps' }, 'multiple'],
      ['cart/remove_item', {}, 'id'],
      ['cart/remove_item', { id: 'x' }, 'id'],
      ['cart/checkout', { gateway_id: 'bank' }, 'gateway_id'],
      ['order/get', {}, 'id'],
      ['order/get_list', { status: 'paid' }, 'status'],
      ['order/service', { id: 'x' }, 'id'],
      ['invoice/get', {}, 'id'],
      ['invoice/get_list', { status: 'open' }, 'status'],
      ['invoice/renewal_invoice', {}, 'order_id'],
      ['invoice/renewal_invoice', { order_id: 'x' }, 'order_id'],
    ];
    for (const [path, params, param] of clientCases) expectInvalid(await asClient(t, alice.token, path, params), param);

    const guestCases: Array<[string, Record<string, unknown>, string]> = [
      ['product/get', {}, 'id'],
      ['product/get', { id: 'x' }, 'id'],
      ['product/get', { slug: '' }, 'slug'],
      ['product/get_list', { page: 'two' }, 'page'],
      ['cart/add_item', { id: 'x' }, 'id'],
      ['cart/add_item', { id, period: '1M', quantity: 0 }, 'quantity'],
      ['cart/remove_item', {}, 'id'],
      ['invoice/get', {}, 'hash'],
      ['invoice/get', { hash: 5 }, 'hash'],
      ['invoice/get', { hash: '' }, 'hash'],
    ];
    for (const [path, params, param] of guestCases) expectInvalid(await guest(path, params), param);

    // None of the refused calls changed the records they named.
    expect((await admin('order/get', { id: mine.order_id })).result).toMatchObject({ status: 'pending_setup', price: '10.00', expires_at: null });
    expect((await admin('invoice/get', { id: mine.invoice_id })).result.status).toBe('unpaid');
  });

  it("answers 404 for another client's records, and lists only the caller's own", async () => {
    expectError(await asClient(t, alice.token, 'order/get', { id: theirs.order_id }), 404);
    expectError(await asClient(t, alice.token, 'order/service', { id: theirs.order_id }), 404);
    expectError(await asClient(t, alice.token, 'invoice/get', { id: theirs.invoice_id }), 404);
    expectError(await asClient(t, alice.token, 'invoice/renewal_invoice', { order_id: theirs.order_id }), 404);
    expectError(await asClient(t, alice.token, 'cart/remove_item', { id: bobCartItem }), 404);
    // The same answer as for records that do not exist at all.
    const unknown = await asClient(t, alice.token, 'order/get', { id: 2_000_000_000 });
    const foreign = await asClient(t, alice.token, 'order/get', { id: theirs.order_id });
    expect(foreign.body).toEqual(unknown.body);

    // A client_id sent by a client is an unknown parameter: ignored, never a way into another's records.
    const orders = (await asClient(t, alice.token, 'order/get_list', { client_id: bob.id })).result;
    expect(orders.list.map((order: { id: number }) => order.id)).toContain(mine.order_id);
    expect(orders.list.every((order: { client_id: number }) => order.client_id === alice.id)).toBe(true);
    const invoices = (await asClient(t, alice.token, 'invoice/get_list', { client_id: bob.id })).result;
    expect(invoices.list.map((invoice: { id: number }) => invoice.id)).toContain(mine.invoice_id);
    expect(invoices.list.every((invoice: { client_id: number }) => invoice.client_id === alice.id)).toBe(true);

    // Bob's cart item survived Alice's attempt.
    expect((await asClient(t, bob.token, 'cart/get')).result.items.map((item: { id: number }) => item.id)).toEqual([bobCartItem]);
  });

  it('paginates every list: per_page 1-500, page ≥ 1, a page past the end is empty', async () => {
    const lists: Array<[string, (params: Record<string, unknown>) => Promise<Reply>]> = [
      ['admin/product/get_list', (params) => admin('product/get_list', params)],
      ['guest/product/get_list', (params) => guest('product/get_list', params)],
      ['admin/order/get_list', (params) => admin('order/get_list', params)],
      ['client/order/get_list', (params) => asClient(t, alice.token, 'order/get_list', params)],
      ['admin/invoice/get_list', (params) => admin('invoice/get_list', params)],
      ['client/invoice/get_list', (params) => asClient(t, alice.token, 'invoice/get_list', params)],
    ];
    for (const [name, list] of lists) {
      const first = (await list({})).result;
      expect(keysOf(first), name).toEqual(sorted(PAGE_FIELDS));
      expect(first, name).toMatchObject({ page: 1, per_page: 100 });
      expect(first.total, name).toBeGreaterThanOrEqual(1);
      expect(first.pages, name).toBe(Math.ceil(first.total / 100));
      expect(first.list, name).toHaveLength(Math.min(first.total, 100));

      const one = (await list({ per_page: 1, page: 1 })).result;
      expect(one, name).toMatchObject({ page: 1, per_page: 1, pages: first.total, total: first.total });
      expect(one.list, name).toHaveLength(1);
      const past = (await list({ page: first.total + 1, per_page: 1 })).result;
      expect(past, name).toEqual({ list: [], page: first.total + 1, per_page: 1, pages: first.total, total: first.total });
      expect((await list({ per_page: 500 })).result.per_page, name).toBe(500);
      // Form-style strings are numbers too.
      expect((await list({ per_page: '1', page: '1' })).result.list, name).toHaveLength(1);

      expectInvalid(await list({ per_page: 501 }), 'per_page');
      expectInvalid(await list({ per_page: 0 }), 'per_page');
      expectInvalid(await list({ per_page: 'all' }), 'per_page');
      expectInvalid(await list({ page: 0 }), 'page');
      expectInvalid(await list({ page: -1 }), 'page');
      expectInvalid(await list({ page: 1.5 }), 'page');
    }
  });

  it('returns exactly the documented fields, with amounts as decimal strings', async () => {
    // Cart.
    const buyer = await t.createClient();
    const setupFee = await makeProduct(t, { pricing: { type: 'recurrent', recurrent: { '1M': { price: '10', setup: '2.5' } } } });
    await asClient(t, buyer.token, 'cart/add_item', { id: setupFee, period: '1M', quantity: 3 });
    const cart = (await asClient(t, buyer.token, 'cart/get')).result;
    expect(keysOf(cart)).toEqual(['currency', 'discount', 'items', 'promocode', 'subtotal', 'total']);
    expect(keysOf(cart.items[0])).toEqual(sorted(CART_ITEM_FIELDS));
    expect(cart.items[0]).toMatchObject({ product_id: setupFee, type: 'custom', period: '1M', quantity: 3, price: '10.00', setup_price: '2.50', total: '32.50' });
    expect(cart).toMatchObject({ subtotal: '32.50', total: '32.50', currency: 'USD' });

    // Checkout.
    const checkout = (await asClient(t, buyer.token, 'cart/checkout', { gateway_id: 1 })).result;
    expect(keysOf(checkout)).toEqual(['invoice_hash', 'invoice_id', 'order_id', 'orders', 'setup_url']);
    expect(checkout.orders).toEqual([checkout.order_id]);
    expect(checkout.invoice_id).toEqual(expect.any(Number));
    expect(checkout.invoice_hash).toMatch(/^[A-Za-z0-9]{32}$/);

    // Orders: clients see the documented record; staff also see their notes (admin/order/update writes them).
    const order = (await asClient(t, buyer.token, 'order/get', { id: checkout.order_id })).result;
    expect(keysOf(order)).toEqual(sorted(ORDER_FIELDS));
    expect(order).toMatchObject({
      id: checkout.order_id,
      client_id: buyer.id,
      product_id: setupFee,
      title: expect.any(String),
      type: 'custom',
      period: '1M',
      quantity: 3,
      price: '10.00',
      currency: 'USD',
      status: 'pending_setup',
      reason: null,
      expires_at: null,
      activated_at: null,
      suspended_at: null,
      canceled_at: null,
      unpaid_invoice_id: checkout.invoice_id,
    });
    expect(order.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    expect(order.updated_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    expect(keysOf((await asClient(t, buyer.token, 'order/get_list')).result.list[0])).toEqual(sorted(ORDER_FIELDS));
    expect(keysOf((await admin('order/get', { id: order.id })).result)).toEqual(sorted([...ORDER_FIELDS, 'notes', 'card_on_file']));
    // Staff lists also name the client of each row (issue 13, for the panel).
    expect(keysOf((await admin('order/get_list', { client_id: buyer.id })).result.list[0])).toEqual(sorted([...ORDER_FIELDS, 'notes', 'card_on_file', 'client_email', 'client_name']));

    // Invoices, the same for staff, the client and a guest holding the hash.
    const staffRow = (await admin('invoice/get_list', { client_id: buyer.id })).result.list[0];
    expect(staffRow).toMatchObject({ client_email: buyer.email, client_name: expect.any(String) });
    const { client_email: _email, client_name: _name, ...staffInvoice } = staffRow;
    const views = [
      (await admin('invoice/get', { id: checkout.invoice_id })).result,
      staffInvoice,
      (await asClient(t, buyer.token, 'invoice/get', { id: checkout.invoice_id })).result,
      (await asClient(t, buyer.token, 'invoice/get_list')).result.list[0],
      (await guest('invoice/get', { hash: checkout.invoice_hash })).result,
    ];
    for (const invoice of views) {
      expect(keysOf(invoice)).toEqual(sorted(INVOICE_FIELDS));
      expect(keysOf(invoice.items[0])).toEqual(sorted(INVOICE_ITEM_FIELDS));
      expect(invoice).toMatchObject({
        id: checkout.invoice_id,
        hash: checkout.invoice_hash,
        client_id: buyer.id,
        status: 'unpaid',
        currency: 'USD',
        subtotal: '32.50',
        total: '32.50',
        due_at: expect.any(String),
        paid_at: null,
        created_at: expect.any(String),
      });
      expect(invoice.items).toEqual([{ title: expect.any(String), order_id: checkout.order_id, task: 'activate', quantity: 3, price: '10.00', total: '32.50', credited: '0.00', tax_rule: 'manual' }]);
    }
    for (const invoice of views) expect(invoice).toEqual(views[0]);

    // Gateways.
    const gateways = (await guest('invoice/gateways')).result as Array<Record<string, unknown>>;
    expect(gateways.length).toBeGreaterThanOrEqual(1);
    for (const gateway of gateways) expect(keysOf(gateway)).toEqual(['code', 'id', 'instructions', 'title']);
    expect(gateways[0]).toMatchObject({ id: 1, code: 'custom', title: expect.any(String) });

    // Products: every amount a string, in the catalogue too.
    const product = (await admin('product/get', { id: setupFee })).result;
    expect(keysOf(product)).toEqual(['config', 'created_at', 'description', 'hidden', 'id', 'pricing', 'setup', 'slug', 'status', 'title', 'type', 'updated_at']);
    expect(product.pricing).toEqual({ type: 'recurrent', once: { price: '0.00', setup: '0.00' }, recurrent: { '1M': { price: '10.00', setup: '2.50', enabled: true } }, prices: {} });
    const listed = (await guest('product/get', { id: setupFee })).result;
    expect(keysOf(listed)).toEqual(['config', 'currency', 'description', 'id', 'pricing', 'slug', 'title', 'type']);
    expect(listed.pricing.recurrent['1M']).toEqual({ price: '10.00', setup: '2.50', enabled: true });
    for (const amount of [listed.pricing.once.price, listed.pricing.once.setup, order.price, cart.total]) expect(amount).toMatch(AMOUNT);
  });

  it('accepts amounts as decimal strings or numbers, never through floating point', async () => {
    const client = await t.createClient();
    const create = async (price: unknown) => {
      const reply = await admin('order/create', { client_id: client.id, product_id: monthly, period: '1M', price });
      expect(reply.body.error).toBeNull();
      return (await admin('order/get', { id: reply.result })).result.price as string;
    };
    expect(await create(7)).toBe('7.00');
    expect(await create('7.5')).toBe('7.50');
    expect(await create(0.1)).toBe('0.10');
    expect(await create('19.99')).toBe('19.99');
    expect(await create(0)).toBe('0.00');

    const id = (await admin('order/create', { client_id: client.id, product_id: monthly, period: '1M' })).result;
    for (const [price, shown] of [
      [12.34, '12.34'],
      ['0.30', '0.30'],
      [1_000_000_000, '1000000000.00'],
    ] as const) {
      expect((await admin('order/update', { id, price })).result).toBe(true);
      expect((await admin('order/get', { id })).result.price).toBe(shown);
    }
    // Form data: every field is a string.
    const form = await t.call(
      '/api/admin/order/update',
      {},
      { basic: ['admin', t.adminToken], raw: { body: `id=${id}&price=4.20`, contentType: 'application/x-www-form-urlencoded' } },
    );
    expect(form.body.error).toBeNull();
    expect((await admin('order/get', { id })).result.price).toBe('4.20');

    // 0.1 + 0.2 is 0.30, not 0.30000000000000004: an invoice of three 0.10 lines plus 0.20 sums exactly.
    const cheap = await makeProduct(t, { pricing: { type: 'once', once: { price: 0.1, setup: '0.2' } } });
    await asClient(t, client.token, 'cart/add_item', { id: cheap, quantity: 3 });
    const checkout = (await asClient(t, client.token, 'cart/checkout')).result;
    expect((await admin('invoice/get', { id: checkout.invoice_id })).result).toMatchObject({ subtotal: '0.50', total: '0.50' });
  });

  it('shows guests only enabled, not hidden products, with config.custom only', async () => {
    const shown = await makeProduct(t, { title: 'Shown', config: { custom: { tier: 'pro' }, upstream: 'https://internal' } });
    const hidden = await makeProduct(t, { title: 'Hidden' });
    await admin('product/update', { id: hidden, hidden: true });
    const disabled = await makeProduct(t, { title: 'Disabled', status: 'disabled' });
    const slugOf = async (id: number) => (await admin('product/get', { id })).result.slug as string;

    expect((await guest('product/get', { id: shown })).result).toMatchObject({ id: shown, config: { custom: { tier: 'pro' } } });
    expect((await guest('product/get', { slug: await slugOf(shown) })).result.config).toEqual({ custom: { tier: 'pro' } });
    for (const id of [hidden, disabled]) {
      expectError(await guest('product/get', { id }), 404);
      expectError(await guest('product/get', { slug: await slugOf(id) }), 404);
    }
    const all = (await guest('product/get_list', { per_page: 500 })).result.list as Array<{ id: number; config: object }>;
    expect(all.map((product) => product.id)).toContain(shown);
    expect(all.map((product) => product.id)).not.toContain(hidden);
    expect(all.map((product) => product.id)).not.toContain(disabled);
    for (const product of all) expect(keysOf(product.config)).toEqual(['custom']);

    // A hidden product stays orderable by id (a direct order link); a disabled one does not.
    expect((await guest('cart/add_item', { id: hidden, period: '1M' })).result).toBe(true);
    expectError(await guest('cart/add_item', { id: disabled, period: '1M' }), 404);
  });

  it('searches the admin product list literally and filters by type and status', async () => {
    const percent = await makeProduct(t, { title: '100% uptime' });
    await makeProduct(t, { title: '1000 uptime' });
    const found = (await admin('product/get_list', { search: '100%' })).result;
    expect(found.list.map((product: { id: number }) => product.id)).toEqual([percent]);
    expect((await admin('product/get_list', { search: '_' })).result.total).toBe(0);
    expect((await admin('product/get_list', { search: 'UPTIME' })).result.total).toBe(2);
    const disabled = (await admin('product/get_list', { status: 'disabled', per_page: 500 })).result.list as Array<{ status: string }>;
    expect(disabled.every((product) => product.status === 'disabled')).toBe(true);
    const apikey = await admin('product/prepare', { title: 'Keys', type: 'apikey' });
    expect((await admin('product/get_list', { type: 'apikey' })).result.list.map((product: { id: number }) => product.id)).toEqual([apikey.result]);
  });

  it('filters the admin order list by status, client, product and type', async () => {
    const client = await t.createClient();
    const other = await makeProduct(t, { title: 'Other' });
    const a = (await admin('order/create', { client_id: client.id, product_id: monthly, period: '1M', activate: true })).result;
    const b = (await admin('order/create', { client_id: client.id, product_id: other, period: '1M' })).result;
    const ids = async (params: Record<string, unknown>) =>
      ((await admin('order/get_list', { client_id: client.id, ...params })).result.list as Array<{ id: number }>).map((order) => order.id);
    expect(await ids({})).toEqual([b, a]);
    expect(await ids({ status: 'active' })).toEqual([a]);
    expect(await ids({ status: 'pending_setup' })).toEqual([b]);
    expect(await ids({ product_id: other })).toEqual([b]);
    expect(await ids({ type: 'custom' })).toEqual([b, a]);
    expect(await ids({ type: 'apikey' })).toEqual([]);
    expect(await ids({ status: 'canceled' })).toEqual([]);
    const byProduct = (await admin('order/get_list', { product_id: other })).result.list as Array<{ product_id: number }>;
    expect(byProduct.every((order) => order.product_id === other)).toBe(true);
  });

  it('clears the suspension of an order canceled while suspended when it is uncanceled', async () => {
    const client = await t.createClient();
    const id = (await admin('order/create', { client_id: client.id, product_id: monthly, period: '1M', activate: true })).result;
    await admin('order/suspend', { id, reason: 'Abuse' });
    await admin('order/cancel', { id, reason: 'Closed' });
    expect((await admin('order/get', { id })).result).toMatchObject({ status: 'canceled', reason: 'Closed', suspended_at: expect.any(String) });
    expect((await admin('order/uncancel', { id })).result).toBe(true);
    expect((await admin('order/get', { id })).result).toMatchObject({ status: 'active', reason: null, suspended_at: null, canceled_at: null });
    // Delete works from any status and leaves a 404.
    expect((await admin('order/delete', { id })).result).toBe(true);
    expectError(await admin('order/get', { id }), 404);
    for (const action of ['activate', 'renew', 'suspend', 'unsuspend', 'cancel', 'uncancel', 'update', 'delete', 'service', 'history']) {
      expectError(await admin(`order/${action}`, { id }), 404);
    }
  });

  it('reads expires_at as UTC whatever the form, and refuses days that do not exist', async () => {
    const client = await t.createClient();
    const id = (await admin('order/create', { client_id: client.id, product_id: monthly, period: '1M', activate: true })).result;
    const cases: Array<[string, string]> = [
      ['2030-05-01', '2030-05-01T00:00:00Z'],
      ['2030-05-01T08:30', '2030-05-01T08:30:00Z'],
      ['2030-05-01T08:30:15.250Z', '2030-05-01T08:30:15Z'],
      ['2030-05-01T08:30:00+02:00', '2030-05-01T06:30:00Z'],
      ['2028-02-29T12:00:00Z', '2028-02-29T12:00:00Z'],
    ];
    for (const [sent, stored] of cases) {
      expect((await admin('order/update', { id, expires_at: sent })).result).toBe(true);
      expect((await admin('order/get', { id })).result.expires_at).toBe(stored);
    }
    for (const bad of ['2030-02-30', '2029-02-29T00:00:00Z', '2030-13-01', '01/05/2030', '2030-05-01T08:30:00 UTC']) {
      expectInvalid(await admin('order/update', { id, expires_at: bad }), 'expires_at');
    }
    expect((await admin('order/get', { id })).result.expires_at).toBe('2028-02-29T12:00:00Z');
  });

  it('records the payment reference under either name, and execute=false pays without activating', async () => {
    const client = await t.createClient();
    const pay = async (params: Record<string, unknown>) => {
      await asClient(t, client.token, 'cart/add_item', { id: monthly, period: '1M' });
      const { invoice_id, order_id } = (await asClient(t, client.token, 'cart/checkout')).result;
      expect((await admin('invoice/mark_as_paid', { id: invoice_id, ...params })).result).toBe(true);
      const rows = await t.services.db.selectFrom('transactions').selectAll().where('invoice_id', '=', invoice_id).execute();
      return { rows, invoice_id, order_id };
    };
    expect((await pay({ transactionId: 'FOSS-1' })).rows).toMatchObject([{ transaction_id: 'FOSS-1', gateway_id: null, type: 'payment', amount: 1000 }]);
    expect((await pay({ transaction_id: 'TG-1', transactionId: 'FOSS-2', gateway_id: 1 })).rows).toMatchObject([{ transaction_id: 'TG-1', gateway_id: 1 }]);

    const quiet = await pay({ execute: false, transaction_id: 'Q-1' });
    expect(quiet.rows).toMatchObject([{ transaction_id: 'Q-1', type: 'payment' }]);
    expect((await admin('invoice/get', { id: quiet.invoice_id })).result).toMatchObject({ status: 'paid', paid_at: expect.any(String) });
    expect((await admin('order/get', { id: quiet.order_id })).result).toMatchObject({ status: 'pending_setup', unpaid_invoice_id: null });
    // Staff activate it by hand afterwards.
    expect((await admin('order/activate', { id: quiet.order_id })).result).toBe(true);
  });

  it('issues renewal invoices only for own active or suspended paid recurrent orders', async () => {
    const client = await t.createClient();
    const renewal = async (orderId: number) => asClient(t, client.token, 'invoice/renewal_invoice', { order_id: orderId });
    const active = (await admin('order/create', { client_id: client.id, product_id: monthly, period: '1M', activate: true })).result;
    const first = (await renewal(active)).result;
    expect(first).toEqual(expect.any(Number));
    expect((await renewal(active)).result).toBe(first);
    expect((await asClient(t, client.token, 'order/get', { id: active })).result.unpaid_invoice_id).toBe(first);
    // Paid, the next request issues a new one.
    await admin('invoice/mark_as_paid', { id: first });
    const second = (await renewal(active)).result;
    expect(second).not.toBe(first);

    await admin('order/suspend', { id: active });
    expect((await renewal(active)).result).toBe(second);
    await admin('order/cancel', { id: active });
    expectError(await renewal(active), 409);
    // Canceling the order canceled the renewal it no longer owes.
    expect((await admin('invoice/get', { id: second })).result.status).toBe('canceled');

    const pending = (await admin('order/create', { client_id: client.id, product_id: monthly, period: '1M' })).result;
    expectError(await renewal(pending), 409);
    const free = await makeProduct(t, { pricing: { type: 'recurrent', recurrent: { '1M': { price: '0' } } } });
    const freeOrder = (await admin('order/create', { client_id: client.id, product_id: free, period: '1M', activate: true })).result;
    expectError(await renewal(freeOrder), 409);
    const once = await makeProduct(t, { pricing: { type: 'once', once: { price: '5' } } });
    const oneOff = (await admin('order/create', { client_id: client.id, product_id: once, activate: true })).result;
    expectError(await renewal(oneOff), 409);
    expectError(await renewal(theirs.order_id), 404);
  });

  it('refuses invoice changes the status does not allow with 409', async () => {
    const client = await t.createClient();
    await asClient(t, client.token, 'cart/add_item', { id: monthly, period: '1M' });
    const { invoice_id, order_id } = (await asClient(t, client.token, 'cart/checkout')).result;
    expectError(await admin('invoice/refund', { id: invoice_id }), 409);
    expect((await admin('invoice/mark_as_paid', { id: invoice_id })).result).toBe(true);
    expectError(await admin('invoice/mark_as_paid', { id: invoice_id, transaction_id: 'again' }), 409);
    expectError(await admin('invoice/cancel', { id: invoice_id }), 409);
    expect((await admin('invoice/refund', { id: invoice_id })).result).toBe(true);
    for (const action of ['mark_as_paid', 'cancel', 'refund']) expectError(await admin(`invoice/${action}`, { id: invoice_id }), 409);
    expect((await admin('order/get', { id: order_id })).result.status).toBe('active');
    for (const action of ['get', 'mark_as_paid', 'cancel', 'refund']) expectError(await admin(`invoice/${action}`, { id: 2_000_000_000 }), 404);
  });

  it('checks out a zero total without an invoice, activating at once whatever the setup mode but manual', async () => {
    const client = await t.createClient();
    const zero = await makeProduct(t, { pricing: { type: 'recurrent', recurrent: { '1M': { price: '0', setup: '0' } } }, setup: 'after_payment' });
    const manual = await makeProduct(t, { pricing: { type: 'free' }, setup: 'manual' });
    await asClient(t, client.token, 'cart/add_item', { id: zero, period: '1M' });
    await asClient(t, client.token, 'cart/add_item', { id: manual, multiple: true });
    const checkout = (await asClient(t, client.token, 'cart/checkout')).result;
    expect(checkout).toMatchObject({ invoice_id: null, invoice_hash: null });
    const [auto, waiting] = checkout.orders as number[];
    const autoOrder = (await asClient(t, client.token, 'order/get', { id: auto })).result;
    expect(autoOrder).toMatchObject({ status: 'active', unpaid_invoice_id: null });
    expect(autoOrder.expires_at).toBe(isoSeconds(addPeriod(new Date(autoOrder.activated_at), '1M')));
    expect((await asClient(t, client.token, 'order/get', { id: waiting })).result.status).toBe('pending_setup');
    expect((await asClient(t, client.token, 'invoice/get_list')).result.total).toBe(0);
    expect((await asClient(t, client.token, 'cart/get')).result.items).toEqual([]);
  });

  it('runs the scheduled jobs through admin/cron/run idempotently', async () => {
    const client = await t.createClient();
    const id = (await admin('order/create', { client_id: client.id, product_id: monthly, period: '1M', activate: true })).result;
    const soon = isoSeconds(new Date(Date.now() + 2 * DAY));
    await admin('order/update', { id, expires_at: soon });

    const first = (await admin('cron/run')).result;
    expect(keysOf(first)).toEqual(['audit_entries_pruned', 'canceled', 'carts_purged', 'credits_expired', 'failed', 'invoice_reminders', 'plan_changes_voided', 'renewal_invoices', 'renewed_free', 'suspended', 'trial_reminders', 'trials_ended', 'usage_invoices']);
    expect(first.renewal_invoices).toBeGreaterThanOrEqual(1);
    const renewal = (await admin('order/get', { id })).result.unpaid_invoice_id;
    expect(renewal).toEqual(expect.any(Number));
    expect((await admin('cron/run')).result).toMatchObject({ renewal_invoices: 0, suspended: 0, canceled: 0, renewed_free: 0, failed: 0 });
    expect((await admin('invoice/get_list', { client_id: client.id })).result.total).toBe(1);

    await admin('order/update', { id, expires_at: isoSeconds(new Date(Date.now() - 1000)) });
    expect((await admin('cron/run')).result.suspended).toBeGreaterThanOrEqual(1);
    expect((await admin('order/get', { id })).result).toMatchObject({ status: 'suspended', reason: 'Non-payment', unpaid_invoice_id: renewal });
    expect((await admin('cron/run')).result).toMatchObject({ renewal_invoices: 0, suspended: 0, canceled: 0, failed: 0 });
    expect((await admin('invoice/get_list', { client_id: client.id })).result.total).toBe(1);

    // Paying the renewal unsuspends and renews from now (the old expiry has passed).
    const before = Date.now();
    await admin('invoice/mark_as_paid', { id: renewal });
    const renewed = (await admin('order/get', { id })).result;
    expect(renewed).toMatchObject({ status: 'active', reason: null, suspended_at: null, unpaid_invoice_id: null });
    expect(Date.parse(renewed.expires_at)).toBeGreaterThanOrEqual(addPeriod(new Date(before - 1000), '1M').getTime());
  });

  it('lets one of two concurrent checkouts of a cart win, and issues one renewal invoice for concurrent requests', async () => {
    const client = await t.createClient();
    await asClient(t, client.token, 'cart/add_item', { id: monthly, period: '1M' });
    const replies = await Promise.all([asClient(t, client.token, 'cart/checkout'), asClient(t, client.token, 'cart/checkout')]);
    expect(replies.map((reply) => reply.status).toSorted((a, b) => a - b)).toEqual([200, 409]);
    expect((await admin('order/get_list', { client_id: client.id })).result.total).toBe(1);
    expect((await admin('invoice/get_list', { client_id: client.id })).result.total).toBe(1);

    const id = (await admin('order/create', { client_id: client.id, product_id: monthly, period: '1M', activate: true })).result;
    const renewals = await Promise.all([1, 2, 3].map(() => asClient(t, client.token, 'invoice/renewal_invoice', { order_id: id })));
    expect(new Set(renewals.map((reply) => reply.result)).size).toBe(1);
    expect((await admin('invoice/get_list', { client_id: client.id })).result.total).toBe(2);
  });

  it('starts a guest session on the first guest cart call and keeps the cart per session', async () => {
    const browser = new Browser();
    expect((await t.call('/api/guest/cart/reset', {}, { browser })).result).toBe(true);
    const session = browser.cookies.tollgate_session;
    expect(session).toEqual(expect.any(String));
    await t.call('/api/guest/cart/add_item', { id: monthly, period: '1M' }, { browser });
    expect(browser.cookies.tollgate_session).toBe(session);
    expect((await t.call('/api/guest/cart/get', {}, { browser })).result.items).toHaveLength(1);
    // A fresh browser has its own, empty cart.
    expect((await t.call('/api/guest/cart/get', {}, { browser: new Browser() })).result.items).toEqual([]);
  });
});
