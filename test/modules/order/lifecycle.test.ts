// The whole life of a recurrent custom product over HTTP: guest cart, sign-up, checkout, payment, renewal invoice,
// suspension at expiry, and the renewal payment that unsuspends and extends from the old expiry.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addPeriod } from '../../../src/lib/periods.ts';
import { isoSeconds } from '../../../src/lib/time.ts';
import { Browser, createTestApp, type TestApp } from '../../helpers/app.ts';
import { inBrowser, makeProduct, signUp } from '../../helpers/selling-fixtures.ts';

const DAY = 86_400_000;

describe('selling lifecycle', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('sells, renews, suspends and reactivates a monthly plan', async () => {
    const productId = await makeProduct(t, { title: 'Pro plan' });

    // A guest fills a cart: the first cart call starts a guest session.
    const browser = new Browser();
    const added = await t.call('/api/guest/cart/add_item', { id: productId, period: '1M' }, { browser });
    expect(added.result).toBe(true);
    expect(browser.cookies.tollgate_session).toBeDefined();

    // Signing up moves the cart to the new client.
    const client = await signUp(t, browser);
    const cart = await inBrowser(t, browser, 'cart/get');
    expect(cart.result.items).toHaveLength(1);
    expect(cart.result.items[0]).toMatchObject({ product_id: productId, period: '1M', quantity: 1, price: '10.00', total: '10.00' });
    expect(cart.result.total).toBe('10.00');

    const checkout = await inBrowser(t, browser, 'cart/checkout');
    expect(checkout.body.error).toBeNull();
    const { order_id: orderId, invoice_id: invoiceId, invoice_hash: hash } = checkout.result;
    expect(checkout.result.orders).toEqual([orderId]);
    expect(hash).toMatch(/^[A-Za-z0-9]{32}$/);
    expect((await inBrowser(t, browser, 'cart/get')).result.items).toEqual([]);

    let order = (await inBrowser(t, browser, 'order/get', { id: orderId })).result;
    expect(order).toMatchObject({ status: 'pending_setup', client_id: client.id, unpaid_invoice_id: invoiceId, expires_at: null });
    const guestView = await t.call('/api/guest/invoice/get', { hash });
    expect(guestView.result).toMatchObject({ id: invoiceId, status: 'unpaid', total: '10.00' });
    expect(guestView.result.items[0]).toMatchObject({ order_id: orderId, task: 'activate', quantity: 1, price: '10.00', total: '10.00' });

    // Staff confirm the payment: the order becomes active for one month.
    const paid = await t.admin('invoice/mark_as_paid', { id: invoiceId, transactionId: 'BANK-1' });
    expect(paid.result).toBe(true);
    order = (await t.admin('order/get', { id: orderId })).result;
    expect(order.status).toBe('active');
    expect(order.unpaid_invoice_id).toBeNull();
    const firstExpiry: string = order.expires_at;
    expect(firstExpiry).toBe(isoSeconds(addPeriod(new Date(order.activated_at), '1M')));

    // Seven days before expiry the scheduler issues one renewal invoice, and only one.
    const weekBefore = new Date(Date.parse(firstExpiry) - 7 * DAY);
    expect((await t.services.cron.run(new Date(weekBefore.getTime() - 60_000))).renewal_invoices).toBe(0);
    expect((await t.services.cron.run(weekBefore)).renewal_invoices).toBe(1);
    expect((await t.services.cron.run(weekBefore)).renewal_invoices).toBe(0);
    expect((await t.services.cron.run(new Date(weekBefore.getTime() + DAY))).renewal_invoices).toBe(0);
    const unpaid = await inBrowser(t, browser, 'invoice/get_list', { status: 'unpaid' });
    expect(unpaid.result.total).toBe(1);
    const renewal = unpaid.result.list[0];
    expect(renewal.items[0]).toMatchObject({ order_id: orderId, task: 'renew', total: '10.00' });
    expect(renewal.due_at).toBe(firstExpiry);
    expect((await inBrowser(t, browser, 'invoice/renewal_invoice', { order_id: orderId })).result).toBe(renewal.id);

    // Past expiry, unpaid: suspended for non-payment.
    const afterExpiry = new Date(Date.parse(firstExpiry) + 1000);
    const report = await t.services.cron.run(afterExpiry);
    expect(report.suspended).toBe(1);
    expect((await t.services.cron.run(afterExpiry)).suspended).toBe(0);
    order = (await inBrowser(t, browser, 'order/get', { id: orderId })).result;
    expect(order).toMatchObject({ status: 'suspended', reason: 'Non-payment', unpaid_invoice_id: renewal.id });

    // Paying the renewal unsuspends and extends by one period from the old expiry.
    expect((await t.admin('invoice/mark_as_paid', { id: renewal.id })).result).toBe(true);
    order = (await t.admin('order/get', { id: orderId })).result;
    expect(order.status).toBe('active');
    expect(order.reason).toBeNull();
    expect(order.suspended_at).toBeNull();
    expect(order.expires_at).toBe(isoSeconds(addPeriod(new Date(firstExpiry), '1M')));

    const history = (await t.admin('order/history', { id: orderId })).result as Array<{ from_status: string | null; to_status: string }>;
    expect(history.map((row) => `${row.from_status}>${row.to_status}`)).toEqual([
      'null>pending_setup',
      'pending_setup>active',
      'active>suspended',
      'suspended>suspended',
      'suspended>active',
    ]);
  });
});
