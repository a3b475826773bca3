// The whole life of a card customer (issue 9 "Done when"), over HTTP with the local Stripe stand-in: sign up, a
// coupon, checkout, pay by card (Checkout Session → signed webhook), the key works, a renewal charged off-session, a
// renewal declined then paid by the link, the plan upgraded with proration (paid by card), a refund through Stripe,
// cancel at period end, and the key refused after the period. Runs on SQLite, and on PostgreSQL + Redis when TEST_*
// are set.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser } from '../../helpers/app.ts';
import { inBrowser, makeProduct, signUp } from '../../helpers/selling-fixtures.ts';
import { deliver, payment, stripeStand, transactionsOf, type StripeStand } from '../../helpers/stripe-fixtures.ts';

const DAY = 86_400_000;

const apiPlan = (price: string, custom: Record<string, unknown>) => ({
  type: 'apikey',
  setup: 'after_payment' as const,
  pricing: { type: 'recurrent', recurrent: { '1M': { price, setup: '0', enabled: true } } },
  config: { custom },
});

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

  it('signs up with a coupon, pays by card, renews off-session, recovers a declined renewal by link, upgrades, is refunded, cancels and loses the key after the period', async () => {
    const { t, stripe } = stand;
    const basic = await makeProduct(t, { title: 'Basic API', ...apiPlan('10.00', { tier: 'basic' }) });
    const pro = await makeProduct(t, { title: 'Pro API', ...apiPlan('30.00', { tier: 'pro' }) });
    expect((await t.admin('product/promo_create', { code: 'WELCOME20', type: 'percentage', value: '20', products: [basic] })).body.error).toBeNull();
    const info = async (key: string) => (await t.call('/api/guest/serviceapikey/get_info', { key })).result;
    const order = async (id: number) => (await t.admin('order/get', { id })).result;
    const invoice = async (id: number) => (await t.admin('invoice/get', { id })).result;
    const runOutbox = (at = Date.now()) => t.services.outbox.runDue(new Date(at));
    /** The customer pays an invoice on Stripe's page; Stripe delivers both events twice, in reverse order too. */
    const payByLink = async (hash: string) => {
      const started = await payment(t, { hash, gateway_id: 'stripe' });
      expect(started.body.error).toBeNull();
      const events = stripe.completeSession((started.result.redirect_url as string).split('/pay/')[1]!);
      for (const event of [...events.toReversed(), ...events]) expect((await deliver(stand, event)).status).toBe(200);
    };

    // Sign-up, the coupon and checkout in a browser session.
    const browser = new Browser();
    const client = await signUp(t, browser);
    expect((await inBrowser(t, browser, 'cart/add_item', { id: basic, period: '1M' })).result).toBe(true);
    expect((await inBrowser(t, browser, 'cart/apply_promo', { promocode: 'WELCOME20' })).result).toBe(true);
    const checkout = await inBrowser(t, browser, 'cart/checkout');
    expect(checkout.body.error).toBeNull();
    const { order_id: orderId, invoice_id: firstInvoice, invoice_hash: firstHash } = checkout.result;
    expect(await invoice(firstInvoice)).toMatchObject({ status: 'unpaid', discount: '2.00', total: '8.00', number: null });

    // Pay by card: the Checkout Session is for the discounted total.
    await payByLink(firstHash);
    expect(stripe.sessionFor(firstInvoice)).toMatchObject({ amount_total: 800, currency: 'usd' });
    expect(await invoice(firstInvoice)).toMatchObject({ status: 'paid', number: expect.any(String) });
    const active = await order(orderId);
    expect(active.status).toBe('active');

    // The key works; the card is saved.
    const key = (await inBrowser(t, browser, 'order/service', { id: orderId })).result.api_key as string;
    expect(await info(key)).toMatchObject({ valid: 1, config: { tier: 'basic' } });
    expect((await inBrowser(t, browser, 'payment_method/get_list')).result).toMatchObject([{ brand: 'visa', last4: '4242', default: true }]);

    // First renewal (full price: the coupon was not recurring), charged off-session.
    const firstExpiry = Date.parse(active.expires_at);
    expect((await t.services.cron.run(new Date(firstExpiry - 3 * DAY))).renewal_invoices).toBe(1);
    await runOutbox();
    const afterFirst = await order(orderId);
    expect(Date.parse(afterFirst.expires_at)).toBeGreaterThan(firstExpiry + 27 * DAY);
    expect(afterFirst.unpaid_invoice_id).toBeNull();
    expect(stripe.requestsTo('POST', '/v1/payment_intents').at(-1)!.body).toMatchObject({ amount: '1000', off_session: 'true', confirm: 'true' });
    expect(failed).toEqual([]);

    // Second renewal: declined; the client is told (payment_failed) and pays by the link.
    stripe.chargeQueue.push('decline');
    const secondExpiry = Date.parse(afterFirst.expires_at);
    expect((await t.services.cron.run(new Date(secondExpiry - 3 * DAY))).renewal_invoices).toBe(1);
    await runOutbox();
    const declined = await order(orderId);
    expect(declined.expires_at).toBe(afterFirst.expires_at);
    const renewalId = declined.unpaid_invoice_id as number;
    expect(failed).toEqual([renewalId]);
    await payByLink((await invoice(renewalId)).hash);
    expect((await invoice(renewalId)).status).toBe('paid');
    const recovered = await order(orderId);
    expect(Date.parse(recovered.expires_at)).toBeGreaterThan(secondExpiry + 27 * DAY);
    // The retry the outbox had scheduled finds the invoice paid and charges nothing.
    const intentsBefore = stripe.requestsTo('POST', '/v1/payment_intents').length;
    await runOutbox(Date.now() + 2 * DAY);
    expect(stripe.requestsTo('POST', '/v1/payment_intents')).toHaveLength(intentsBefore);

    // Upgrade to Pro: a prorated invoice (the unused part of Basic credited), paid by card; the key stays.
    const change = await inBrowser(t, browser, 'order/change_plan', { id: orderId, product_id: pro, period: '1M' });
    expect(change.result).toMatchObject({ change: 'upgrade', invoice_id: expect.any(Number) });
    const upgradeId = change.result.invoice_id as number;
    const upgrade = await invoice(upgradeId);
    expect(upgrade.status).toBe('unpaid');
    expect(Number(upgrade.total)).toBeGreaterThan(0);
    expect(Number(upgrade.total)).toBeLessThan(30);
    await payByLink(upgrade.hash);
    expect((await invoice(upgradeId)).status).toBe('paid');
    expect(await order(orderId)).toMatchObject({ product_id: pro, price: '30.00', status: 'active' });
    expect((await inBrowser(t, browser, 'order/service', { id: orderId })).result.api_key).toBe(key);
    expect(await info(key)).toMatchObject({ valid: 1, config: { tier: 'pro' } });

    // Staff refund the recovered renewal through Stripe; refunding suspends nothing by itself.
    expect((await t.admin('invoice/refund', { id: renewalId })).result).toBe(true);
    expect((await invoice(renewalId)).status).toBe('refunded');
    expect((await deliver(stand, stripe.events.filter((event) => event.type === 'charge.refunded').at(-1)!)).status).toBe(200);
    expect((await transactionsOf(t, renewalId)).map((row) => [row.type, row.status])).toEqual([
      ['payment', 'failed'],
      ['payment', 'processed'],
      ['refund', 'refunded'],
    ]);
    expect(await info(key)).toMatchObject({ valid: 1 });

    // Cancel at period end: no renewal invoice, no charge; the order ends with its period and the key is refused.
    expect((await inBrowser(t, browser, 'order/cancel', { id: orderId })).result).toBe(true);
    const end = Date.parse((await order(orderId)).expires_at);
    const intentsBeforeEnd = stripe.requestsTo('POST', '/v1/payment_intents').length;
    await t.services.cron.run(new Date(end - 3 * DAY));
    await runOutbox();
    expect((await order(orderId)).unpaid_invoice_id).toBeNull();
    expect(await info(key)).toMatchObject({ valid: 1 });
    await t.services.cron.run(new Date(end + 60_000));
    await runOutbox(end + 60_000);
    expect(await order(orderId)).toMatchObject({ status: 'canceled' });
    expect(stripe.requestsTo('POST', '/v1/payment_intents')).toHaveLength(intentsBeforeEnd);
    expect((await t.call('/api/guest/serviceapikey/check', { key })).result).toBe(false);

    // One processed payment per paid invoice in the whole story (first, first renewal, recovered renewal, upgrade),
    // one key, and numbered invoices.
    const payments = await t.services.db.selectFrom('transactions').selectAll().where('client_id', '=', client.id).where('status', '=', 'processed').execute();
    expect(payments).toHaveLength(4);
    expect(await t.services.db.selectFrom('api_keys').select('id').where('order_id', '=', orderId).execute()).toHaveLength(1);
    const numbers = (await t.admin('invoice/get_list', { client_id: client.id })).result.list.map((row: { number: string | null }) => row.number);
    expect(numbers.filter((number: string | null) => number !== null)).toHaveLength(4);
  });
});
