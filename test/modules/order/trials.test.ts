// Free trials (issue 24 item 7): a plan's `config.trial` validated (422 naming the field); checkout of a trial starts
// the order active with its key working and nothing paid; one trial per client and product, and per card when a card
// is needed (a second account with the same card is refused); the reminder mail and `order.trial_will_end` once; at
// the end the first invoice is charged off-session with a saved card (once), or issued with the keys answering
// TRIAL_ENDED until it is paid; a trial canceled costs nothing; a trial that ended while no scheduler ran is handled
// at the next run; two checkouts at once leave one trial; no plan change during a trial. Runs on SQLite, and on
// PostgreSQL + Redis when TEST_* are set.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asClient, expectError, makeProduct } from '../../helpers/selling-fixtures.ts';
import { payByCard, purchase, stripeStand, type StripeStand } from '../../helpers/stripe-fixtures.ts';

const DAY = 86_400_000;
const TRIAL = { days: 7, requires_card: false, included: { calls: 50 } };

describe('free trials', () => {
  let stand: StripeStand;
  let plan: number;
  let cardPlan: number;
  let paidPlan: number;

  beforeAll(async () => {
    stand = await stripeStand({ WEBHOOK_ALLOW_PRIVATE: 'true' });
    plan = await makeProduct(stand.t, { title: 'Trial plan', type: 'apikey', config: { included: 1000, trial: TRIAL } });
    cardPlan = await makeProduct(stand.t, { title: 'Card trial plan', type: 'apikey', config: { trial: { days: 14, requires_card: true } } });
    paidPlan = await makeProduct(stand.t, { title: 'Starter', type: 'custom' });
    // A subscriber, so the webhook deliveries can be counted.
    const hook = await stand.t.admin('webhook/create', { url: 'http://127.0.0.1:9/hooks', events: ['order.trial_will_end'] });
    expect(hook.body.error).toBeNull();
  });
  afterAll(async () => {
    await stand.close();
  });

  const t = () => stand.t;
  const db = () => stand.t.services.db;
  const cron = (at: number) => stand.t.services.cron.run(new Date(at));
  const order = async (id: number) => (await stand.t.admin('order/get', { id })).result;
  const keyOf = async (token: string, orderId: number) => (await asClient(stand.t, token, 'order/service', { id: orderId })).result.api_key as string;
  const info = async (key: string) => (await stand.t.call('/api/guest/serviceapikey/get_info', { key })).result;
  const invoicesOf = (clientId: number) => db().selectFrom('invoices').selectAll().where('client_id', '=', clientId).orderBy('id').execute();
  const intentsOf = (clientId: number) => stand.stripe.requestsTo('POST', '/v1/payment_intents').filter((request) => request.body.customer !== undefined && customers.get(clientId) === request.body.customer);
  const customers = new Map<number, string>();

  /** A client who checked out `productId` and the reply. */
  async function checkout(productId: number, client?: { id: number; token: string }) {
    const buyer = client ?? (await t().createClient());
    expect((await asClient(t(), buyer.token, 'cart/add_item', { id: productId, period: '1M' })).body.error).toBeNull();
    return { buyer, reply: await asClient(t(), buyer.token, 'cart/checkout') };
  }

  /** A client with a saved card (its first invoice for the starter plan paid by card); `last4` picks the card. */
  async function cardHolder(last4 = '4242') {
    const bought = await purchase(t(), paidPlan);
    const session = (await t().call('/api/guest/invoice/payment', { hash: bought.hash, gateway_id: 'stripe' })).result.redirect_url as string;
    const sessionId = session.slice(`${stand.stripe.url}/pay/`.length);
    for (const event of stand.stripe.completeSession(sessionId, { last4 })) {
      const signed = stand.stripe.sign(event);
      const reply = await t().app.inject({ method: 'POST', url: '/webhooks/stripe', payload: signed.payload, headers: { 'content-type': 'application/json', 'stripe-signature': signed.header } });
      expect(reply.statusCode).toBe(200);
    }
    const customer = await db().selectFrom('gateway_customers').select('customer_ref').where('client_id', '=', bought.clientId).executeTakeFirstOrThrow();
    customers.set(bought.clientId, customer.customer_ref);
    return { id: bought.clientId, token: bought.token };
  }

  it('validates config.trial, naming the field', async () => {
    const id = await makeProduct(t(), { title: 'Checked', type: 'apikey' });
    const bad: Array<[unknown, string]> = [
      ['7 days', 'config.trial'],
      [{ days: 0, requires_card: false }, 'config.trial.days'],
      [{ days: 2.5, requires_card: false }, 'config.trial.days'],
      [{ days: 366, requires_card: false }, 'config.trial.days'],
      [{ days: 7 }, 'config.trial.requires_card'],
      [{ days: 7, requires_card: 'yes' }, 'config.trial.requires_card'],
      [{ days: 7, requires_card: false, included: { calls: -1 } }, 'config.trial.included.calls'],
      [{ days: 7, requires_card: false, included: { tokens: 5 } }, 'config.trial.included.tokens'],
      [{ days: 7, requires_card: false, months: 1 }, 'config.trial.months'],
    ];
    for (const [trial, field] of bad) {
      const reply = await t().admin('product/update', { id, config: { trial } });
      expectError(reply, 422, 422);
      expect(reply.body.error?.message).toContain(`"${field}"`);
    }
    // The public catalogue shows the trial to buyers.
    const listed = (await t().call('/api/guest/product/get', { id: plan })).result;
    expect(listed.config.trial).toEqual(TRIAL);
  });

  it('a trial checkout starts the order active with a working key; nothing is invoiced or paid', async () => {
    const { buyer, reply } = await checkout(plan);
    expect(reply.body.error).toBeNull();
    expect(reply.result.invoice_id).toBeNull();
    const placed = await order(reply.result.order_id);
    expect(placed).toMatchObject({ status: 'active', on_trial: true, unpaid_invoice_id: null });
    expect(Math.round((Date.parse(placed.trial_ends_at) - Date.now()) / DAY)).toBe(7);
    expect(placed.expires_at).toBe(placed.trial_ends_at);
    // The client's own reads show it too.
    expect((await asClient(t(), buyer.token, 'order/get', { id: reply.result.order_id })).result).toMatchObject({ on_trial: true, trial_ends_at: placed.trial_ends_at });
    const key = await keyOf(buyer.token, reply.result.order_id);
    expect(await info(key)).toMatchObject({ valid: 1, reason: 'VALID' });
    // The trial's included units replace the plan's while it runs.
    expect((await info(key)).usage).toMatchObject({ included: 50 });
    expect(await invoicesOf(buyer.id)).toEqual([]);
    expect(await db().selectFrom('transactions').selectAll().where('client_id', '=', buyer.id).execute()).toEqual([]);
  });

  it("a trial's included units replace the plan meters' own for the trial only", async () => {
    const metered = await makeProduct(t(), {
      title: 'Metered trial',
      type: 'apikey',
      config: {
        meters: [{ code: 'tokens', name: 'Tokens', unit: 'tokens', aggregation: 'sum', included: 1_000_000 }],
        trial: { days: 7, requires_card: false, included: { tokens: 50_000 } },
      },
    });
    const { buyer, reply } = await checkout(metered);
    const key = await keyOf(buyer.token, reply.result.order_id);
    const tokens = async () => ((await info(key)).usage.meters as Array<{ code: string; included: number | null }>).find((meter) => meter.code === 'tokens');
    expect(await tokens()).toMatchObject({ included: 50_000 });
    // After the trial (paid by staff here) the plan's units apply.
    const end = Date.parse((await order(reply.result.order_id)).trial_ends_at) + 60_000;
    await cron(end);
    const [invoice] = await invoicesOf(buyer.id);
    expect((await t().admin('invoice/mark_as_paid', { id: invoice!.id })).body.error).toBeNull();
    expect(await tokens()).toMatchObject({ included: 1_000_000 });
  });

  it('a second trial of the same plan by the same client is refused; the cart stays', async () => {
    const { buyer, reply } = await checkout(plan);
    expect(reply.body.error).toBeNull();
    const again = await checkout(plan, buyer);
    expectError(again.reply, 409, 409);
    expect(again.reply.body.error?.message).toBe('You have already had the free trial of this plan');
    expect((await asClient(t(), buyer.token, 'cart/get')).result.items).toHaveLength(1);
    expect(await db().selectFrom('orders').select('id').where('client_id', '=', buyer.id).execute()).toHaveLength(1);
  });

  it('a trial that needs a card: refused without a saved card; the same card on another account gets no second trial', async () => {
    // Without a saved card the order waits for one (Stripe can save a card without a payment: trial-card-setup.test.ts).
    const noCard = await checkout(cardPlan);
    expect(noCard.reply.result).toMatchObject({ invoice_id: null, setup_url: expect.stringContaining(`${stand.stripe.url}/pay/`) });
    expect(await order(noCard.reply.result.order_id)).toMatchObject({ status: 'pending_setup', on_trial: false, trial_awaiting_card: true });

    const first = await cardHolder('1111');
    expect((await checkout(cardPlan, first)).reply.body.error).toBeNull();
    const sameCard = await cardHolder('1111');
    const refused = (await checkout(cardPlan, sameCard)).reply;
    expectError(refused, 409, 409);
    expect(refused.body.error?.message).toBe('This card has already been used for the free trial of this plan');
    // Another card is another trial.
    const otherCard = await cardHolder('2222');
    expect((await checkout(cardPlan, otherCard)).reply.body.error).toBeNull();
  });

  it('two checkouts at once: one trial (same card on two accounts; one client twice)', async () => {
    const a = await cardHolder('3333');
    const b = await cardHolder('3333');
    for (const buyer of [a, b]) expect((await asClient(t(), buyer.token, 'cart/add_item', { id: cardPlan, period: '1M' })).body.error).toBeNull();
    const replies = await Promise.all([a, b].map((buyer) => asClient(t(), buyer.token, 'cart/checkout')));
    expect(replies.filter((reply) => reply.body.error === null)).toHaveLength(1);
    expect(replies.filter((reply) => reply.body.error?.code === 409)).toHaveLength(1);
    const claims = await db().selectFrom('trial_claims').selectAll().where('card_fingerprint', '=', 'fp_test_3333').execute();
    expect(claims).toHaveLength(1);

    const c = await t().createClient();
    expect((await asClient(t(), c.token, 'cart/add_item', { id: plan, period: '1M' })).body.error).toBeNull();
    const twice = await Promise.all([1, 2].map(() => asClient(t(), c.token, 'cart/checkout')));
    expect(twice.filter((reply) => reply.body.error === null)).toHaveLength(1);
    expect(await db().selectFrom('trial_claims').selectAll().where('client_id', '=', c.id).execute()).toHaveLength(1);
  });

  it('reminds three days before the end, once: the mail and order.trial_will_end', async () => {
    const { buyer, reply } = await checkout(plan);
    const orderId = reply.result.order_id as number;
    const remindersOf = () => db().selectFrom('emails').select('subject').where('client_id', '=', buyer.id).where('template', '=', 'order_trial_will_end').execute();
    const deliveriesOf = async () =>
      (await db().selectFrom('webhook_deliveries').select('body').where('event_type', '=', 'order.trial_will_end').execute()).filter(
        (row) => (JSON.parse(row.body) as { data: { order_id: number } }).data.order_id === orderId,
      );
    await cron(Date.now() + 3 * DAY);
    expect(await remindersOf()).toEqual([]);
    const report = await cron(Date.now() + 4 * DAY + 60_000);
    expect(report.trial_reminders).toBeGreaterThanOrEqual(1);
    await cron(Date.now() + 5 * DAY);
    await Promise.all([cron(Date.now() + 6 * DAY), cron(Date.now() + 6 * DAY)]);
    const mails = await remindersOf();
    expect(mails).toHaveLength(1);
    expect(mails[0]!.subject).toContain('Trial plan');
    const deliveries = await deliveriesOf();
    expect(deliveries).toHaveLength(1);
    const data = (JSON.parse(deliveries[0]!.body) as { data: Record<string, unknown> }).data;
    expect(data).toMatchObject({ order_id: orderId, client_id: buyer.id, trial_ends_at: (await order(orderId)).trial_ends_at });
  });

  it('at the end with a saved card: the first invoice is charged off-session once and the key keeps working', async () => {
    const buyer = await cardHolder('4444');
    const { reply } = await checkout(plan, buyer);
    const orderId = reply.result.order_id as number;
    const key = await keyOf(buyer.token, orderId);
    const before = await invoicesOf(buyer.id);
    const end = Date.parse((await order(orderId)).trial_ends_at) + 60_000;
    await Promise.all([cron(end), cron(end)]);
    const issued = (await invoicesOf(buyer.id)).filter((row) => !before.some((old) => old.id === row.id));
    expect(issued).toHaveLength(1);
    expect(await order(orderId)).toMatchObject({ status: 'active', on_trial: false });
    await stand.t.services.outbox.runDue(new Date(end + 1000));
    await stand.t.services.outbox.runDue(new Date(end + 2000));
    const invoice = (await t().admin('invoice/get', { id: issued[0]!.id })).result;
    expect(invoice).toMatchObject({ status: 'paid', total: '10.00' });
    expect(intentsOf(buyer.id).filter((request) => (request.body.metadata as { invoice_id: string }).invoice_id === String(issued[0]!.id))).toHaveLength(1);
    const renewed = await order(orderId);
    expect(Date.parse(renewed.expires_at)).toBeGreaterThan(end + 27 * DAY);
    // Past the grace the trial is closed without touching a paid order; the key is valid on the plan's units.
    await cron(end + 2 * 3_600_000);
    expect(await order(orderId)).toMatchObject({ status: 'active' });
    expect(await info(key)).toMatchObject({ valid: 1, reason: 'VALID', usage: { included: 1000 } });
    expect(await invoicesOf(buyer.id)).toHaveLength(before.length + 1);
  });

  it('at the end with a card whose charge fails: after the grace the key answers TRIAL_ENDED', async () => {
    const buyer = await cardHolder('5555');
    const { reply } = await checkout(plan, buyer);
    const orderId = reply.result.order_id as number;
    const key = await keyOf(buyer.token, orderId);
    const end = Date.parse((await order(orderId)).trial_ends_at) + 60_000;
    stand.stripe.chargeQueue.push('decline');
    await cron(end);
    await stand.t.services.outbox.runDue(new Date(end + 1000));
    expect(await order(orderId)).toMatchObject({ status: 'active' });
    await cron(end + 2 * 3_600_000);
    expect(await order(orderId)).toMatchObject({ status: 'suspended', reason: 'Free trial ended' });
    expect(await info(key)).toMatchObject({ valid: 0, reason: 'TRIAL_ENDED' });
  });

  it('at the end without a card: the invoice is issued and the key answers TRIAL_ENDED until it is paid, then is valid', async () => {
    const { buyer, reply } = await checkout(plan);
    const orderId = reply.result.order_id as number;
    const key = await keyOf(buyer.token, orderId);
    const end = Date.parse((await order(orderId)).trial_ends_at) + 60_000;
    const report = await cron(end);
    expect(report.trials_ended).toBeGreaterThanOrEqual(1);
    const [invoice] = await invoicesOf(buyer.id);
    expect(invoice).toMatchObject({ status: 'unpaid' });
    expect(await order(orderId)).toMatchObject({ status: 'suspended', reason: 'Free trial ended', unpaid_invoice_id: invoice!.id });
    expect(await t().call('/api/guest/serviceapikey/check', { key }).then((r) => r.result)).toBe(false);
    expect(await info(key)).toMatchObject({ valid: 0, reason: 'TRIAL_ENDED' });
    expect((await asClient(t(), buyer.token, 'order/service', { id: orderId })).result).toMatchObject({ reason: 'TRIAL_ENDED', on_trial: false });
    // Nothing more happens on the next runs: one invoice.
    await cron(end + DAY);
    expect(await invoicesOf(buyer.id)).toHaveLength(1);
    await payByCard(stand, invoice!.hash);
    expect(await order(orderId)).toMatchObject({ status: 'active', reason: null });
    expect(await info(key)).toMatchObject({ valid: 1, reason: 'VALID' });
  });

  it('canceled during the trial: nothing is invoiced or charged; the key stops at the trial end', async () => {
    const buyer = await cardHolder('6666');
    const { reply } = await checkout(plan, buyer);
    const orderId = reply.result.order_id as number;
    const key = await keyOf(buyer.token, orderId);
    const before = await invoicesOf(buyer.id);
    const charges = intentsOf(buyer.id).length;
    expect((await asClient(t(), buyer.token, 'order/cancel', { id: orderId })).body.error).toBeNull();
    // Still usable until the end; no reminder for a canceled trial.
    expect(await info(key)).toMatchObject({ valid: 1 });
    const end = Date.parse((await order(orderId)).trial_ends_at) + 60_000;
    await cron(end - 2 * DAY);
    expect(await db().selectFrom('emails').select('id').where('client_id', '=', buyer.id).where('template', '=', 'order_trial_will_end').execute()).toEqual([]);
    await cron(end);
    await stand.t.services.outbox.runDue(new Date(end + 1000));
    expect(await order(orderId)).toMatchObject({ status: 'canceled' });
    expect(await invoicesOf(buyer.id)).toHaveLength(before.length);
    expect(intentsOf(buyer.id)).toHaveLength(charges);
    expect(await info(key)).toMatchObject({ valid: 0, reason: 'NOT_ACTIVE' });
  });

  it('a trial that ended while no scheduler ran is ended at the next run, once, without a late reminder', async () => {
    const { buyer, reply } = await checkout(plan);
    const orderId = reply.result.order_id as number;
    const end = Date.parse((await order(orderId)).trial_ends_at);
    // The server was down from day 2 to ten days after the end.
    await cron(Date.now() + 2 * DAY);
    await cron(end + 10 * DAY);
    await cron(end + 10 * DAY + 60_000);
    expect(await db().selectFrom('emails').select('id').where('client_id', '=', buyer.id).where('template', '=', 'order_trial_will_end').execute()).toEqual([]);
    expect(await invoicesOf(buyer.id)).toHaveLength(1);
    expect(await order(orderId)).toMatchObject({ status: 'suspended', reason: 'Free trial ended' });
  });

  it('the plan cannot be changed during the trial (409); after it, as usual', async () => {
    const other = await makeProduct(t(), { title: 'Bigger', type: 'apikey', pricing: { type: 'recurrent', recurrent: { '1M': { price: '20.00', setup: '0', enabled: true } } } });
    const { buyer, reply } = await checkout(plan);
    const change = await asClient(t(), buyer.token, 'order/change_plan', { id: reply.result.order_id, product_id: other, period: '1M' });
    expectError(change, 409, 409);
    expect(change.body.error?.message).toContain('during the free trial');
  });

  it('staff orders never start a trial', async () => {
    const client = await t().createClient();
    const created = await t().admin('order/create', { client_id: client.id, product_id: plan, period: '1M', activate: true });
    expect(await order(created.result as number)).toMatchObject({ status: 'active', on_trial: false, trial_ends_at: null });
    // …and do not use up the client's trial.
    expect((await checkout(plan, client)).reply.body.error).toBeNull();
  });
});
