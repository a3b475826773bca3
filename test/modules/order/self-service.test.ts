// CONTRACT §8 self-service: cancel at period end and uncancel, upgradables, change_plan (upgrade invoiced with the
// unused period credited and applied on payment; downgrade at renewal); the API key stays the same and takes the new
// plan's custom parameters when the change applies.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectError, expectInvalid } from '../../helpers/assertions.ts';
import { asClient, makeProduct } from '../../helpers/selling-fixtures.ts';

const plan = (price: string, custom: Record<string, unknown>) => ({
  type: 'apikey',
  setup: 'after_payment' as const,
  pricing: { type: 'recurrent', recurrent: { '1M': { price }, '1Y': { price: String(Number(price) * 10) } } },
  config: { custom },
});

describe('self-service on orders', () => {
  let t: TestApp;
  let basic: number;
  let pro: number;
  let custom: number;

  const cents = (amount: string): number => Math.round(Number(amount) * 100);
  const info = async (key: string) => (await t.call('/api/guest/serviceapikey/get_info', { key })).result;

  /** A client with an active, paid order of `product` and its key. */
  async function activeOrder(product = basic): Promise<{ client: Awaited<ReturnType<TestApp['createClient']>>; orderId: number; key: string }> {
    const client = await t.createClient();
    await asClient(t, client.token, 'cart/add_item', { id: product, period: '1M' });
    const checkout = (await asClient(t, client.token, 'cart/checkout')).result;
    expect((await t.admin('invoice/mark_as_paid', { id: checkout.invoice_id })).result).toBe(true);
    const service = (await asClient(t, client.token, 'order/service', { id: checkout.order_id })).result;
    expect(service.status).toBe('active');
    return { client, orderId: checkout.order_id, key: service.api_key };
  }

  beforeAll(async () => {
    t = await createTestApp();
    basic = await makeProduct(t, { title: 'Basic', ...plan('10.00', { tier: 'basic', monthlyLimit: 1000 }) });
    pro = await makeProduct(t, { title: 'Pro', ...plan('30.00', { tier: 'pro', monthlyLimit: 100000 }) });
    custom = await makeProduct(t, { title: 'Consulting', type: 'custom' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('cancels at period end: active until expires_at, then canceled by the scheduler and the key refused', async () => {
    const { client, orderId, key } = await activeOrder();
    expect((await asClient(t, client.token, 'order/cancel', { id: orderId })).result).toBe(true);
    const order = (await asClient(t, client.token, 'order/get', { id: orderId })).result;
    expect(order).toMatchObject({ status: 'active', cancel_at_period_end: true });
    expect(await info(key)).toMatchObject({ valid: 1 });
    expectError(await asClient(t, client.token, 'order/cancel', { id: orderId }), 409);
    // No renewal invoice is issued for it, even inside the notice period.
    const beforeEnd = new Date(Date.parse(order.expires_at) - 86_400_000);
    await t.services.cron.run(beforeEnd);
    expect((await asClient(t, client.token, 'order/get', { id: orderId })).result).toMatchObject({ status: 'active', unpaid_invoice_id: null });
    // At the end of the period the scheduler cancels it, and the key stops validating.
    await t.services.cron.run(new Date(Date.parse(order.expires_at) + 1000));
    expect((await asClient(t, client.token, 'order/get', { id: orderId })).result).toMatchObject({ status: 'canceled', reason: expect.stringContaining('period') });
    expect(await info(key)).toMatchObject({ valid: 0 });
    expectError(await asClient(t, client.token, 'order/uncancel', { id: orderId }), 409);
  });

  it('takes a cancellation back before the period ends, and refuses what the state does not allow', async () => {
    const { client, orderId, key } = await activeOrder();
    expectError(await asClient(t, client.token, 'order/uncancel', { id: orderId }), 409);
    await asClient(t, client.token, 'order/cancel', { id: orderId });
    expect((await asClient(t, client.token, 'order/uncancel', { id: orderId })).result).toBe(true);
    const order = (await asClient(t, client.token, 'order/get', { id: orderId })).result;
    expect(order).toMatchObject({ status: 'active', cancel_at_period_end: false });
    await t.services.cron.run(new Date(Date.parse(order.expires_at) - 86_400_000));
    expect((await asClient(t, client.token, 'order/get', { id: orderId })).result.unpaid_invoice_id).not.toBeNull();
    expect(await info(key)).toMatchObject({ valid: 1 });

    // Another client's order is not found; a pending, suspended or non-recurring order cannot be canceled this way.
    const other = await t.createClient();
    expectError(await asClient(t, other.token, 'order/cancel', { id: orderId }), 404);
    expectError(await asClient(t, other.token, 'order/uncancel', { id: orderId }), 404);
    expectError(await asClient(t, other.token, 'order/change_plan', { id: orderId, product_id: pro, period: '1M' }), 404);
    expectError(await asClient(t, other.token, 'order/upgradables', { id: orderId }), 404);
    await asClient(t, other.token, 'cart/add_item', { id: basic, period: '1M' });
    const pending = (await asClient(t, other.token, 'cart/checkout')).result.order_id;
    expectError(await asClient(t, other.token, 'order/cancel', { id: pending }), 409);
    await asClient(t, other.token, 'cart/add_item', { id: custom, period: '1M' });
    const free = await asClient(t, other.token, 'cart/checkout');
    await t.admin('invoice/mark_as_paid', { id: free.result.invoice_id });
    await t.admin('order/suspend', { id: free.result.order_id });
    expectError(await asClient(t, other.token, 'order/cancel', { id: free.result.order_id }), 409);
    expectError(await asClient(t, other.token, 'order/cancel', { id: 999_999 }), 404);
    expectInvalid(await asClient(t, other.token, 'order/cancel', {}), 'id');
    expectInvalid(await asClient(t, other.token, 'order/cancel', { id: 'x' }), 'id');
    expectError(await t.call('/api/client/order/cancel', { id: orderId }), 201, 401);
    expectError(await t.admin('order/change_plan', { id: orderId }), 740, 404);
  });

  it('lists the plans of the same type the order can move to', async () => {
    const { client, orderId } = await activeOrder();
    const list = (await asClient(t, client.token, 'order/upgradables', { id: orderId })).result as Array<{ id: number; type: string }>;
    expect(list.map((product) => product.id)).toEqual([pro]);
    expect(list[0]).toMatchObject({ type: 'apikey', title: 'Pro', pricing: { type: 'recurrent' }, config: { custom: { tier: 'pro' } } });
  });

  it('upgrades with a prorated invoice, applied on payment; the key stays and takes the new parameters', async () => {
    const { client, orderId, key } = await activeOrder();
    const reply = await asClient(t, client.token, 'order/change_plan', { id: orderId, product_id: pro, period: '1M' });
    expect(reply.body.error).toBeNull();
    expect(reply.result).toMatchObject({ change: 'upgrade', effective: 'on_payment', invoice_id: expect.any(Number) });
    // Just activated: nearly the whole period is unused, so nearly all of it is credited.
    const credit = cents(reply.result.credit);
    expect(credit).toBeGreaterThan(990);
    expect(credit).toBeLessThanOrEqual(1000);
    expect(cents(reply.result.amount)).toBe(3000 - credit);
    const invoice = (await asClient(t, client.token, 'invoice/get', { id: reply.result.invoice_id })).result;
    expect(invoice).toMatchObject({ status: 'unpaid', total: reply.result.amount, items: [{ task: 'change', order_id: orderId }] });
    // Not applied before payment; a second change waits for it.
    expect((await asClient(t, client.token, 'order/get', { id: orderId })).result.product_id).toBe(basic);
    expect(await info(key)).toMatchObject({ config: { tier: 'basic' } });
    expectError(await asClient(t, client.token, 'order/change_plan', { id: orderId, product_id: pro, period: '1Y' }), 409);
    await t.admin('invoice/mark_as_paid', { id: invoice.id });
    const order = (await asClient(t, client.token, 'order/get', { id: orderId })).result;
    expect(order).toMatchObject({ product_id: pro, title: 'Pro', price: '30.00', period: '1M', status: 'active' });
    const service = (await asClient(t, client.token, 'order/service', { id: orderId })).result;
    expect(service.api_key).toBe(key);
    expect(await info(key)).toMatchObject({ valid: 1, config: { tier: 'pro', monthlyLimit: 100000 } });
  });

  it('downgrades at the next renewal: the renewal is priced on the new plan and the key follows when it is paid', async () => {
    const { client, orderId, key } = await activeOrder(pro);
    const reply = await asClient(t, client.token, 'order/change_plan', { id: orderId, product_id: basic, period: '1M' });
    expect(reply.result).toMatchObject({ change: 'downgrade', effective: 'at_renewal', invoice_id: null, amount: '0.00' });
    expect((await asClient(t, client.token, 'order/get', { id: orderId })).result).toMatchObject({ product_id: pro, next_product_id: basic, next_period: '1M' });
    expect(await info(key)).toMatchObject({ config: { tier: 'pro' } });
    const renewal = (await asClient(t, client.token, 'invoice/renewal_invoice', { order_id: orderId })).result;
    const invoice = (await asClient(t, client.token, 'invoice/get', { id: renewal })).result;
    expect(invoice).toMatchObject({ subtotal: '10.00', items: [{ task: 'renew', title: expect.stringContaining('Basic') }] });
    const before = (await asClient(t, client.token, 'order/get', { id: orderId })).result.expires_at as string;
    await t.admin('invoice/mark_as_paid', { id: renewal });
    const order = (await asClient(t, client.token, 'order/get', { id: orderId })).result;
    expect(order).toMatchObject({ product_id: basic, title: 'Basic', price: '10.00', next_product_id: null });
    expect(Date.parse(order.expires_at)).toBeGreaterThan(Date.parse(before));
    expect((await asClient(t, client.token, 'order/service', { id: orderId })).result.api_key).toBe(key);
    expect(await info(key)).toMatchObject({ valid: 1, config: { tier: 'basic', monthlyLimit: 1000 } });
  });

  it('refuses plan changes the order or the product does not allow', async () => {
    const { client, orderId } = await activeOrder();
    expectInvalid(await asClient(t, client.token, 'order/change_plan', { id: orderId, product_id: basic, period: '1M' }), 'product_id');
    expectInvalid(await asClient(t, client.token, 'order/change_plan', { id: orderId, product_id: custom, period: '1M' }), 'product_id');
    expectInvalid(await asClient(t, client.token, 'order/change_plan', { id: orderId, product_id: pro, period: '6M' }), 'period');
    expectInvalid(await asClient(t, client.token, 'order/change_plan', { id: orderId, product_id: pro }), 'period');
    expectInvalid(await asClient(t, client.token, 'order/change_plan', { id: orderId, period: '1M' }), 'product_id');
    expectError(await asClient(t, client.token, 'order/change_plan', { id: orderId, product_id: 999_999, period: '1M' }), 404);
    const disabled = await makeProduct(t, { title: 'Old', status: 'disabled', ...plan('50.00', {}) });
    expectError(await asClient(t, client.token, 'order/change_plan', { id: orderId, product_id: disabled, period: '1M' }), 404);
    // A downgrade can be taken back by choosing the current plan again.
    const yearlyBasic = await asClient(t, client.token, 'order/change_plan', { id: orderId, product_id: basic, period: '1Y' });
    expect(yearlyBasic.result.change).toBe('downgrade');
    expect((await asClient(t, client.token, 'order/change_plan', { id: orderId, product_id: basic, period: '1M' })).result.effective).toBe('now');
    expect((await asClient(t, client.token, 'order/get', { id: orderId })).result.next_product_id).toBeNull();
    // Canceled at period end: uncancel first.
    await asClient(t, client.token, 'order/cancel', { id: orderId });
    expectError(await asClient(t, client.token, 'order/change_plan', { id: orderId, product_id: pro, period: '1M' }), 409);
    await asClient(t, client.token, 'order/uncancel', { id: orderId });
    // An unpaid renewal invoice must be settled first.
    await asClient(t, client.token, 'invoice/renewal_invoice', { order_id: orderId });
    expectError(await asClient(t, client.token, 'order/change_plan', { id: orderId, product_id: pro, period: '1M' }), 409);
  });

  it('refuses to apply an upgrade to an order suspended meanwhile (issue 20, M2)', async () => {
    const { client, orderId, key } = await activeOrder();
    const reply = await asClient(t, client.token, 'order/change_plan', { id: orderId, product_id: pro, period: '1M' });
    // The order is suspended before the upgrade invoice is paid: the payment would buy a new period of Pro with a
    // credit for a period the order no longer runs on, so staff are refused and the order stays as it is.
    await t.admin('order/suspend', { id: orderId, reason: 'Non-payment' });
    expect(await info(key)).toMatchObject({ valid: 0 });
    expectError(await t.admin('invoice/mark_as_paid', { id: reply.result.invoice_id }), 409);
    expect((await asClient(t, client.token, 'order/get', { id: orderId })).result).toMatchObject({ status: 'suspended', product_id: basic });
    expect((await t.admin('invoice/get', { id: reply.result.invoice_id })).result.status).toBe('unpaid');
    expectError(await t.call('/api/client/order/upgradables', { id: orderId }), 201, 401);
    expectError(await t.call('/api/client/order/change_plan', { id: orderId, product_id: pro, period: '1M' }), 201, 401);
  });

  it('lets one of two concurrent upgrades of one order win', async () => {
    const { client, orderId } = await activeOrder();
    const replies = await Promise.all([0, 1, 2].map(() => asClient(t, client.token, 'order/change_plan', { id: orderId, product_id: pro, period: '1M' })));
    expect(replies.filter((reply) => reply.status === 200)).toHaveLength(1);
    for (const reply of replies.filter((r) => r.status !== 200)) expectError(reply, 409);
    const invoices = (await asClient(t, client.token, 'invoice/get_list', { status: 'unpaid' })).result;
    expect(invoices.total).toBe(1);
  });
});
