// Self-service on an order (src/modules/order/self-service.ts, CONTRACT §8) through its service, one app for the
// whole file: every refusal with its message and code, which plans upgradables lists, the exact change / effective /
// credit / amount of a plan change (monthly, weekly and daily periods, hand-computed), the upgrade invoice's line,
// a downgrade waiting for the next renewal and taken back, cancel and uncancel. Each order's period is moved to a
// fixed calendar window (April 2031, 30 days) and every call passes its `now`, so the prorated amounts are exact.
// The HTTP side (roles, envelopes, concurrency) is test/modules/order/self-service.test.ts; this file is kept lean because
// `MUTATE_TARGET=selfservice` re-runs it for every mutant.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inTransaction } from '../../../src/platform/transaction.ts';
import type { SelfService } from '../../../src/modules/order/self-service.ts';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { asClient, makeProduct } from '../../helpers/selling-fixtures.ts';

const START = '2031-04-01T00:00:00Z';
/** The end of a 1M period started at START: April has 30 days. */
const END_1M = '2031-05-01T00:00:00Z';
/** Half of April: 15 of 30 days left. */
const MID = new Date('2031-04-16T00:00:00Z');
const recurrent = (prices: Record<string, string>) => ({
  type: 'recurrent',
  recurrent: Object.fromEntries(Object.entries(prices).map(([period, price]) => [period, { price, setup: '0', enabled: true }])),
});

describe('self-service through its service', () => {
  let t: TestApp;
  let ss: SelfService;
  let basic: number;
  let pro: number;
  let lite: number;
  let once: number;
  let allOff: number;
  let free: number;
  let keys: number;
  let disabled: number;
  let huge: number;

  /** An `ApiError` with exactly this code (= HTTP status) and message. */
  const refused = async (promise: Promise<unknown>, code: number, message: string): Promise<void> => {
    await expect(promise).rejects.toMatchObject({ code, status: code, message });
  };
  const row = (id: number) => t.services.db.selectFrom('orders').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const lastNote = async (id: number) =>
    (await t.services.db.selectFrom('order_history').select('note').where('order_id', '=', id).orderBy('id', 'desc').executeTakeFirstOrThrow()).note;
  const invoiceStatus = async (id: number) => (await t.services.db.selectFrom('invoices').select('status').where('id', '=', id).executeTakeFirstOrThrow()).status;

  /**
   * A client with an active order of `product`, its checkout invoice paid, then moved to the window START + period
   * (activation and expiry together, so the paid activation still counts for the current period).
   */
  async function activeOrder(product: number, period: string | null, { quantity = 1, expiresAt = END_1M } = {}) {
    const client = await t.createClient();
    await asClient(t, client.token, 'cart/add_item', { id: product, ...(period !== null && { period }), quantity });
    const checkout = (await asClient(t, client.token, 'cart/checkout')).result;
    expect((await t.admin('invoice/mark_as_paid', { id: checkout.invoice_id })).result).toBe(true);
    const orderId = checkout.order_id as number;
    if (period !== null) await t.services.db.updateTable('orders').set({ activated_at: START, expires_at: expiresAt }).where('id', '=', orderId).execute();
    expect(await row(orderId)).toMatchObject({ status: 'active', quantity });
    return { clientId: client.id, token: client.token, orderId };
  }

  /** An unpaid renewal invoice of the order, issued behind the renewal guard's back. */
  async function unpaidRenewal(clientId: number, orderId: number): Promise<number> {
    const invoice = await inTransaction(t.services.db, (trx) =>
      t.services.invoices.create(trx, clientId, [{ orderId, task: 'renew', title: 'Basic renewal', period: '1M', quantity: 1, price: 1000, total: 1000, productId: basic }]),
    );
    return invoice.id;
  }

  beforeAll(async () => {
    t = await createTestApp();
    ss = t.services.selfService;
    basic = await makeProduct(t, { title: 'Basic', pricing: recurrent({ '1M': '10.00', '1W': '3.00', '1D': '0.50' }) });
    pro = await makeProduct(t, { title: 'Pro', pricing: recurrent({ '1M': '30.00', '1W': '8.00', '1D': '1.00' }) });
    lite = await makeProduct(t, { title: 'Lite', pricing: recurrent({ '1M': '4.00' }) });
    // One-time pricing that still holds a recurring price: not a plan to move to.
    once = await makeProduct(t, { title: 'Once', pricing: { type: 'once', once: { price: '50.00', setup: '0' }, recurrent: { '1M': { price: '9.00', setup: '0', enabled: true } } } });
    // Recurring pricing with no period offered.
    allOff = await makeProduct(t, { title: 'All off', pricing: { type: 'recurrent', recurrent: { '1M': { price: '5.00', setup: '0', enabled: false } } } });
    free = await makeProduct(t, { title: 'Free', pricing: { type: 'free' } });
    keys = await makeProduct(t, { title: 'Keys', type: 'apikey', pricing: recurrent({ '1M': '50.00' }) });
    disabled = await makeProduct(t, { title: 'Old', status: 'disabled', pricing: recurrent({ '1M': '60.00' }) });
    // 100,000,000.00 a month: times a large quantity, past the safe integers.
    huge = await makeProduct(t, { title: 'Huge', pricing: recurrent({ '1M': '100000000.00' }) });
    const hidden = await makeProduct(t, { title: 'Hidden', pricing: recurrent({ '1M': '70.00' }) });
    expect((await t.admin('product/update', { id: hidden, hidden: true })).body.error).toBeNull();
  });
  afterAll(async () => {
    await t.close();
  });

  describe('upgradables', () => {
    it('lists enabled, listed plans of the same type with a recurring price offered, other than the order’s own', async () => {
      const { clientId, orderId } = await activeOrder(basic, '1M');
      const list = await ss.upgradables(orderId, clientId);
      expect(list.map((product) => product.id)).toEqual([pro, lite, huge]);
      expect(list[0]).toMatchObject({ title: 'Pro', type: 'custom', pricing: { type: 'recurrent', recurrent: { '1M': { price: '30.00' } } } });
    });

    it('lists every enabled, listed product of the type for an order that does not renew', async () => {
      const { clientId, orderId } = await activeOrder(once, null);
      expect((await ss.upgradables(orderId, clientId)).map((product) => product.id)).toEqual([basic, pro, lite, allOff, free, huge]);
    });

    it('does not find another client’s order', async () => {
      const { orderId } = await activeOrder(basic, '1M');
      const other = await t.createClient();
      await refused(ss.upgradables(orderId, other.id), 404, 'Order not found');
    });
  });

  describe('plan changes', () => {
    it('upgrades mid-period: the unpaid half credited, the rest invoiced for the new plan times the quantity', async () => {
      const { clientId, orderId } = await activeOrder(basic, '1M', { quantity: 2 });
      // Paid 2 × 10.00 = 20.00 for 30 days, 15 left: 10.00 credited; Pro is 2 × 30.00 = 60.00, so 50.00 is owed.
      const result = await ss.changePlan(orderId, clientId, { product_id: pro, period: '1M' }, MID);
      expect(result).toEqual({ change: 'upgrade', effective: 'on_payment', invoice_id: expect.any(Number), credit: '10.00', amount: '50.00' });
      const invoice = await t.services.db.selectFrom('invoices').selectAll().where('id', '=', result.invoice_id).executeTakeFirstOrThrow();
      expect(invoice).toMatchObject({ client_id: clientId, status: 'unpaid', subtotal: 5000, created_at: '2031-04-16T00:00:00Z' });
      const lines = await t.services.db.selectFrom('invoice_items').selectAll().where('invoice_id', '=', invoice.id).execute();
      expect(lines).toMatchObject([
        {
          order_id: orderId,
          task: 'change',
          title: 'Pro (Every month) — upgrade from Basic, 10.00 credited for the unused period',
          period: '1M',
          quantity: 2,
          price: 3000,
          total: 5000,
          product_id: pro,
          credit: 1000,
          priced_until: END_1M,
        },
      ]);
      // Nothing changes before payment, and a second change waits for the invoice.
      expect(await row(orderId)).toMatchObject({ product_id: basic, period: '1M', price: 1000, next_product_id: null });
      await refused(ss.changePlan(orderId, clientId, { product_id: pro, period: '1W' }, MID), 409, `Pro forma ${invoice.id} of this order is unpaid; pay or wait for it before changing plan`);
    });

    it('upgrades a weekly order to a weekly plan', async () => {
      const { clientId, orderId } = await activeOrder(basic, '1W', { expiresAt: '2031-04-08T00:00:00Z' });
      // 3.00 for 7 days, 3.5 left: 1.50 credited against 8.00.
      const result = await ss.changePlan(orderId, clientId, { product_id: pro, period: '1W' }, new Date('2031-04-04T12:00:00Z'));
      expect(result).toEqual({ change: 'upgrade', effective: 'on_payment', invoice_id: expect.any(Number), credit: '1.50', amount: '6.50' });
      const line = await t.services.db.selectFrom('invoice_items').selectAll().where('invoice_id', '=', result.invoice_id).executeTakeFirstOrThrow();
      expect(line).toMatchObject({ title: 'Pro (Every week) — upgrade from Basic, 1.50 credited for the unused period', period: '1W', price: 800, total: 650, credit: 150, priced_until: '2031-04-08T00:00:00Z' });
    });

    it('applies at once, without an invoice, an upgrade the credit pays for in full (a daily plan)', async () => {
      const { clientId, orderId } = await activeOrder(basic, '1M');
      const invoicesBefore = await t.services.db.selectFrom('invoice_items').select('invoice_id').where('order_id', '=', orderId).execute();
      // 5.00 credited; one day of Pro costs 1.00 (30.00 a month beats Basic's 10.00): nothing owed.
      expect(await ss.changePlan(orderId, clientId, { product_id: pro, period: '1D' }, MID)).toEqual({
        change: 'upgrade',
        effective: 'now',
        invoice_id: null,
        credit: '5.00',
        amount: '0.00',
      });
      expect(await row(orderId)).toMatchObject({ product_id: pro, title: 'Pro', period: '1D', price: 100, expires_at: '2031-04-17T00:00:00Z' });
      expect(await t.services.db.selectFrom('invoice_items').select('invoice_id').where('order_id', '=', orderId).execute()).toEqual(invoicesBefore);
    });

    it('moves to another period of the same plan; a cheaper rate waits for the renewal', async () => {
      const { clientId, orderId } = await activeOrder(basic, '1W', { expiresAt: '2031-04-08T00:00:00Z' });
      // 10.00 a month is less than 3.00 a week.
      const now = new Date('2031-04-04T12:00:00Z');
      expect(await ss.changePlan(orderId, clientId, { product_id: basic, period: '1M' }, now)).toEqual({
        change: 'downgrade',
        effective: 'at_renewal',
        invoice_id: null,
        credit: '0.00',
        amount: '0.00',
      });
      expect(await row(orderId)).toMatchObject({ product_id: basic, period: '1W', next_product_id: basic, next_period: '1M', next_price: 1000 });
      // The daily price of the same plan (0.50 × 7 = 3.50 a week) is an upgrade: 1.50 credited against 0.50.
      expect(await ss.changePlan(orderId, clientId, { product_id: basic, period: '1D' }, now)).toMatchObject({ change: 'upgrade', effective: 'now', credit: '1.50' });
    });

    it('downgrades at the next renewal, and choosing the current plan again takes it back', async () => {
      const { clientId, orderId } = await activeOrder(pro, '1M');
      expect(await ss.changePlan(orderId, clientId, { product_id: lite, period: '1M' }, MID)).toEqual({
        change: 'downgrade',
        effective: 'at_renewal',
        invoice_id: null,
        credit: '0.00',
        amount: '0.00',
      });
      expect(await row(orderId)).toMatchObject({ product_id: pro, price: 3000, next_product_id: lite, next_period: '1M', next_price: 400 });
      expect(await lastNote(orderId)).toBe('plan change to Lite (1M) at renewal');

      expect(await ss.changePlan(orderId, clientId, { product_id: pro, period: '1M' }, MID)).toEqual({
        change: 'downgrade',
        effective: 'now',
        invoice_id: null,
        credit: '0.00',
        amount: '0.00',
      });
      expect(await row(orderId)).toMatchObject({ product_id: pro, next_product_id: null, next_period: null, next_price: null });
      expect(await lastNote(orderId)).toBe('plan change taken back');
      await refused(ss.changePlan(orderId, clientId, { product_id: pro, period: '1M' }, MID), 422, `Parameter "product_id" is already the order's plan and period`);
    });

    it('refuses plans the order cannot move to, with the reason', async () => {
      const { clientId, orderId } = await activeOrder(basic, '1M');
      const change = (productId: number, period = '1M') => ss.changePlan(orderId, clientId, { product_id: productId, period }, MID);
      await refused(change(999_999), 404, 'Product not found');
      await refused(change(disabled), 404, 'Product not found');
      await refused(change(keys), 422, `Parameter "product_id" is not a plan of the order's type (custom)`);
      await refused(change(once), 422, 'Parameter "product_id" is not a recurring plan');
      await refused(change(free), 422, 'Parameter "product_id" is not a recurring plan');
      await refused(change(pro, '6M'), 422, 'Parameter "period" is not offered by this product');
      const other = await t.createClient();
      await refused(ss.changePlan(orderId, other.id, { product_id: pro, period: '1M' }, MID), 404, 'Order not found');
      expect(await row(orderId)).toMatchObject({ product_id: basic, next_product_id: null });
    });

    it('is not held up by an unpaid invoice of another order of the same client', async () => {
      const { clientId, token, orderId } = await activeOrder(basic, '1M');
      await asClient(t, token, 'cart/add_item', { id: basic, period: '1M' });
      const pending = (await asClient(t, token, 'cart/checkout')).result;
      expect(await invoiceStatus(pending.invoice_id)).toBe('unpaid');
      expect(await ss.changePlan(orderId, clientId, { product_id: lite, period: '1M' }, MID)).toMatchObject({ change: 'downgrade' });
    });

    it('refuses a total past the safe integers', async () => {
      const { clientId, orderId } = await activeOrder(basic, '1M');
      await t.services.db.updateTable('orders').set({ quantity: 1_000_000 }).where('id', '=', orderId).execute();
      // 10^10 minor units × 10^6 = 10^16 > 2^53 (the quantity column is a 32-bit integer on PostgreSQL).
      await refused(ss.changePlan(orderId, clientId, { product_id: huge, period: '1M' }, MID), 422, 'Parameter "product_id" makes the total too large');
    });
  });

  describe('the order’s state', () => {
    it('refuses an order that is not active, with the verb of the call', async () => {
      const client = await t.createClient();
      await asClient(t, client.token, 'cart/add_item', { id: basic, period: '1M' });
      const pending = (await asClient(t, client.token, 'cart/checkout')).result.order_id as number;
      await refused(ss.cancel(pending, client.id, MID), 409, 'The order is pending_setup; only an active order can be canceled at period end');
      await refused(ss.changePlan(pending, client.id, { product_id: pro, period: '1M' }, MID), 409, 'The order is pending_setup; only an active order can be moved to another plan');

      const { clientId, orderId } = await activeOrder(basic, '1M');
      await t.services.db.updateTable('orders').set({ status: 'suspended', cancel_at_period_end: 1 }).where('id', '=', orderId).execute();
      await refused(ss.uncancel(orderId, clientId, MID), 409, 'The order is suspended; only an active order can be uncanceled');
    });

    it('refuses an order that does not renew: no period, or no expiry', async () => {
      const onceOrder = await activeOrder(once, null);
      await refused(ss.cancel(onceOrder.orderId, onceOrder.clientId, MID), 409, 'The order does not renew; it cannot be canceled at period end');
      await refused(ss.changePlan(onceOrder.orderId, onceOrder.clientId, { product_id: pro, period: '1M' }, MID), 409, 'The order does not renew; it cannot be moved to another plan');
      // An expiry alone (set by staff) does not make a one-time order renew.
      await t.services.db.updateTable('orders').set({ expires_at: END_1M }).where('id', '=', onceOrder.orderId).execute();
      await refused(ss.cancel(onceOrder.orderId, onceOrder.clientId, MID), 409, 'The order does not renew; it cannot be canceled at period end');
      const { clientId, orderId } = await activeOrder(basic, '1M');
      await t.services.db.updateTable('orders').set({ expires_at: null }).where('id', '=', orderId).execute();
      await refused(ss.cancel(orderId, clientId, MID), 409, 'The order does not renew; it cannot be canceled at period end');
    });

    it('refuses an order whose period has ended, from its last second on', async () => {
      const { clientId, orderId } = await activeOrder(basic, '1M');
      const end = new Date(END_1M);
      const lastSecond = new Date(end.getTime() - 1000);
      await refused(ss.cancel(orderId, clientId, end), 409, 'The order has expired; renew it before it can be canceled at period end');
      await refused(ss.changePlan(orderId, clientId, { product_id: pro, period: '1M' }, end), 409, 'The order has expired; renew it before it can be moved to another plan');
      await ss.cancel(orderId, clientId, lastSecond);
      await refused(ss.uncancel(orderId, clientId, end), 409, 'The order has expired; renew it before it can be uncanceled');
      await ss.uncancel(orderId, clientId, lastSecond);
      expect((await row(orderId)).cancel_at_period_end).toBe(0);
    });
  });

  describe('cancel at period end', () => {
    it('cancels once: drops a waiting downgrade and the unpaid renewal; no plan change until it is taken back', async () => {
      const { clientId, orderId } = await activeOrder(pro, '1M');
      await ss.changePlan(orderId, clientId, { product_id: lite, period: '1M' }, MID);
      const renewal = await unpaidRenewal(clientId, orderId);
      await ss.cancel(orderId, clientId, MID);
      expect(await row(orderId)).toMatchObject({ status: 'active', cancel_at_period_end: 1, next_product_id: null, next_period: null, next_price: null, updated_at: '2031-04-16T00:00:00Z' });
      expect(await lastNote(orderId)).toBe('canceled by the client at period end');
      expect(await invoiceStatus(renewal)).toBe('canceled');
      await refused(ss.cancel(orderId, clientId, MID), 409, 'The order is already canceled at the end of its period');
      await refused(ss.changePlan(orderId, clientId, { product_id: pro, period: '1W' }, MID), 409, 'The order is canceled at period end; uncancel it first');
      const other = await t.createClient();
      await refused(ss.cancel(orderId, other.id, MID), 404, 'Order not found');
      await refused(ss.uncancel(orderId, other.id, MID), 404, 'Order not found');
    });

    it('takes the cancellation back and leaves the order’s invoices alone', async () => {
      const { clientId, orderId } = await activeOrder(basic, '1M');
      await refused(ss.uncancel(orderId, clientId, new Date(END_1M)), 409, 'The order is not canceled at period end');
      await ss.cancel(orderId, clientId, MID);
      const renewal = await unpaidRenewal(clientId, orderId);
      await ss.uncancel(orderId, clientId, MID);
      expect(await row(orderId)).toMatchObject({ status: 'active', cancel_at_period_end: 0 });
      expect(await lastNote(orderId)).toBe('cancellation taken back by the client');
      expect(await invoiceStatus(renewal)).toBe('unpaid');
      await refused(ss.uncancel(orderId, clientId, MID), 409, 'The order is not canceled at period end');
    });
  });
});
