// CONTRACT §8 coupons: staff manage them (admin/product/promo_*), carts apply and remove them, the invoice shows the
// discount, a use is counted once at checkout, max_uses holds under concurrent checkouts, recurring coupons
// discount renewals, and every refusal is a 422 naming why with nothing counted.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser, createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectError, expectInvalid } from '../../helpers/assertions.ts';
import { asClient, asStaff, makeProduct, signUp, staffWith } from '../../helpers/selling-fixtures.ts';

describe('coupons', () => {
  let t: TestApp;
  let monthly: number;
  let yearlyOnly: number;
  let other: number;

  const promo = async (params: Record<string, unknown>): Promise<number> => {
    const reply = await t.admin('product/promo_create', params);
    expect(reply.body.error).toBeNull();
    return reply.result as number;
  };
  const used = async (id: number): Promise<number> => (await t.admin('product/promo_get', { id })).result.used as number;
  /** A new client with `product` in the cart. */
  const clientWithCart = async (product = monthly, period = '1M') => {
    const client = await t.createClient();
    expect((await asClient(t, client.token, 'cart/add_item', { id: product, period })).result).toBe(true);
    return client;
  };

  beforeAll(async () => {
    t = await createTestApp();
    monthly = await makeProduct(t, {
      title: 'Pro',
      pricing: { type: 'recurrent', recurrent: { '1M': { price: '10.00', setup: '0' }, '1Y': { price: '100.00', setup: '0' } } },
    });
    yearlyOnly = await makeProduct(t, { title: 'Yearly', pricing: { type: 'recurrent', recurrent: { '1Y': { price: '50.00' } } } });
    other = await makeProduct(t, { title: 'Other' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('manages coupons, refusing bad and duplicate ones', async () => {
    const id = await promo({ code: 'welcome10', type: 'percentage', value: '10', products: [monthly], periods: ['1M'], max_uses: 5, once_per_client: true });
    expect((await t.admin('product/promo_get', { id })).result).toEqual({
      id,
      code: 'WELCOME10',
      type: 'percentage',
      value: '10',
      products: [monthly],
      periods: ['1M'],
      max_uses: 5,
      used: 0,
      once_per_client: true,
      recurring: false,
      active: true,
      start_at: null,
      end_at: null,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expectError(await t.admin('product/promo_create', { code: 'Welcome10', type: 'absolute', value: '1' }), 409);
    expectInvalid(await t.admin('product/promo_create', { code: 'bad code!', type: 'absolute', value: '1' }), 'code');
    expectInvalid(await t.admin('product/promo_create', { code: 'X1', type: 'discount', value: '1' }), 'type');
    expectInvalid(await t.admin('product/promo_create', { code: 'X1', type: 'percentage', value: '120' }), 'value');
    expectInvalid(await t.admin('product/promo_create', { code: 'X1', type: 'percentage', value: '0' }), 'value');
    expectInvalid(await t.admin('product/promo_create', { code: 'X1', type: 'absolute', value: '-5' }), 'value');
    expectInvalid(await t.admin('product/promo_create', { code: 'X1', type: 'absolute', value: '1.005' }), 'value');
    expectInvalid(await t.admin('product/promo_create', { code: 'X1', type: 'absolute' }), 'value');
    expectInvalid(await t.admin('product/promo_create', { code: 'X1', type: 'absolute', value: 1, products: [999_999] }), 'products');
    expectInvalid(await t.admin('product/promo_create', { code: 'X1', type: 'absolute', value: 1, periods: ['1Q'] }), 'periods');
    expectInvalid(await t.admin('product/promo_create', { code: 'X1', type: 'absolute', value: 1, max_uses: -1 }), 'max_uses');
    expectInvalid(await t.admin('product/promo_create', { code: 'X1', type: 'absolute', value: 1, end_at: 'tomorrow' }), 'end_at');
    expectInvalid(await t.admin('product/promo_create', { code: 'X1', type: 'absolute', value: 1, start_at: '2030-01-02', end_at: '2030-01-01' }), 'end_at');
    expect((await t.admin('product/promo_get_list', { search: 'x1' })).result.total).toBe(0);
    expect((await t.admin('product/promo_update', { id, value: '15', active: false })).result).toBe(true);
    expect((await t.admin('product/promo_get', { id })).result).toMatchObject({ value: '15', active: false });
    expectInvalid(await t.admin('product/promo_update', { id, type: 'absolute' }), 'value');
    expectError(await t.admin('product/promo_update', { id: 999_999, value: '1' }), 404);
    expectError(await t.admin('product/promo_get', { id: 999_999 }), 404);
    expectError(await t.admin('product/promo_delete', { id: 999_999 }), 404);
    const second = await promo({ code: 'SECOND', type: 'absolute', value: '2' });
    expectError(await t.admin('product/promo_update', { id: second, code: 'welcome10' }), 409);
    expect((await t.admin('product/promo_get_list', { search: 'welcome10' })).result.list.map((p: { id: number }) => p.id)).toEqual([id]);
    expect((await t.admin('product/promo_delete', { id: second })).result).toBe(true);
    // Roles and permissions.
    const viewer = await staffWith(t, ['product.view']);
    expect((await asStaff(t, viewer, 'product/promo_get', { id })).status).toBe(200);
    expectError(await asStaff(t, viewer, 'product/promo_create', { code: 'NOPE', type: 'absolute', value: 1 }), 403);
    expectError(await asStaff(t, viewer, 'product/promo_delete', { id }), 403);
    expectError(await t.call('/api/admin/product/promo_get_list'), 201, 401);
    const client = await t.createClient();
    expectError(await asClient(t, client.token, 'product/promo_get_list'), 740, 404);
  });

  it('applies a coupon to a cart, shows its discount, puts it on the invoice and counts one use at checkout', async () => {
    const id = await promo({ code: 'HALF', type: 'percentage', value: 50 });
    const client = await clientWithCart();
    expect((await asClient(t, client.token, 'cart/apply_promo', { promocode: 'half' })).result).toBe(true);
    expect((await asClient(t, client.token, 'cart/get')).result).toMatchObject({ subtotal: '10.00', promocode: 'HALF', discount: '5.00', total: '5.00' });
    expectInvalid(await asClient(t, client.token, 'cart/apply_promo', { promocode: 'HALF' }), 'promocode');
    expect(await used(id)).toBe(0);
    const checkout = await asClient(t, client.token, 'cart/checkout');
    expect(checkout.body.error).toBeNull();
    expect(await used(id)).toBe(1);
    const invoice = (await asClient(t, client.token, 'invoice/get', { id: checkout.result.invoice_id })).result;
    expect(invoice).toMatchObject({ subtotal: '10.00', discount: '5.00', promocode: 'HALF', total: '5.00' });
    // The coupon left with the checkout: the next cart has none.
    await asClient(t, client.token, 'cart/add_item', { id: monthly, period: '1M' });
    expect((await asClient(t, client.token, 'cart/get')).result).toMatchObject({ promocode: null, discount: '0.00', total: '10.00' });
    // remove_promo takes it off again.
    await asClient(t, client.token, 'cart/apply_promo', { promocode: 'HALF' });
    expect((await asClient(t, client.token, 'cart/remove_promo')).result).toBe(true);
    expect((await asClient(t, client.token, 'cart/get')).result.promocode).toBeNull();
    // An absolute coupon larger than the cart makes it free: no invoice, the order starts at once.
    await promo({ code: 'BIG', type: 'absolute', value: '500' });
    await asClient(t, client.token, 'cart/apply_promo', { promocode: 'BIG' });
    expect((await asClient(t, client.token, 'cart/get')).result).toMatchObject({ discount: '10.00', total: '0.00' });
    const free = await asClient(t, client.token, 'cart/checkout');
    expect(free.result.invoice_id).toBeNull();
    expect((await asClient(t, client.token, 'order/get', { id: free.result.order_id })).result.status).toBe('active');
  });

  it('keeps the guest cart coupon through sign-up', async () => {
    await promo({ code: 'GUEST5', type: 'absolute', value: '5' });
    const browser = new Browser();
    await t.call('/api/guest/cart/add_item', { id: monthly, period: '1M' }, { browser });
    expect((await t.call('/api/guest/cart/apply_promo', { promocode: 'GUEST5' }, { browser })).result).toBe(true);
    expect((await t.call('/api/guest/cart/get', {}, { browser })).result).toMatchObject({ promocode: 'GUEST5', total: '5.00' });
    expectInvalid(await t.call('/api/guest/cart/apply_promo', {}, { browser }), 'promocode');
    const { browser: signedUp } = await signUp(t, browser);
    expect((await t.call('/api/client/cart/get', {}, { browser: signedUp, csrf: true })).result).toMatchObject({ promocode: 'GUEST5', total: '5.00' });
    expect((await t.call('/api/guest/cart/remove_promo', {}, { browser: new Browser() })).result).toBe(true);
  });

  it('refuses unknown, inactive, early, expired, used-up, foreign and repeated coupons with 422, counting nothing', async () => {
    const client = await clientWithCart();
    const refuse = async (code: string, reason: RegExp): Promise<void> => {
      const reply = await asClient(t, client.token, 'cart/apply_promo', { promocode: code });
      expectInvalid(reply, 'promocode');
      expect(reply.body.error!.message).toMatch(reason);
    };
    await refuse('NO-SUCH', /not a known coupon/);
    await refuse('x'.repeat(64), /not a known coupon/);
    await promo({ code: 'OFF', type: 'percentage', value: 5, active: false });
    await refuse('OFF', /not active/);
    await promo({ code: 'LATER', type: 'percentage', value: 5, start_at: '2999-01-01T00:00:00Z' });
    await refuse('LATER', /not valid yet/);
    await promo({ code: 'PAST', type: 'percentage', value: 5, end_at: '2000-01-01' });
    await refuse('PAST', /expired/);
    const gone = await promo({ code: 'GONE', type: 'percentage', value: 5, max_uses: 1 });
    const first = await clientWithCart();
    await asClient(t, first.token, 'cart/apply_promo', { promocode: 'GONE' });
    await asClient(t, first.token, 'cart/checkout');
    await refuse('GONE', /used up/);
    await promo({ code: 'OTHERONLY', type: 'percentage', value: 5, products: [other] });
    await refuse('OTHERONLY', /products/);
    await promo({ code: 'YEARLY', type: 'percentage', value: 5, products: [monthly], periods: ['1Y'] });
    await refuse('YEARLY', /period/);
    const once = await promo({ code: 'ONCE', type: 'absolute', value: 1, once_per_client: true });
    await asClient(t, client.token, 'cart/apply_promo', { promocode: 'ONCE' });
    await refuse('ONCE', /already applied/);
    expect((await asClient(t, client.token, 'cart/checkout')).body.error).toBeNull();
    await asClient(t, client.token, 'cart/add_item', { id: monthly, period: '1M' });
    await refuse('ONCE', /already been used by this account/);
    expect(await used(gone)).toBe(1);
    expect(await used(once)).toBe(1);
    const empty = await t.createClient();
    expectInvalid(await asClient(t, empty.token, 'cart/apply_promo', { promocode: 'ONCE' }), 'promocode');
    expectInvalid(await asClient(t, empty.token, 'cart/apply_promo', { promocode: 42 }), 'promocode');
    expectError(await t.call('/api/client/cart/apply_promo', { promocode: 'ONCE' }), 201, 401);
  });

  it('refuses at checkout a coupon that expired or was disabled after it was applied, leaving the cart intact', async () => {
    const id = await promo({ code: 'FLEETING', type: 'percentage', value: 20 });
    const client = await clientWithCart();
    await asClient(t, client.token, 'cart/apply_promo', { promocode: 'FLEETING' });
    await t.admin('product/promo_update', { id, active: false });
    expectInvalid(await asClient(t, client.token, 'cart/checkout'), 'promocode');
    expect(await used(id)).toBe(0);
    expect((await asClient(t, client.token, 'cart/get')).result).toMatchObject({ promocode: 'FLEETING', subtotal: '10.00' });
    expect((await asClient(t, client.token, 'order/get_list')).result.total).toBe(0);
    await t.admin('product/promo_update', { id, active: true });
    expect((await asClient(t, client.token, 'cart/checkout')).body.error).toBeNull();
    expect(await used(id)).toBe(1);
  });

  it('discounts only the covered products and periods of a mixed cart', async () => {
    await promo({ code: 'YEAR20', type: 'percentage', value: '20', periods: ['1Y'] });
    const client = await t.createClient();
    await asClient(t, client.token, 'cart/add_item', { id: monthly, period: '1M', multiple: true });
    await asClient(t, client.token, 'cart/add_item', { id: yearlyOnly, period: '1Y', multiple: true });
    await asClient(t, client.token, 'cart/apply_promo', { promocode: 'YEAR20' });
    expect((await asClient(t, client.token, 'cart/get')).result).toMatchObject({ subtotal: '60.00', discount: '10.00', total: '50.00' });
  });

  it('holds max_uses under concurrent checkouts: exactly max_uses win, the rest get 422 and keep their carts', async () => {
    const id = await promo({ code: 'RUSH', type: 'absolute', value: '1', max_uses: 3 });
    const clients = [];
    for (let i = 0; i < 10; i++) {
      const client = await clientWithCart();
      expect((await asClient(t, client.token, 'cart/apply_promo', { promocode: 'RUSH' })).result).toBe(true);
      clients.push(client);
    }
    const replies = await Promise.all(clients.map((client) => asClient(t, client.token, 'cart/checkout')));
    const won = replies.filter((reply) => reply.status === 200);
    expect(won).toHaveLength(3);
    for (const reply of replies.filter((r) => r.status !== 200)) expectInvalid(reply, 'promocode');
    expect(await used(id)).toBe(3);
    const uses = await t.services.db.selectFrom('promo_uses').select('id').where('promo_id', '=', id).execute();
    expect(uses).toHaveLength(3);
    const invoices = await t.services.db.selectFrom('invoices').select('id').where('promo_code', '=', 'RUSH').execute();
    expect(invoices).toHaveLength(3);
  });

  it('counts a once-per-client coupon once when the same client checks out twice at once', async () => {
    const id = await promo({ code: 'SOLO', type: 'absolute', value: '1', once_per_client: true });
    const client = await clientWithCart();
    await asClient(t, client.token, 'cart/apply_promo', { promocode: 'SOLO' });
    const replies = await Promise.all([0, 1, 2].map(() => asClient(t, client.token, 'cart/checkout')));
    expect(replies.filter((reply) => reply.status === 200)).toHaveLength(1);
    expect(await used(id)).toBe(1);
  });

  it('discounts renewals with a recurring coupon, and only then', async () => {
    await promo({ code: 'FOREVER', type: 'percentage', value: '30', recurring: true });
    await promo({ code: 'FIRSTONLY', type: 'percentage', value: '30' });
    const renewalOf = async (code: string): Promise<Record<string, any>> => {
      const client = await clientWithCart();
      await asClient(t, client.token, 'cart/apply_promo', { promocode: code });
      const checkout = (await asClient(t, client.token, 'cart/checkout')).result;
      await t.admin('invoice/mark_as_paid', { id: checkout.invoice_id });
      const renewal = await asClient(t, client.token, 'invoice/renewal_invoice', { order_id: checkout.order_id });
      return (await asClient(t, client.token, 'invoice/get', { id: renewal.result })).result;
    };
    expect(await renewalOf('FOREVER')).toMatchObject({ subtotal: '10.00', discount: '3.00', promocode: 'FOREVER', total: '7.00' });
    expect(await renewalOf('FIRSTONLY')).toMatchObject({ subtotal: '10.00', discount: '0.00', promocode: null, total: '10.00' });
  });
});
