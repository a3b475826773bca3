// The whole life of a card customer (issue 9 "Done when"), over HTTP with the local Stripe stand-in: sign up, checkout,
// pay by card (Checkout Session → signed webhook), the key works, a renewal charged off-session, a renewal declined
// then paid by the link, a refund through Stripe, and the key refused after the period. Runs on SQLite, and on
// PostgreSQL + Redis when TEST_* are set.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser } from './helpers/app.ts';
import { inBrowser, makeProduct, signUp } from './selling-fixtures.ts';
import { deliver, payment, stripeStand, transactionsOf, type StripeStand } from './stripe-fixtures.ts';

const DAY = 86_400_000;

describe('the life of a card customer', () => {
  let stand: StripeStand;
  const failed: number[] = [];

  beforeAll(async () => {
    stand = await stripeStand();
    stand.t.services.events.on('invoice.payment_failed', ({ invoiceId }) => {
      failed.push(invoiceId);
    });
  });
  afterAll(async () => {
    await stand.close();
  });

  it('signs up, pays by card, renews off-session, recovers a declined renewal by link, is refunded, and loses the key after the period', async () => {
    const { t, stripe } = stand;
    const plan = await makeProduct(t, { title: 'Pro API', type: 'apikey' });
    const check = async (key: string) => (await t.call('/api/guest/serviceapikey/check', { key })).result as boolean;
    const order = async (id: number) => (await t.admin('order/get', { id })).result;
    const invoice = async (id: number) => (await t.admin('invoice/get', { id })).result;
    const runOutbox = (at = Date.now()) => t.services.outbox.runDue(new Date(at));

    // Sign-up and checkout in a browser session.
    const browser = new Browser();
    const client = await signUp(t, browser);
    expect((await inBrowser(t, browser, 'cart/add_item', { id: plan, period: '1M' })).result).toBe(true);
    const checkout = await inBrowser(t, browser, 'cart/checkout');
    const { order_id: orderId, invoice_id: firstInvoice, invoice_hash: firstHash } = checkout.result;
    expect((await order(orderId)).status).toBe('pending_setup');

    // Pay by card: the Checkout Session, the customer paying on Stripe's page, the signed webhooks.
    const started = await payment(t, { hash: firstHash, gateway_id: 'stripe' });
    const sessionId = (started.result.redirect_url as string).split('/pay/')[1]!;
    expect(stripe.sessions.get(sessionId)).toMatchObject({ amount_total: 1000, currency: 'usd', success_url: `https://billing.example.com/invoices/${firstInvoice}?payment=success` });
    const events = stripe.completeSession(sessionId);
    // Stripe delivers twice, in reverse order: nothing changes the outcome.
    for (const event of [...events.toReversed(), ...events]) expect((await deliver(stand, event)).status).toBe(200);
    expect((await invoice(firstInvoice)).status).toBe('paid');
    const active = await order(orderId);
    expect(active.status).toBe('active');

    // The key works; the card is saved.
    const service = (await inBrowser(t, browser, 'order/service', { id: orderId })).result;
    const key = service.api_key as string;
    expect(await check(key)).toBe(true);
    expect((await inBrowser(t, browser, 'payment_method/get_list')).result).toMatchObject([{ brand: 'visa', last4: '4242', default: true }]);

    // First renewal: the scheduler issues the invoice a few days before expiry; the card is charged off-session.
    const firstExpiry = Date.parse(active.expires_at);
    expect((await t.services.cron.run(new Date(firstExpiry - 3 * DAY))).renewal_invoices).toBe(1);
    await runOutbox();
    const afterFirst = await order(orderId);
    expect(Date.parse(afterFirst.expires_at)).toBeGreaterThan(firstExpiry + 27 * DAY);
    expect(afterFirst.unpaid_invoice_id).toBeNull();
    expect(await check(key)).toBe(true);
    expect(failed).toEqual([]);

    // Second renewal: the card is declined; the client is told (payment_failed) and pays by the link.
    stripe.chargeQueue.push('decline');
    const secondExpiry = Date.parse(afterFirst.expires_at);
    expect((await t.services.cron.run(new Date(secondExpiry - 3 * DAY))).renewal_invoices).toBe(1);
    await runOutbox();
    const declined = await order(orderId);
    expect(declined.expires_at).toBe(afterFirst.expires_at);
    const renewalId = declined.unpaid_invoice_id as number;
    expect(failed).toEqual([renewalId]);
    const renewal = await invoice(renewalId);
    expect(renewal.status).toBe('unpaid');
    const link = await payment(t, { hash: renewal.hash, gateway_id: 'stripe' });
    for (const event of stripe.completeSession((link.result.redirect_url as string).split('/pay/')[1]!)) expect((await deliver(stand, event)).status).toBe(200);
    expect((await invoice(renewalId)).status).toBe('paid');
    const recovered = await order(orderId);
    expect(Date.parse(recovered.expires_at)).toBeGreaterThan(secondExpiry + 27 * DAY);
    // The retry the outbox had scheduled finds the invoice paid and charges nothing.
    const intentsBefore = stripe.requestsTo('POST', '/v1/payment_intents').length;
    await runOutbox(Date.now() + 2 * DAY);
    expect(stripe.requestsTo('POST', '/v1/payment_intents')).toHaveLength(intentsBefore);

    // Staff refund the last renewal through Stripe; refunding suspends nothing by itself.
    expect((await t.admin('invoice/refund', { id: renewalId })).result).toBe(true);
    expect((await invoice(renewalId)).status).toBe('refunded');
    expect((await deliver(stand, stripe.events.filter((event) => event.type === 'charge.refunded').at(-1)!)).status).toBe(200);
    expect((await transactionsOf(t, renewalId)).map((row) => [row.type, row.status])).toEqual([
      ['payment', 'failed'],
      ['payment', 'processed'],
      ['refund', 'refunded'],
    ]);
    expect(await check(key)).toBe(true);

    // The client stops auto-pay; after the period the order is suspended and the key refused.
    expect((await inBrowser(t, browser, 'profile/update', { auto_pay: false })).result).toBe(true);
    const end = Date.parse(recovered.expires_at);
    await t.services.cron.run(new Date(end + 60_000));
    await runOutbox(end + 60_000);
    expect(await order(orderId)).toMatchObject({ status: 'suspended', reason: 'Non-payment' });
    expect(await check(key)).toBe(false);

    // One payment per paid invoice in the whole story, one key.
    const payments = await t.services.db.selectFrom('transactions').selectAll().where('client_id', '=', client.id).where('status', '=', 'processed').execute();
    expect(payments).toHaveLength(3);
    expect(await t.services.db.selectFrom('api_keys').select('id').where('order_id', '=', orderId).execute()).toHaveLength(1);
  });
});
