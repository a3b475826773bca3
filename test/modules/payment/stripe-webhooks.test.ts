// The Stripe webhook (CONTRACT §9): signatures checked by the library on the raw body, events stored by id before they
// are acted on, exactly-once payment through mark_as_paid's compare-and-set, amount/currency checks, saved cards,
// failed payments, refunds, redeliveries, concurrency, out-of-order and late events, and a crash between storing and
// applying. Runs on SQLite, and on PostgreSQL + Redis when TEST_* are set.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WEBHOOK_SECRET } from '../../helpers/stripe-server.ts';
import { makeProduct } from '../../helpers/selling-fixtures.ts';
import { deliver, payByCard, postWebhook, purchase, startCardPayment, storedEvents, stripeStand, transactionsOf, type StripeStand } from '../../helpers/stripe-fixtures.ts';

describe('POST /webhooks/stripe', () => {
  let stand: StripeStand;
  let plan: number;
  let keyPlan: number;

  beforeAll(async () => {
    stand = await stripeStand();
    plan = await makeProduct(stand.t, { title: 'Card plan' });
    keyPlan = await makeProduct(stand.t, { title: 'Key plan', type: 'apikey' });
  });
  afterAll(async () => {
    await stand.close();
  });

  const invoice = async (id: number) => (await stand.t.admin('invoice/get', { id })).result;
  const order = async (id: number) => (await stand.t.admin('order/get', { id })).result;
  const activations = async (orderId: number) =>
    (await stand.t.services.db.selectFrom('order_history').select('to_status').where('order_id', '=', orderId).execute()).filter((row) => row.to_status === 'active').length;
  const keysOf = async (orderId: number) => stand.t.services.db.selectFrom('api_keys').select('id').where('order_id', '=', orderId).execute();

  it('pays the invoice once from a signed event: transaction, activation, saved card', async () => {
    const { t, stripe } = stand;
    const bought = await purchase(t, plan);
    const [completed, succeeded] = await payByCard(stand, bought.hash);
    const intent = succeeded!.data.object;
    expect(completed!.type).toBe('checkout.session.completed');

    expect(await invoice(bought.invoiceId)).toMatchObject({ status: 'paid', paid_at: expect.any(String) });
    expect((await order(bought.orderId)).status).toBe('active');
    const rows = await transactionsOf(t, bought.invoiceId);
    expect(rows).toMatchObject([
      { gateway: 'stripe', gateway_id: 2, transaction_id: intent.id, amount: 1000, currency: 'USD', type: 'payment', status: 'processed', client_id: bought.clientId, message: null },
    ]);
    expect(rows).toHaveLength(1);

    const methods = await t.call('/api/client/payment_method/get_list', {}, { basic: ['client', bought.token] });
    const card = stripe.methods.get(intent.payment_method as string)!.card as Record<string, unknown>;
    expect(methods.result).toEqual([{ id: expect.any(Number), brand: 'visa', last4: '4242', exp_month: card.exp_month, exp_year: card.exp_year, default: true }]);
    expect((await storedEvents(t)).filter((row) => row.processed_at === null)).toEqual([]);
  });

  describe('signatures: anything but a genuine, recent Stripe signature is 400 and stores nothing', () => {
    const cases: Array<[string, (stand: StripeStand, payload: string) => Record<string, string>]> = [
      ['missing header', () => ({})],
      ['empty header', () => ({ 'stripe-signature': '' })],
      ['garbage header', () => ({ 'stripe-signature': 'not-a-signature' })],
      ['signed with another secret', (s, payload) => ({ 'stripe-signature': s.stripe.sign(payload, { secret: 'whsec_someone_else' }).header })],
      ['expired (older than 300 s)', (s, payload) => ({ 'stripe-signature': s.stripe.sign(payload, { timestamp: Math.floor(Date.now() / 1000) - 301 }).header })],
    ];
    for (const [name, headers] of cases) {
      it(name, async () => {
        const bought = await purchase(stand.t, plan);
        const session = await startCardPayment(stand, bought.hash);
        const [completed] = stand.stripe.completeSession(session);
        const before = (await storedEvents(stand.t)).length;
        const payload = JSON.stringify(completed);
        const reply = await postWebhook(stand.t, payload, headers(stand, payload));
        expect(reply.status).toBe(400);
        expect(reply.body).toEqual({ result: null, error: { code: 400, message: expect.any(String) } });
        expect(JSON.stringify(reply.body)).not.toContain(WEBHOOK_SECRET);
        expect(await storedEvents(stand.t)).toHaveLength(before);
        expect((await invoice(bought.invoiceId)).status).toBe('unpaid');
      });
    }

    it('a forged body under a genuine signature (amount changed after signing)', async () => {
      const bought = await purchase(stand.t, plan);
      const session = await startCardPayment(stand, bought.hash);
      const [completed] = stand.stripe.completeSession(session);
      const signed = stand.stripe.sign(completed!);
      const forged = signed.payload.replace('"amount_total":1000', '"amount_total":1');
      expect(forged).not.toBe(signed.payload);
      const before = (await storedEvents(stand.t)).length;
      expect((await postWebhook(stand.t, forged, { 'stripe-signature': signed.header })).status).toBe(400);
      // Re-serialised JSON (same content, other bytes) fails too: the signature covers the raw body.
      expect((await postWebhook(stand.t, JSON.stringify(JSON.parse(signed.payload), null, 2), { 'stripe-signature': signed.header })).status).toBe(400);
      expect(await storedEvents(stand.t)).toHaveLength(before);
      // The genuine delivery still works afterwards.
      expect((await deliver(stand, signed)).status).toBe(200);
      expect((await invoice(bought.invoiceId)).status).toBe('paid');
    });

    it('a signed body that is not JSON is 400 too; other content types are read raw', async () => {
      const before = (await storedEvents(stand.t)).length;
      const signed = stand.stripe.sign('not json');
      expect((await postWebhook(stand.t, signed.payload, { 'stripe-signature': signed.header })).status).toBe(400);
      const completed = stand.stripe.event('ping.unknown', { id: 'x' });
      const raw = stand.stripe.sign(completed);
      expect((await postWebhook(stand.t, raw.payload, { 'stripe-signature': raw.header, 'content-type': 'text/plain' })).status).toBe(200);
      expect(await storedEvents(stand.t)).toHaveLength(before + 1);
    });

    it('an unknown gateway path is 404; GET is not a webhook', async () => {
      const response = await stand.t.app.inject({ method: 'POST', url: '/webhooks/paypal', payload: '{}', headers: { 'content-type': 'application/json' } });
      expect(response.statusCode).toBe(404);
      expect((await stand.t.app.inject({ method: 'GET', url: '/webhooks/stripe' })).statusCode).toBe(404);
      const custom = await stand.t.app.inject({ method: 'POST', url: '/webhooks/custom', payload: '{}', headers: { 'content-type': 'application/json' } });
      expect(custom.statusCode).toBe(404);
    });
  });

  it('the same event twice, and ten times concurrently: one payment, one activation, one key', async () => {
    const { t } = stand;
    const bought = await purchase(t, keyPlan);
    const session = await startCardPayment(stand, bought.hash);
    const [completed, succeeded] = stand.stripe.completeSession(session);
    const signed = stand.stripe.sign(completed!);
    const replies = await Promise.all(Array.from({ length: 10 }, () => deliver(stand, signed)));
    expect(replies.map((reply) => reply.status)).toEqual(Array(10).fill(200));
    expect(await deliver(stand, signed)).toMatchObject({ status: 200, body: { result: { received: true, outcome: 'duplicate' } } });
    // The other event of the same payment, also ten times at once.
    const again = await Promise.all(Array.from({ length: 10 }, () => deliver(stand, succeeded!)));
    expect(again.map((reply) => reply.status)).toEqual(Array(10).fill(200));

    expect((await invoice(bought.invoiceId)).status).toBe('paid');
    const rows = await transactionsOf(t, bought.invoiceId);
    expect(rows.map((row) => [row.type, row.status])).toEqual([['payment', 'processed']]);
    expect(await activations(bought.orderId)).toBe(1);
    expect(await keysOf(bought.orderId)).toHaveLength(1);
    const stored = (await storedEvents(t)).filter((row) => row.event_id === completed!.id || row.event_id === succeeded!.id);
    expect(stored).toHaveLength(2);
    expect(stored.every((row) => row.processed_at !== null)).toBe(true);
    const cards = await t.services.db.selectFrom('payment_methods').selectAll().where('client_id', '=', bought.clientId).execute();
    expect(cards).toHaveLength(1);
  });

  it('out of order (intent before session) and late (after a later event): the same result', async () => {
    const { t } = stand;
    const bought = await purchase(t, keyPlan);
    const session = await startCardPayment(stand, bought.hash);
    const [completed, succeeded] = stand.stripe.completeSession(session);
    expect((await deliver(stand, succeeded!)).status).toBe(200);
    expect((await invoice(bought.invoiceId)).status).toBe('paid');
    expect((await deliver(stand, completed!)).status).toBe(200);
    // A refund, then the payment event delivered late again.
    expect((await t.admin('invoice/refund', { id: bought.invoiceId })).result).toBe(true);
    const refunded = stand.stripe.events.at(-1)!;
    expect(refunded.type).toBe('charge.refunded');
    expect((await deliver(stand, refunded)).status).toBe(200);
    expect((await deliver(stand, succeeded!)).status).toBe(200);
    expect((await invoice(bought.invoiceId)).status).toBe('refunded');
    expect((await transactionsOf(t, bought.invoiceId)).map((row) => [row.type, row.status, row.amount])).toEqual([
      ['payment', 'processed', 1000],
      ['refund', 'refunded', 1000],
    ]);
    expect(await activations(bought.orderId)).toBe(1);
    expect(await keysOf(bought.orderId)).toHaveLength(1);
  });

  it('a refund event that arrives before its payment waits for it, then applies once', async () => {
    const { t, stripe } = stand;
    const bought = await purchase(t, plan);
    const session = await startCardPayment(stand, bought.hash);
    const [completed, succeeded] = stripe.completeSession(session);
    const charge = [...stripe.charges.values()].find((row) => row.payment_intent === succeeded!.data.object.id)!;
    charge.amount_refunded = 1000;
    const refundEvent = stripe.event('charge.refunded', charge);
    expect(await deliver(stand, refundEvent)).toMatchObject({ status: 200, body: { result: { outcome: 'deferred' } } });
    expect(await transactionsOf(t, bought.invoiceId)).toEqual([]);
    expect((await deliver(stand, completed!)).status).toBe(200);
    expect(await t.services.inboundEvents.processPending()).toBe(1);
    expect(await t.services.inboundEvents.processPending()).toBe(0);
    expect((await invoice(bought.invoiceId)).status).toBe('refunded');
    expect((await transactionsOf(t, bought.invoiceId)).map((row) => row.type)).toEqual(['payment', 'refund']);
    expect((await deliver(stand, refundEvent)).status).toBe(200);
    expect(await transactionsOf(t, bought.invoiceId)).toHaveLength(2);
  });

  it('a refund of a charge Tollgate did not start is ignored; one that never finds its payment stops being retried after 3 days', async () => {
    const { t, stripe } = stand;
    const foreign = stripe.event('charge.refunded', { id: 'ch_foreign', object: 'charge', payment_intent: 'pi_foreign', amount: 500, amount_refunded: 500, currency: 'usd', metadata: {} });
    expect(await deliver(stand, foreign)).toMatchObject({ status: 200, body: { result: { outcome: 'applied' } } });
    const orphan = stripe.event('charge.refunded', { id: 'ch_orphan', object: 'charge', payment_intent: 'pi_orphan', amount: 500, amount_refunded: 500, currency: 'usd', metadata: { invoice_id: '1' } });
    expect(await deliver(stand, orphan)).toMatchObject({ status: 200, body: { result: { outcome: 'deferred' } } });
    expect(await t.services.inboundEvents.processPending()).toBe(0);
    const stored = async () => (await storedEvents(t)).find((row) => row.event_id === orphan.id)!;
    const attempts = (await stored()).attempts;
    expect(attempts).toBeGreaterThanOrEqual(2);
    await t.services.inboundEvents.processPending(new Date(Date.now() + 4 * 86_400_000));
    expect(await stored()).toMatchObject({ processed_at: null, attempts, last_error: expect.stringContaining('pi_orphan') });
  });

  for (const [what, change] of [
    ['amount', { amount: 999 }],
    ['currency', { currency: 'eur' }],
  ] as const) {
    it(`a payment whose ${what} differs from the invoice: an error transaction, the invoice stays unpaid`, async () => {
      const { t } = stand;
      const bought = await purchase(t, plan);
      const session = await startCardPayment(stand, bought.hash);
      const events = stand.stripe.completeSession(session, change);
      for (const event of events) expect((await deliver(stand, event)).status).toBe(200);
      for (const event of events) expect((await deliver(stand, event)).status).toBe(200);
      expect((await invoice(bought.invoiceId)).status).toBe('unpaid');
      expect((await order(bought.orderId)).status).toBe('pending_setup');
      const rows = await transactionsOf(t, bought.invoiceId);
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ status: 'error', gateway: 'stripe', type: 'payment', message: expect.stringContaining('invoice is for 10.00 USD') });
    });
  }

  it('a payment for an invoice that was already paid another way is an error transaction, not a second payment', async () => {
    const { t } = stand;
    const bought = await purchase(t, plan);
    const session = await startCardPayment(stand, bought.hash);
    expect((await t.admin('invoice/mark_as_paid', { id: bought.invoiceId, transaction_id: 'BANK-1' })).result).toBe(true);
    for (const event of stand.stripe.completeSession(session)) expect((await deliver(stand, event)).status).toBe(200);
    const rows = await transactionsOf(t, bought.invoiceId);
    expect(rows.map((row) => [row.transaction_id === 'BANK-1' ? 'bank' : row.gateway, row.status])).toEqual([
      ['bank', 'processed'],
      ['stripe', 'error'],
    ]);
    expect(await activations(bought.orderId)).toBe(1);
  });

  it('payment_intent.payment_failed records a failed transaction with Stripe\'s message, once', async () => {
    const { t } = stand;
    const bought = await purchase(t, plan);
    const session = await startCardPayment(stand, bought.hash);
    const failed = stand.stripe.failSession(session, 'Your card was declined.');
    expect((await deliver(stand, failed)).status).toBe(200);
    expect((await deliver(stand, failed)).status).toBe(200);
    expect(await transactionsOf(t, bought.invoiceId)).toMatchObject([{ status: 'failed', message: 'Your card was declined.', gateway: 'stripe', amount: 1000 }]);
    expect(await transactionsOf(t, bought.invoiceId)).toHaveLength(1);
    expect((await invoice(bought.invoiceId)).status).toBe('unpaid');
    // The customer tries again and pays.
    await payByCard(stand, bought.hash);
    expect((await invoice(bought.invoiceId)).status).toBe('paid');
  });

  it('unknown event types are stored and ignored (200)', async () => {
    const bought = await purchase(stand.t, plan);
    const event = stand.stripe.event('customer.created', { id: 'cus_x', object: 'customer', metadata: { invoice_id: String(bought.invoiceId) } });
    expect(await deliver(stand, event)).toMatchObject({ status: 200, body: { result: { received: true, outcome: 'applied' } } });
    expect((await invoice(bought.invoiceId)).status).toBe('unpaid');
    const mine = stand.stripe.event('payment_intent.succeeded', { id: 'pi_other', object: 'payment_intent', amount: 1000, amount_received: 1000, currency: 'usd', metadata: {} });
    expect((await deliver(stand, mine)).status).toBe(200);
    expect(await transactionsOf(stand.t, bought.invoiceId)).toEqual([]);
  });

  describe('a crash between storing an event and applying it', () => {
    it('is applied on the next delivery, once', async () => {
      const { t } = stand;
      const bought = await purchase(t, keyPlan);
      const session = await startCardPayment(stand, bought.hash);
      const [completed] = stand.stripe.completeSession(session);
      const gateway = t.services.gateways.byCode('stripe')!;
      const signed = stand.stripe.sign(completed!);
      // What the process leaves behind when it dies right after the insert commits.
      await t.services.inboundEvents.storeOnly(gateway, await gateway.verifyEvent!(Buffer.from(signed.payload), { 'stripe-signature': signed.header }));
      expect((await storedEvents(t)).find((row) => row.event_id === completed!.id)).toMatchObject({ processed_at: null });
      expect((await invoice(bought.invoiceId)).status).toBe('unpaid');
      expect(await deliver(stand, signed)).toMatchObject({ status: 200, body: { result: { outcome: 'applied' } } });
      expect(await deliver(stand, signed)).toMatchObject({ status: 200, body: { result: { outcome: 'duplicate' } } });
      expect((await invoice(bought.invoiceId)).status).toBe('paid');
      expect(await activations(bought.orderId)).toBe(1);
      expect(await keysOf(bought.orderId)).toHaveLength(1);
    });

    it('is applied at restart (processPending), once, even with a delivery racing it', async () => {
      const { t } = stand;
      const bought = await purchase(t, keyPlan);
      const session = await startCardPayment(stand, bought.hash);
      const [completed] = stand.stripe.completeSession(session);
      const gateway = t.services.gateways.byCode('stripe')!;
      const signed = stand.stripe.sign(completed!);
      await t.services.inboundEvents.storeOnly(gateway, await gateway.verifyEvent!(Buffer.from(signed.payload), { 'stripe-signature': signed.header }));
      const [applied] = await Promise.all([t.services.inboundEvents.processPending(), deliver(stand, signed), t.services.inboundEvents.processPending()]);
      expect(applied).toBeGreaterThanOrEqual(0);
      expect(await t.services.inboundEvents.processPending()).toBe(0);
      expect((await invoice(bought.invoiceId)).status).toBe('paid');
      expect((await transactionsOf(t, bought.invoiceId)).filter((row) => row.status === 'processed')).toHaveLength(1);
      expect(await activations(bought.orderId)).toBe(1);
      expect(await keysOf(bought.orderId)).toHaveLength(1);
    });

    it('an event whose details cannot be fetched (Stripe down) is kept and applied later', async () => {
      const { t, stripe } = stand;
      const bought = await purchase(t, plan);
      const session = await startCardPayment(stand, bought.hash);
      const [completed] = stripe.completeSession(session);
      stripe.failAll = true;
      try {
        expect((await deliver(stand, completed!)).status).toBe(500);
      } finally {
        stripe.failAll = false;
      }
      const row = (await storedEvents(t)).find((stored) => stored.event_id === completed!.id)!;
      expect(row).toMatchObject({ processed_at: null, attempts: 1, last_error: expect.any(String) });
      expect((await invoice(bought.invoiceId)).status).toBe('unpaid');
      expect(await t.services.inboundEvents.processPending()).toBe(1);
      expect((await invoice(bought.invoiceId)).status).toBe('paid');
    });
  });

  it('charge.refunded: partial leaves the invoice paid, the rest makes it refunded; each recorded once', async () => {
    const { t, stripe } = stand;
    const bought = await purchase(t, plan);
    const [, succeeded] = await payByCard(stand, bought.hash);
    const charge = [...stripe.charges.values()].find((row) => row.payment_intent === succeeded!.data.object.id)!;
    charge.amount_refunded = 300;
    const partial = stripe.event('charge.refunded', charge);
    expect((await deliver(stand, partial)).status).toBe(200);
    expect((await deliver(stand, partial)).status).toBe(200);
    expect((await invoice(bought.invoiceId)).status).toBe('paid');
    expect((await order(bought.orderId)).status).toBe('active');
    charge.amount_refunded = 1000;
    charge.refunded = true;
    const full = stripe.event('charge.refunded', charge);
    expect((await deliver(stand, full)).status).toBe(200);
    // The earlier partial event delivered late changes nothing.
    expect((await deliver(stand, partial)).status).toBe(200);
    expect((await invoice(bought.invoiceId)).status).toBe('refunded');
    expect((await transactionsOf(t, bought.invoiceId)).map((row) => [row.type, row.status, row.amount])).toEqual([
      ['payment', 'processed', 1000],
      ['refund', 'refunded', 300],
      ['refund', 'refunded', 700],
    ]);
    // Refunding suspends nothing by itself (§6).
    expect((await order(bought.orderId)).status).toBe('active');
  });
});
