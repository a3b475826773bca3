// Issue 20, M1 and M8: a plan change credits what was actually paid for the unused part of the current period —
// after coupons, net of refunds, without setup fees or tax, nothing for a period granted without payment — never
// the list price. Runs on SQLite, and on PostgreSQL + Redis when TEST_* are set.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { paidForPeriod } from '../../../src/lib/proration.ts';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectError, expectInvalid } from '../../helpers/assertions.ts';
import { asClient, makeProduct } from '../../helpers/selling-fixtures.ts';

const recurrent = (period: string, price: string, setup = '0') => ({ type: 'recurrent', recurrent: { [period]: { price, setup, enabled: true } } });
const cents = (amount: string): number => Math.round(Number(amount) * 100);

describe('what a plan change credits (issue 20: M1, M8)', () => {
  let t: TestApp;
  let planA: number;
  let planB: number;
  let planD: number;
  let weekly: number;
  let withSetup: number;
  let otherType: number;

  beforeAll(async () => {
    t = await createTestApp();
    planA = await makeProduct(t, { title: 'A', setup: 'after_payment', pricing: recurrent('1M', '10.00') });
    planB = await makeProduct(t, { title: 'B', setup: 'after_payment', pricing: recurrent('1M', '20.00') });
    planD = await makeProduct(t, { title: 'D', setup: 'after_payment', pricing: recurrent('1M', '40.00') });
    weekly = await makeProduct(t, { title: 'Weekly', setup: 'after_payment', pricing: recurrent('1W', '5.00') });
    withSetup = await makeProduct(t, { title: 'A with setup', setup: 'after_payment', pricing: recurrent('1M', '10.00', '5.00') });
    otherType = await makeProduct(t, { title: 'Keys', type: 'apikey', setup: 'after_payment', pricing: recurrent('1M', '50.00') });
    for (const [code, value, products] of [
      ['FREEA', '100', [planA]],
      ['HALFA', '50', [planA]],
    ] as const) {
      expect((await t.admin('product/promo_create', { code, type: 'percentage', value, products })).body.error).toBeNull();
    }
  });
  afterAll(async () => {
    await t.close();
  });

  /** Checks `product` out (with `promocode`), pays the invoice if there is one; returns the active order. */
  async function buy(product: number, options: { promocode?: string; pay?: boolean } = {}) {
    const client = await t.createClient();
    const period = product === weekly ? '1W' : '1M';
    await asClient(t, client.token, 'cart/add_item', { id: product, period });
    if (options.promocode !== undefined) expect((await asClient(t, client.token, 'cart/apply_promo', { promocode: options.promocode })).result).toBe(true);
    const checkout = (await asClient(t, client.token, 'cart/checkout')).result;
    if (checkout.invoice_id !== null && options.pay !== false) expect((await t.admin('invoice/mark_as_paid', { id: checkout.invoice_id })).result).toBe(true);
    return { token: client.token, orderId: checkout.order_id as number, invoiceId: checkout.invoice_id as number | null };
  }

  const changePlan = async (token: string, orderId: number, productId: number, period = '1M') => {
    const reply = await asClient(t, token, 'order/change_plan', { id: orderId, product_id: productId, period });
    expect(reply.body.error).toBeNull();
    return reply.result as { change: string; effective: string; invoice_id: number | null; credit: string; amount: string };
  };

  /** Just after activation almost the whole period is unused: the credit is `paid` less a few seconds' worth. */
  const expectCreditOf = (credit: string, paid: number) => {
    expect(cents(credit)).toBeLessThanOrEqual(paid);
    expect(cents(credit)).toBeGreaterThanOrEqual(Math.floor(paid * 0.99));
  };

  it('M1: a period bought with a 100% coupon credits nothing', async () => {
    const { token, orderId, invoiceId } = await buy(planA, { promocode: 'FREEA' });
    expect(invoiceId).toBeNull();
    expect((await t.admin('order/get', { id: orderId })).result.status).toBe('active');
    const result = await changePlan(token, orderId, planB);
    expect(result).toMatchObject({ change: 'upgrade', effective: 'on_payment', credit: '0.00', amount: '20.00' });
  });

  it('M1: a period bought at half price credits half of it', async () => {
    const { token, orderId } = await buy(planA, { promocode: 'HALFA' });
    const result = await changePlan(token, orderId, planB);
    expectCreditOf(result.credit, 500);
    expect(cents(result.amount)).toBe(2000 - cents(result.credit));
  });

  it('M1: a setup fee is not service time and is not credited', async () => {
    const { token, orderId, invoiceId } = await buy(withSetup);
    expect((await t.admin('invoice/get', { id: invoiceId })).result.total).toBe('15.00');
    expectCreditOf((await changePlan(token, orderId, planB)).credit, 1000);
  });

  it('M1: a period staff granted without payment credits nothing', async () => {
    const { token, orderId } = await buy(planA);
    // Staff renew it for free: the current period (the new one) was never paid.
    expect((await t.admin('order/renew', { id: orderId })).result).toBe(true);
    expect(await changePlan(token, orderId, planB)).toMatchObject({ credit: '0.00', amount: '20.00' });
  });

  it('M8: a period whose invoice was refunded in full credits nothing', async () => {
    const { token, orderId, invoiceId } = await buy(planA);
    expect((await t.admin('invoice/refund', { id: invoiceId })).result).toBe(true);
    // Today a full refund leaves the order active until it expires (documented), but it no longer buys credit.
    expect((await t.admin('order/get', { id: orderId })).result.status).toBe('active');
    expect(await changePlan(token, orderId, planB)).toMatchObject({ effective: 'on_payment', credit: '0.00', amount: '20.00' });
  });

  it('M8: a refunded 20.00 period moved to a 5.00 weekly plan is charged the week, not given it', async () => {
    const { token, orderId, invoiceId } = await buy(planB);
    await t.admin('invoice/refund', { id: invoiceId });
    expect(await changePlan(token, orderId, weekly, '1W')).toMatchObject({ change: 'upgrade', effective: 'on_payment', credit: '0.00', amount: '5.00' });
  });

  it('M8: a partial refund credits only what was kept', async () => {
    const { token, orderId, invoiceId } = await buy(planA);
    expect((await t.admin('invoice/refund', { id: invoiceId, amount: '4.00' })).result).toBe(true);
    expectCreditOf((await changePlan(token, orderId, planB)).credit, 600);
  });

  it('M8: a refund after an upgrade was priced voids the upgrade; asking again credits what is left', async () => {
    const { token, orderId, invoiceId } = await buy(planA);
    const first = await changePlan(token, orderId, planB);
    expectCreditOf(first.credit, 1000);
    expect((await t.admin('invoice/refund', { id: invoiceId, amount: '10.00' })).result).toBe(true);
    expect((await t.admin('invoice/get', { id: first.invoice_id })).result.status).toBe('canceled');
    expectError(await t.admin('invoice/mark_as_paid', { id: first.invoice_id }), 409);
    expect((await t.admin('order/get', { id: orderId })).result.product_id).toBe(planA);
    expect(await changePlan(token, orderId, planB)).toMatchObject({ credit: '0.00', amount: '20.00' });
  });

  it('a paid upgrade carries its credit: the next change credits the charge plus the credit it used', async () => {
    const { token, orderId } = await buy(planA);
    const first = await changePlan(token, orderId, planB);
    await t.admin('invoice/mark_as_paid', { id: first.invoice_id });
    // The period on B cost the charge paid plus the credit carried from A: 20.00 in all.
    expect(cents(first.amount) + cents(first.credit)).toBe(2000);
    const second = await changePlan(token, orderId, planD);
    expectCreditOf(second.credit, 2000);
  });

  it('a paid renewal credits what the renewal invoice asked', async () => {
    const { token, orderId } = await buy(planA);
    const renewal = (await asClient(t, token, 'invoice/renewal_invoice', { order_id: orderId })).result as number;
    await t.admin('invoice/mark_as_paid', { id: renewal });
    // Renewed ahead: the renewed period is the current one from the credit's point of view; it is not started yet.
    expect(cents((await changePlan(token, orderId, planB)).credit)).toBe(1000);
  });

  it('answers the failure paths of change_plan in the envelope', async () => {
    const { token, orderId } = await buy(planA);
    const other = await t.createClient();
    expectError(await asClient(t, other.token, 'order/change_plan', { id: orderId, product_id: planB, period: '1M' }), 404);
    expectInvalid(await asClient(t, token, 'order/change_plan', { id: orderId, period: '1M' }), 'product_id');
    expectInvalid(await asClient(t, token, 'order/change_plan', { id: orderId, product_id: 'B', period: '1M' }), 'product_id');
    expectInvalid(await asClient(t, token, 'order/change_plan', { id: orderId, product_id: otherType, period: '1M' }), 'product_id');
    expectError(await asClient(t, token, 'order/change_plan', { id: orderId, product_id: 999_999, period: '1M' }), 404);
    expectError(await t.call('/api/client/order/change_plan', { id: orderId, product_id: planB, period: '1M' }), 201, 401);
    const pending = await buy(planA, { pay: false });
    expectError(await asClient(t, pending.token, 'order/change_plan', { id: pending.orderId, product_id: planB, period: '1M' }), 409);
  });
});

describe('paidForPeriod', () => {
  const line = { lineTotal: 1000, periodTotal: 1000, subtotal: 1000, discount: 0, invoiceTotal: 1000, refunded: 0, carried: 0 };

  it('is what the line paid for the period, after discount, net of refunds, plus the credit carried', () => {
    expect(paidForPeriod(line)).toBe(1000);
    expect(paidForPeriod({ ...line, discount: 1000, invoiceTotal: 0 })).toBe(0);
    expect(paidForPeriod({ ...line, discount: 500, invoiceTotal: 500 })).toBe(500);
    expect(paidForPeriod({ ...line, refunded: 1000 })).toBe(0);
    expect(paidForPeriod({ ...line, refunded: 400 })).toBe(600);
    expect(paidForPeriod({ ...line, lineTotal: 1500, subtotal: 1500, invoiceTotal: 1500 })).toBe(1000);
    expect(paidForPeriod({ ...line, carried: 700 })).toBe(1700);
    expect(paidForPeriod({ ...line, refunded: 1000, carried: 700 })).toBe(700);
    // Tax is not credited: the invoice asked 1200 with 20% tax, the period is worth 1000.
    expect(paidForPeriod({ ...line, invoiceTotal: 1200 })).toBe(1000);
    expect(paidForPeriod({ ...line, invoiceTotal: 1200, refunded: 600 })).toBe(500);
  });

  it('takes each line its share of a discount, rounding against the credit', () => {
    // Two lines of 1000 and 500 with a 100 discount: the first pays 1000 − ⌈66.67⌉ = 933.
    expect(paidForPeriod({ ...line, subtotal: 1500, discount: 100, invoiceTotal: 1400 })).toBe(933);
    expect(paidForPeriod({ ...line, lineTotal: 500, periodTotal: 500, subtotal: 1500, discount: 100, invoiceTotal: 1400 })).toBe(466);
    expect(paidForPeriod({ ...line, refunded: 333, invoiceTotal: 1000 })).toBe(667);
    expect(paidForPeriod({ ...line, lineTotal: 0, periodTotal: 0 })).toBe(0);
  });
});
