// Carts and checkout: guest and client carts, moving a guest cart at login, sign-up and on token calls carrying the
// guest cookie, validation, setup modes, exact totals, and a checkout that crashes half-way leaving nothing behind.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { customType } from '../../../src/modules/product/custom-type.ts';
import type { ProductType } from '../../../src/modules/product/product-type.ts';
import { Browser, createTestApp, type TestApp } from '../../helpers/app.ts';
import { asClient, expectError, inBrowser, makeProduct, signUp } from '../../helpers/selling-fixtures.ts';

// A product type whose provisioning always fails: checkout must leave nothing behind.
const explodingType: ProductType = {
  ...customType,
  code: 'exploding',
  activate: () => Promise.reject(new Error('provisioning failed')),
};

async function count(t: TestApp, table: 'orders' | 'invoices' | 'invoice_items' | 'order_history' | 'cart_items'): Promise<number> {
  const row = await t.services.db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return row.n;
}

describe('cart and checkout', () => {
  let t: TestApp;
  let monthly: number;
  beforeAll(async () => {
    t = await createTestApp();
    t.services.productTypes.register(explodingType);
    monthly = await makeProduct(t, {
      title: 'Monthly',
      pricing: { type: 'recurrent', recurrent: { '1M': { price: '10.00', setup: '2.50' }, '1Y': { price: '100', enabled: false } } },
    });
  });
  afterAll(async () => {
    await t.close();
  });

  it('keeps a guest cart in a session started by the first cart call', async () => {
    const browser = new Browser();
    const empty = await t.call('/api/guest/cart/get', {}, { browser });
    expect(empty.result).toEqual({ items: [], subtotal: '0.00', promocode: null, discount: '0.00', total: '0.00', currency: 'USD' });
    const session = browser.cookies.tollgate_session;
    expect(session).toEqual(expect.any(String));

    expect((await t.call('/api/guest/cart/add_item', { id: monthly, period: '1M', quantity: 2 }, { browser })).result).toBe(true);
    // The same session keeps the cart: no new cookie once there is one.
    expect(browser.cookies.tollgate_session).toBe(session);
    const cart = (await t.call('/api/guest/cart/get', {}, { browser })).result;
    expect(cart.items).toEqual([
      { id: expect.any(Number), product_id: monthly, title: 'Monthly', type: 'custom', period: '1M', quantity: 2, price: '10.00', setup_price: '2.50', total: '22.50', usage_terms: null },
    ]);
    expect(cart).toMatchObject({ subtotal: '22.50', total: '22.50', currency: 'USD' });

    // Another guest sees nothing of it.
    expect((await t.call('/api/guest/cart/get', {}, { browser: new Browser() })).result.items).toEqual([]);
    expectError(await t.call('/api/guest/cart/remove_item', { id: cart.items[0].id }, { browser: new Browser() }), 404);

    // add_item empties the cart first unless multiple is set.
    await t.call('/api/guest/cart/add_item', { id: monthly, period: '1M' }, { browser });
    expect((await t.call('/api/guest/cart/get', {}, { browser })).result.items).toHaveLength(1);
    await t.call('/api/guest/cart/add_item', { id: monthly, period: '1M', multiple: true }, { browser });
    const two = (await t.call('/api/guest/cart/get', {}, { browser })).result;
    expect(two.items).toHaveLength(2);
    expect((await t.call('/api/guest/cart/remove_item', { id: two.items[0].id }, { browser })).result).toBe(true);
    expect((await t.call('/api/guest/cart/get', {}, { browser })).result.items).toHaveLength(1);
    expectError(await t.call('/api/guest/cart/remove_item', { id: two.items[0].id }, { browser }), 404);
    expect((await t.call('/api/guest/cart/reset', {}, { browser })).result).toBe(true);
    expect((await t.call('/api/guest/cart/get', {}, { browser })).result.items).toEqual([]);
  });

  it('validates add_item: unknown or disabled product 404, period and quantity 422', async () => {
    const browser = new Browser();
    const add = (params: Record<string, unknown>) => t.call('/api/guest/cart/add_item', params, { browser });
    expectError(await add({ id: 999_999, period: '1M' }), 404);
    const disabled = await makeProduct(t, { status: 'disabled' });
    expectError(await add({ id: disabled, period: '1M' }), 404);
    const checks: Array<[Record<string, unknown>, string]> = [
      [{ id: monthly }, 'period'],
      [{ id: monthly, period: '1Y' }, 'period'],
      [{ id: monthly, period: '3M' }, 'period'],
      [{ id: monthly, period: '0M' }, 'period'],
      [{ id: monthly, period: '-1M' }, 'period'],
      [{ id: monthly, period: 'forever' }, 'period'],
      [{ id: monthly, period: '1M', quantity: 0 }, 'quantity'],
      [{ id: monthly, period: '1M', quantity: -1 }, 'quantity'],
      [{ id: monthly, period: '1M', quantity: 'lots' }, 'quantity'],
      [{ id: monthly, period: '1M', quantity: 1.5 }, 'quantity'],
      [{ id: monthly, period: '1M', quantity: 1e9 }, 'quantity'],
      [{ id: 'abc', period: '1M' }, 'id'],
      [{ id: -3, period: '1M' }, 'id'],
      [{ period: '1M' }, 'id'],
    ];
    for (const [params, param] of checks) {
      const reply = await add(params);
      expectError(reply, 422);
      expect(reply.body.error!.message).toContain(`"${param}"`);
    }
    expect((await t.call('/api/guest/cart/get', {}, { browser })).result.items).toEqual([]);
    // A one-time product ignores the period.
    const once = await makeProduct(t, { pricing: { type: 'once', once: { price: '5' } } });
    expect((await add({ id: once, period: '1M' })).result).toBe(true);
    expect((await t.call('/api/guest/cart/get', {}, { browser })).result.items[0]).toMatchObject({ period: null, total: '5.00' });
  });

  it('totals never drift: three items at 0.10 are exactly 0.30', async () => {
    const dime = await makeProduct(t, { pricing: { type: 'once', once: { price: '0.10' } } });
    const client = await t.createClient();
    for (let i = 0; i < 3; i++) await asClient(t, client.token, 'cart/add_item', { id: dime, multiple: true });
    const cart = (await asClient(t, client.token, 'cart/get')).result;
    expect(cart.total).toBe('0.30');
    const checkout = (await asClient(t, client.token, 'cart/checkout')).result;
    expect(checkout.orders).toHaveLength(3);
    expect((await asClient(t, client.token, 'invoice/get', { id: checkout.invoice_id })).result).toMatchObject({ subtotal: '0.30', total: '0.30' });
  });

  it('moves a guest cart to the client at login', async () => {
    const client = await t.createClient();
    const browser = new Browser();
    await t.call('/api/guest/cart/add_item', { id: monthly, period: '1M', quantity: 3 }, { browser });
    await t.login('client', client.email, client.password, browser);
    const cart = await inBrowser(t, browser, 'cart/get');
    expect(cart.result.items).toHaveLength(1);
    expect(cart.result.items[0].quantity).toBe(3);
    // The same cart through the API token.
    expect((await asClient(t, client.token, 'cart/get')).result.items).toHaveLength(1);
  });

  it('moves a guest cart when a token call carries the guest cookie', async () => {
    const client = await t.createClient();
    const browser = new Browser();
    await t.call('/api/guest/cart/add_item', { id: monthly, period: '1M' }, { browser });
    const checkout = await t.call('/api/client/cart/checkout', {}, { basic: ['client', client.token], browser });
    expect(checkout.body.error).toBeNull();
    expect(checkout.result.orders).toHaveLength(1);
    expect((await t.call('/api/guest/cart/get', {}, { browser })).result.items).toEqual([]);
    const order = (await asClient(t, client.token, 'order/get', { id: checkout.result.order_id })).result;
    expect(order).toMatchObject({ client_id: client.id, status: 'pending_setup', period: '1M', price: '10.00' });
  });

  it('refuses an empty cart, a client session without CSRF and an unknown gateway', async () => {
    const client = await t.createClient();
    expectError(await asClient(t, client.token, 'cart/checkout'), 409);
    const browser = await t.login('client', client.email, client.password);
    expectError(await t.call('/api/client/cart/get', {}, { browser }), 403);
    expectError(await t.call('/api/client/cart/checkout', {}), 201, 401);
    await asClient(t, client.token, 'cart/add_item', { id: monthly, period: '1M' });
    expectError(await asClient(t, client.token, 'cart/checkout', { gateway_id: 99 }), 422);
    expectError(await asClient(t, client.token, 'cart/checkout', { gateway_id: 'card' }), 422);
    expect((await asClient(t, client.token, 'cart/checkout', { gateway_id: 1 })).body.error).toBeNull();
  });

  it('refuses at checkout a product disabled after it was added', async () => {
    const product = await makeProduct(t);
    const client = await t.createClient();
    await asClient(t, client.token, 'cart/add_item', { id: product, period: '1M' });
    await t.admin('product/update', { id: product, status: 'disabled' });
    expectError(await asClient(t, client.token, 'cart/checkout'), 404);
    await t.admin('product/update', { id: product, status: 'enabled', pricing: { recurrent: { '1M': { price: 10, enabled: false } } } });
    expectError(await asClient(t, client.token, 'cart/checkout'), 422);
  });

  it('activates free carts and after_order products at once, after_payment on payment, manual never by itself', async () => {
    const client = await t.createClient();
    const free = await makeProduct(t, { pricing: { type: 'free' } });
    await asClient(t, client.token, 'cart/add_item', { id: free });
    const freeCheckout = (await asClient(t, client.token, 'cart/checkout')).result;
    expect(freeCheckout.invoice_id).toBeNull();
    expect(freeCheckout.invoice_hash).toBeNull();
    expect((await asClient(t, client.token, 'order/get', { id: freeCheckout.order_id })).result).toMatchObject({ status: 'active', expires_at: null });

    const afterOrder = await makeProduct(t, { setup: 'after_order' });
    const afterPayment = await makeProduct(t, { setup: 'after_payment' });
    const manual = await makeProduct(t, { setup: 'manual' });
    for (const id of [afterOrder, afterPayment, manual]) await asClient(t, client.token, 'cart/add_item', { id, period: '1M', multiple: true });
    const checkout = (await asClient(t, client.token, 'cart/checkout')).result;
    const [a, b, c] = checkout.orders as number[];
    const status = async (id: number) => (await t.admin('order/get', { id })).result.status;
    expect([await status(a!), await status(b!), await status(c!)]).toEqual(['active', 'pending_setup', 'pending_setup']);
    expect((await t.admin('invoice/get', { id: checkout.invoice_id })).result.total).toBe('30.00');
    await t.admin('invoice/mark_as_paid', { id: checkout.invoice_id });
    expect([await status(a!), await status(b!), await status(c!)]).toEqual(['active', 'active', 'pending_setup']);
    expect((await t.admin('order/activate', { id: c })).result).toBe(true);
    expect(await status(c!)).toBe('active');
  });

  it('leaves nothing behind when checkout crashes half-way', async () => {
    const client = await t.createClient();
    const fine = await makeProduct(t, { setup: 'after_order' });
    const broken = await makeProduct(t, { type: 'exploding', setup: 'after_order' });
    await asClient(t, client.token, 'cart/add_item', { id: fine, period: '1M' });
    await asClient(t, client.token, 'cart/add_item', { id: broken, period: '1M', multiple: true });
    const before = { orders: await count(t, 'orders'), invoices: await count(t, 'invoices'), items: await count(t, 'invoice_items'), history: await count(t, 'order_history') };
    const crashed = await asClient(t, client.token, 'cart/checkout');
    expectError(crashed, 500);
    expect(crashed.body.error!.message).toBe('Internal error');
    expect({ orders: await count(t, 'orders'), invoices: await count(t, 'invoices'), items: await count(t, 'invoice_items'), history: await count(t, 'order_history') }).toEqual(before);
    // The cart is intact, so the client can remove the broken item and try again.
    const cart = (await asClient(t, client.token, 'cart/get')).result;
    expect(cart.items).toHaveLength(2);
    await asClient(t, client.token, 'cart/remove_item', { id: cart.items[1].id });
    expect((await asClient(t, client.token, 'cart/checkout')).body.error).toBeNull();
  });

  it('does not let one client touch another client’s cart items', async () => {
    const alice = await t.createClient();
    const bob = await t.createClient();
    await asClient(t, alice.token, 'cart/add_item', { id: monthly, period: '1M' });
    const item = (await asClient(t, alice.token, 'cart/get')).result.items[0];
    expectError(await asClient(t, bob.token, 'cart/remove_item', { id: item.id }), 404);
    expect((await asClient(t, bob.token, 'cart/get')).result.items).toEqual([]);
    expect((await asClient(t, alice.token, 'cart/get')).result.items).toHaveLength(1);
  });

  it('signs up with a guest cart and checks out in the new session', async () => {
    const browser = new Browser();
    await t.call('/api/guest/cart/add_item', { id: monthly, period: '1M' }, { browser });
    const client = await signUp(t, browser);
    const checkout = await inBrowser(t, browser, 'cart/checkout');
    expect(checkout.body.error).toBeNull();
    expect((await t.admin('order/get', { id: checkout.result.order_id })).result.client_id).toBe(client.id);
  });
});
