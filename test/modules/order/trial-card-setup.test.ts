// A free trial that needs a card, checked out by a client with no saved card (issue 24): the checkout answers a
// setup-mode Stripe Checkout (`setup_url`), the order waits (pending, `trial_awaiting_card`), and the trial starts when
// Stripe reports the saved card (`checkout.session.completed` with its SetupIntent) — once, however often and however
// concurrently the events arrive; the card is stored like any saved card; a card that already had this plan's trial
// (on another account) gets no second one: the order is canceled with that reason, nothing invoiced. "Add a card"
// (client/payment_method/setup) goes the same road, with its failure paths; without a gateway that can save cards the
// checkout keeps its 422. Runs on SQLite, and on PostgreSQL + Redis when TEST_* are set.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp } from '../../helpers/app.ts';
import { expectInvalid } from '../../helpers/assertions.ts';
import { asClient, expectError, makeProduct } from '../../helpers/selling-fixtures.ts';
import { deliver, stripeStand, type StripeStand } from '../../helpers/stripe-fixtures.ts';

const DAY = 86_400_000;

describe('a card trial started by saving a card (Stripe Checkout in setup mode)', () => {
  let stand: StripeStand;
  let cardPlan: number;
  beforeAll(async () => {
    stand = await stripeStand();
    cardPlan = await makeProduct(stand.t, { title: 'Card trial', type: 'apikey', config: { trial: { days: 14, requires_card: true } } });
  });
  afterAll(async () => {
    await stand.close();
  });

  const t = () => stand.t;
  const db = () => stand.t.services.db;
  const order = async (id: number) => (await t().admin('order/get', { id })).result;
  const sessionOf = (url: string) => url.slice(`${stand.stripe.url}/pay/`.length);

  async function checkout(client?: { id: number; token: string }) {
    const buyer = client ?? (await t().createClient());
    expect((await asClient(t(), buyer.token, 'cart/add_item', { id: cardPlan, period: '1M' })).body.error).toBeNull();
    return { buyer, reply: await asClient(t(), buyer.token, 'cart/checkout') };
  }

  it('checkout sends the client to setup-mode Checkout; the trial starts once when the card is saved', async () => {
    const { buyer, reply } = await checkout();
    expect(reply.body.error).toBeNull();
    expect(reply.result).toMatchObject({ invoice_id: null, invoice_hash: null, setup_url: expect.stringContaining(`${stand.stripe.url}/pay/cs_test_`) });
    const orderId = reply.result.order_id as number;
    expect(await order(orderId)).toMatchObject({ status: 'pending_setup', on_trial: false, trial_awaiting_card: true, trial_ends_at: null, card_on_file: false });
    expect((await asClient(t(), buyer.token, 'order/get', { id: orderId })).result).toMatchObject({ trial_awaiting_card: true });
    const [request] = stand.stripe.requestsTo('POST', '/v1/checkout/sessions').filter((candidate) => candidate.body.mode === 'setup').slice(-1);
    const customer = (await db().selectFrom('gateway_customers').select('customer_ref').where('client_id', '=', buyer.id).executeTakeFirstOrThrow()).customer_ref;
    expect(request!.body).toMatchObject({ mode: 'setup', customer, currency: 'usd', metadata: { client_id: String(buyer.id), purpose: 'card_setup' } });
    expect(String(request!.body.success_url)).toBe('https://billing.example.com/orders?setup=success');

    const events = stand.stripe.completeSetup(sessionOf(reply.result.setup_url), { fingerprint: 'fp_setup_one', last4: '4444' });
    expect(events.map((event) => event.type)).toEqual(['checkout.session.completed', 'setup_intent.succeeded']);
    expect(events[0]!.data.object).toMatchObject({ mode: 'setup', setup_intent: expect.stringMatching(/^seti_/) });
    const replies = await Promise.all(events.flatMap((event) => Array.from({ length: 10 }, () => deliver(stand, event))));
    expect(replies.filter((answer) => answer.status !== 200 && answer.status < 500)).toEqual([]);
    for (const event of events) expect((await deliver(stand, event)).status).toBe(200);

    const started = await order(orderId);
    expect(started).toMatchObject({ status: 'active', on_trial: true, trial_awaiting_card: false, card_on_file: true, unpaid_invoice_id: null });
    expect(Math.round((Date.parse(started.trial_ends_at) - Date.now()) / DAY)).toBe(14);
    expect(await db().selectFrom('trial_claims').select(['order_id', 'card_fingerprint']).where('client_id', '=', buyer.id).execute()).toEqual([{ order_id: orderId, card_fingerprint: 'fp_setup_one' }]);
    expect((await asClient(t(), buyer.token, 'payment_method/get_list')).result).toEqual([expect.objectContaining({ brand: 'visa', last4: '4444', default: true })]);
    const history = (await t().admin('order/history', { id: orderId })).result as Array<{ to_status: string }>;
    expect(history.filter((entry) => entry.to_status === 'active')).toHaveLength(1);
    const key = (await asClient(t(), buyer.token, 'order/service', { id: orderId })).result.api_key as string;
    expect((await t().call('/api/guest/serviceapikey/get_info', { key })).result).toMatchObject({ valid: 1 });
    expect(await db().selectFrom('invoices').select('id').where('client_id', '=', buyer.id).execute()).toEqual([]);
    // The same client again: refused at checkout.
    const again = await checkout(buyer);
    expectError(again.reply, 409, 409);
    expect(again.reply.body.error?.message).toBe('You have already had the free trial of this plan');
  });

  it('the same card on a second account gets no second trial: the order is canceled with the reason, nothing invoiced', async () => {
    const first = await checkout();
    for (const event of stand.stripe.completeSetup(sessionOf(first.reply.result.setup_url), { fingerprint: 'fp_shared' })) expect((await deliver(stand, event)).status).toBe(200);
    expect((await order(first.reply.result.order_id)).on_trial).toBe(true);

    const second = await checkout();
    expect(second.reply.body.error).toBeNull();
    const events = stand.stripe.completeSetup(sessionOf(second.reply.result.setup_url), { fingerprint: 'fp_shared' });
    await Promise.all(events.flatMap((event) => [deliver(stand, event), deliver(stand, event)]));
    const refused = await order(second.reply.result.order_id);
    expect(refused).toMatchObject({ status: 'canceled', on_trial: false, trial_awaiting_card: false, reason: 'This card has already been used for the free trial of this plan' });
    expect(await db().selectFrom('invoices').select('id').where('client_id', '=', second.buyer.id).execute()).toEqual([]);
    expect(await db().selectFrom('trial_claims').select('id').where('card_fingerprint', '=', 'fp_shared').execute()).toHaveLength(1);
    // The card is saved all the same: it is theirs.
    expect((await asClient(t(), second.buyer.token, 'payment_method/get_list')).result).toHaveLength(1);
  });

  it('"Add a card" saves a card without a payment and starts a trial left waiting (Stripe was out of reach at checkout)', async () => {
    stand.stripe.failAll = true;
    const { buyer, reply } = await checkout();
    stand.stripe.failAll = false;
    expect(reply.body.error).toBeNull();
    expect(reply.result.setup_url).toBeNull();
    expect(await order(reply.result.order_id)).toMatchObject({ status: 'pending_setup', trial_awaiting_card: true });

    expectInvalid(await asClient(t(), buyer.token, 'payment_method/setup', { return_to: 'elsewhere' }), 'return_to');
    expectInvalid(await asClient(t(), buyer.token, 'payment_method/setup', { return_to: 5 }), 'return_to');
    expectError(await t().call('/api/client/payment_method/setup', {}), 201, 401);
    stand.stripe.failAll = true;
    const down = await asClient(t(), buyer.token, 'payment_method/setup', {});
    stand.stripe.failAll = false;
    expect(down.status).toBe(502);
    expect(down.body.error?.message).toBe('Stripe could not complete the payment');

    const started = await asClient(t(), buyer.token, 'payment_method/setup', { return_to: 'orders' });
    expect(started.body.error).toBeNull();
    const [request] = stand.stripe.requestsTo('POST', '/v1/checkout/sessions').slice(-1);
    expect(String(request!.body.success_url)).toBe('https://billing.example.com/orders?setup=success');
    for (const event of stand.stripe.completeSetup(sessionOf(started.result.redirect_url), { fingerprint: 'fp_added' })) expect((await deliver(stand, event)).status).toBe(200);
    expect(await order(reply.result.order_id)).toMatchObject({ status: 'active', on_trial: true });

    // From the profile page, with nothing waiting: the card is saved and becomes the default.
    const profile = await asClient(t(), buyer.token, 'payment_method/setup', {});
    expect(String(stand.stripe.requestsTo('POST', '/v1/checkout/sessions').at(-1)!.body.success_url)).toBe('https://billing.example.com/profile?setup=success');
    for (const event of stand.stripe.completeSetup(sessionOf(profile.result.redirect_url), { fingerprint: 'fp_second', last4: '9999' })) expect((await deliver(stand, event)).status).toBe(200);
    const cards = (await asClient(t(), buyer.token, 'payment_method/get_list')).result as Array<{ last4: string; default: boolean }>;
    expect(cards.map((card) => [card.last4, card.default])).toEqual([['9999', true], ['4242', false]]);
  });

  it('the client cancels an order waiting for a card: canceled at once, and a card saved later starts nothing', async () => {
    const { buyer, reply } = await checkout();
    const orderId = reply.result.order_id as number;
    const other = await t().createClient();
    expectError(await asClient(t(), other.token, 'order/cancel', { id: orderId }), 404);
    expect((await asClient(t(), buyer.token, 'order/cancel', { id: orderId })).body.error).toBeNull();
    expect(await order(orderId)).toMatchObject({ status: 'canceled', trial_awaiting_card: false, reason: 'Canceled by the client before the free trial started' });
    expectError(await asClient(t(), buyer.token, 'order/cancel', { id: orderId }), 409);
    for (const event of stand.stripe.completeSetup(sessionOf(reply.result.setup_url), { fingerprint: 'fp_after_cancel' })) expect((await deliver(stand, event)).status).toBe(200);
    expect((await order(orderId)).status).toBe('canceled');
  });

  it('an order waiting for a card that staff cancel does not start when the card comes', async () => {
    const { buyer, reply } = await checkout();
    const orderId = reply.result.order_id as number;
    expect((await t().admin('order/cancel', { id: orderId })).body.error).toBeNull();
    // The card saved afterwards starts nothing.
    for (const event of stand.stripe.completeSetup(sessionOf(reply.result.setup_url), { fingerprint: 'fp_late' })) expect((await deliver(stand, event)).status).toBe(200);
    expect(await order(orderId)).toMatchObject({ status: 'canceled', on_trial: false });
    expect(await db().selectFrom('trial_claims').select('id').where('client_id', '=', buyer.id).execute()).toEqual([]);
  });
});

describe('a card trial without a gateway that can save cards', () => {
  it('keeps the 422 naming payment_method, and "Add a card" answers 409', async () => {
    const t = await createTestApp();
    try {
      const plan = await makeProduct(t, { title: 'Card trial', type: 'apikey', config: { trial: { days: 14, requires_card: true } } });
      const buyer = await t.createClient();
      expect((await asClient(t, buyer.token, 'cart/add_item', { id: plan, period: '1M' })).body.error).toBeNull();
      const reply = await asClient(t, buyer.token, 'cart/checkout');
      expectError(reply, 422, 422);
      expect(reply.body.error?.message).toContain('"payment_method"');
      expectError(await asClient(t, buyer.token, 'payment_method/setup', {}), 409, 409);
    } finally {
      await t.close();
    }
  });
});
