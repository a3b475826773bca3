// Off-session renewal charges (CONTRACT §9 renewals) through the outbox kind `card_charge`: charged at once with an
// idempotency key per invoice and attempt; declines, authentication, Stripe failing, dropping the connection or
// answering too slowly each record a failed attempt and transaction, emit invoice.payment_failed and (except for
// authentication) retry after 1, 3 and 5 days; a crash mid-charge reuses the attempt's key; the order is renewed only
// with the payment. Runs on SQLite, and on PostgreSQL + Redis when TEST_* are set.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { asClient, makeProduct } from '../../helpers/selling-fixtures.ts';
import { deliver, payByCard, purchase, stripeStand, transactionsOf, type Purchase, type StripeStand } from '../../helpers/stripe-fixtures.ts';

const DAY = 86_400_000;

describe('off-session renewal charges', () => {
  let stand: StripeStand;
  let plan: number;
  const failures: Array<{ invoiceId: number; clientId: number; message: string }> = [];

  beforeAll(async () => {
    stand = await stripeStand();
    plan = await makeProduct(stand.t, { title: 'Renewing plan' });
    stand.t.services.events.on('invoice.payment_failed', (payload) => {
      failures.push(payload);
    });
  });
  afterAll(async () => {
    await stand.close();
  });
  beforeEach(() => {
    stand.stripe.chargeQueue.length = 0;
    failures.length = 0;
  });

  /** A card customer with an active order (first invoice paid by card, card saved). */
  async function cardCustomer(): Promise<Purchase> {
    const bought = await purchase(stand.t, plan);
    await payByCard(stand, bought.hash);
    return bought;
  }

  async function renewalInvoice(bought: Purchase): Promise<number> {
    const reply = await asClient(stand.t, bought.token, 'invoice/renewal_invoice', { order_id: bought.orderId });
    expect(reply.body.error).toBeNull();
    return reply.result as number;
  }

  const chargeItems = async (invoiceId: number) =>
    (await stand.t.services.db.selectFrom('outbox_messages').selectAll().where('kind', '=', 'card_charge').execute()).filter(
      (row) => (JSON.parse(row.payload) as { invoiceId: number }).invoiceId === invoiceId,
    );
  const intentsFor = (invoiceId: number) => stand.stripe.requestsTo('POST', '/v1/payment_intents').filter((request) => (request.body.metadata as { invoice_id: string }).invoice_id === String(invoiceId));
  const order = async (id: number) => (await stand.t.admin('order/get', { id })).result;
  const invoice = async (id: number) => (await stand.t.admin('invoice/get', { id })).result;
  const run = (at: number = Date.now()) => stand.t.services.outbox.runDue(new Date(at));

  it('charges the saved card at once, with the idempotency key of invoice and attempt; renews the order', async () => {
    const bought = await cardCustomer();
    const before = await order(bought.orderId);
    const invoiceId = await renewalInvoice(bought);
    expect(await chargeItems(invoiceId)).toMatchObject([{ status: 'pending' }]);
    await run();
    const [request] = intentsFor(invoiceId);
    const customer = (await stand.t.services.db.selectFrom('gateway_customers').selectAll().where('client_id', '=', bought.clientId).executeTakeFirstOrThrow()).customer_ref;
    const method = (await stand.t.services.db.selectFrom('payment_methods').selectAll().where('client_id', '=', bought.clientId).executeTakeFirstOrThrow()).method_ref;
    expect(request).toMatchObject({
      idempotencyKey: `tollgate-invoice-${invoiceId}-attempt-1`,
      body: { amount: '1000', currency: 'usd', customer, payment_method: method, off_session: 'true', confirm: 'true', metadata: { invoice_id: String(invoiceId) } },
    });
    expect(intentsFor(invoiceId)).toHaveLength(1);
    expect(await invoice(invoiceId)).toMatchObject({ status: 'paid' });
    const after = await order(bought.orderId);
    expect(after.status).toBe('active');
    expect(Date.parse(after.expires_at)).toBeGreaterThan(Date.parse(before.expires_at));
    expect((await transactionsOf(stand.t, invoiceId)).map((row) => [row.status, row.gateway, row.amount])).toEqual([['processed', 'stripe', 1000]]);
    expect(await stand.t.services.charges.attemptsOf(invoiceId)).toMatchObject([{ attempt: 1, status: 'succeeded' }]);
    expect(await chargeItems(invoiceId)).toMatchObject([{ status: 'sent', attempts: 1 }]);
    // Stripe's payment_intent.succeeded arrives afterwards: nothing changes.
    expect((await deliver(stand, stand.stripe.events.at(-1)!)).status).toBe(200);
    expect(await transactionsOf(stand.t, invoiceId)).toHaveLength(1);
    expect((await order(bought.orderId)).expires_at).toBe(after.expires_at);
    // Asking for the renewal invoice again issues a new one only after this one is paid: no second charge for it.
    await run();
    expect(intentsFor(invoiceId)).toHaveLength(1);
    expect(failures).toEqual([]);
  });

  it('a declined card: failed attempt, failed transaction, payment_failed event, retries after 1, 3 and 5 days, then stops', async () => {
    const bought = await cardCustomer();
    const before = await order(bought.orderId);
    stand.stripe.chargeQueue.push('decline', 'decline', 'decline', 'decline');
    const invoiceId = await renewalInvoice(bought);
    const start = Date.now();
    await run(start);
    expect(await stand.t.services.charges.attemptsOf(invoiceId)).toMatchObject([{ attempt: 1, status: 'failed', message: 'Your card has insufficient funds.', txn_ref: expect.stringMatching(/^pi_/) }]);
    expect(failures).toEqual([{ invoiceId, clientId: bought.clientId, message: 'Your card has insufficient funds.' }]);
    expect(await transactionsOf(stand.t, invoiceId)).toMatchObject([{ status: 'failed', message: 'Your card has insufficient funds.' }]);
    // Never half-renewed: the order is exactly as before, the invoice unpaid.
    expect(await order(bought.orderId)).toMatchObject({ status: before.status, expires_at: before.expires_at });
    expect((await invoice(invoiceId)).status).toBe('unpaid');

    const [item] = await chargeItems(invoiceId);
    expect(item).toMatchObject({ status: 'pending', attempts: 1 });
    expect(Math.round((Date.parse(item!.run_at) - start) / DAY)).toBe(1);
    await run(start + DAY - 60_000);
    expect(intentsFor(invoiceId)).toHaveLength(1);
    await run(start + DAY + 1000);
    await run(start + 3 * DAY + 2000);
    await run(start + 5 * DAY + 3000);
    expect(intentsFor(invoiceId).map((request) => request.idempotencyKey)).toEqual([1, 2, 3, 4].map((n) => `tollgate-invoice-${invoiceId}-attempt-${n}`));
    await run(start + 30 * DAY);
    expect(intentsFor(invoiceId)).toHaveLength(4);
    expect(await chargeItems(invoiceId)).toMatchObject([{ status: 'failed', attempts: 4 }]);
    expect(failures).toHaveLength(4);
    expect((await transactionsOf(stand.t, invoiceId)).map((row) => row.status)).toEqual(['failed', 'failed', 'failed', 'failed']);
    expect(await order(bought.orderId)).toMatchObject({ expires_at: before.expires_at });
    // The pay link still works.
    await payByCard(stand, (await invoice(invoiceId)).hash);
    expect((await invoice(invoiceId)).status).toBe('paid');
  });

  it('the dunning_retry_days setting decides when a failed charge is tried again', async () => {
    const bought = await cardCustomer();
    expect((await stand.t.admin('system/settings_update', { dunning_retry_days: '2' })).result).toBe(true);
    try {
      stand.stripe.chargeQueue.push('decline', 'decline');
      const invoiceId = await renewalInvoice(bought);
      const start = Date.now();
      await run(start);
      const [item] = await chargeItems(invoiceId);
      expect(Math.round((Date.parse(item!.run_at) - start) / DAY)).toBe(2);
      await run(start + 2 * DAY + 1000);
      // One retry only: the setting lists one day.
      expect(await chargeItems(invoiceId)).toMatchObject([{ status: 'failed', attempts: 2 }]);
    } finally {
      expect((await stand.t.admin('system/settings_update', { dunning_retry_days: '1,3,5' })).result).toBe(true);
    }
  });

  it('declined once, paid on the first retry', async () => {
    const bought = await cardCustomer();
    stand.stripe.chargeQueue.push('decline');
    const invoiceId = await renewalInvoice(bought);
    const start = Date.now();
    await run(start);
    await run(start + DAY + 1000);
    expect((await invoice(invoiceId)).status).toBe('paid');
    expect(await stand.t.services.charges.attemptsOf(invoiceId)).toMatchObject([
      { attempt: 1, status: 'failed' },
      { attempt: 2, status: 'succeeded' },
    ]);
    expect((await transactionsOf(stand.t, invoiceId)).map((row) => row.status)).toEqual(['failed', 'processed']);
  });

  it('authentication required: recorded, payment_failed emitted, no retry — left to the pay link', async () => {
    const bought = await cardCustomer();
    stand.stripe.chargeQueue.push('authentication_required');
    const invoiceId = await renewalInvoice(bought);
    const start = Date.now();
    await run(start);
    expect(await stand.t.services.charges.attemptsOf(invoiceId)).toMatchObject([{ attempt: 1, status: 'requires_action', message: expect.stringContaining('authentication') }]);
    expect(failures).toMatchObject([{ invoiceId, message: expect.stringContaining('authentication') }]);
    expect(await chargeItems(invoiceId)).toMatchObject([{ status: 'failed' }]);
    await run(start + 10 * DAY);
    expect(intentsFor(invoiceId)).toHaveLength(1);
    await payByCard(stand, (await invoice(invoiceId)).hash);
    expect((await invoice(invoiceId)).status).toBe('paid');
  });

  for (const behaviour of ['server_error', 'drop', 'slow'] as const) {
    it(`Stripe ${behaviour === 'slow' ? 'too slow (library timeout)' : behaviour === 'drop' ? 'dropping the connection' : 'failing (500)'}: a failed attempt, a retry scheduled, nothing half-done`, async () => {
      const bought = await cardCustomer();
      const before = await order(bought.orderId);
      // The library retries once on network errors (same idempotency key): both tries fail.
      stand.stripe.chargeQueue.push(behaviour, behaviour);
      const invoiceId = await renewalInvoice(bought);
      const start = Date.now();
      await run(start);
      expect(await stand.t.services.charges.attemptsOf(invoiceId)).toMatchObject([{ attempt: 1, status: 'failed', message: expect.any(String) }]);
      const message = (await stand.t.services.charges.attemptsOf(invoiceId))[0]!.message!;
      expect(message).not.toContain('sk_test');
      expect(new Set(intentsFor(invoiceId).map((request) => request.idempotencyKey))).toEqual(new Set([`tollgate-invoice-${invoiceId}-attempt-1`]));
      expect(failures).toMatchObject([{ invoiceId }]);
      expect(await transactionsOf(stand.t, invoiceId)).toMatchObject([{ status: 'failed' }]);
      expect(await order(bought.orderId)).toMatchObject({ expires_at: before.expires_at, status: before.status });
      expect(await chargeItems(invoiceId)).toMatchObject([{ status: 'pending' }]);
      await run(start + DAY + 1000);
      expect((await invoice(invoiceId)).status).toBe('paid');
    });
  }

  it('Stripe refusing the keys: a failed attempt whose message quotes no key', async () => {
    const bought = await cardCustomer();
    const method = (await stand.t.services.payments.chargeableMethod(stand.t.services.db, bought.clientId))!;
    const { stripeGateway } = await import('../../../src/modules/payment/stripe/gateway.ts');
    const wrong = stripeGateway({ ...stand.t.services.config.stripe, secretKey: 'sk_test_wrongkey0123456789', webhookSecret: 'whsec_unused' });
    const outcome = await wrong.chargeSavedMethod!({
      invoice: { id: bought.invoiceId, hash: bought.hash, number: null, clientId: bought.clientId, total: '10.00', amount: 1000, currency: 'USD' },
      customerRef: method.customerRef,
      methodRef: method.methodRef,
      idempotencyKey: 'tollgate-test-wrong-key',
    });
    expect(outcome).toEqual({ status: 'failed', ref: null, message: 'Stripe refused the request: the Stripe keys of this installation are not valid' });
    expect(stand.stripe.requests.at(-1)!.authorization).toBe('Bearer sk_test_wrongkey0123456789');
  });

  it('a crash mid-charge: the next delivery reuses the attempt and its key — one charge at Stripe', async () => {
    const bought = await cardCustomer();
    const invoiceId = await renewalInvoice(bought);
    // What the dead sender left: attempt 1 recorded as processing, and its charge made at Stripe.
    const gateway = stand.t.services.gateways.byCode('stripe')!;
    const method = (await stand.t.services.payments.chargeableMethod(stand.t.services.db, bought.clientId))!;
    const row = await stand.t.services.db.selectFrom('invoices').selectAll().where('id', '=', invoiceId).executeTakeFirstOrThrow();
    const stamp = new Date().toISOString().slice(0, 19) + 'Z';
    await stand.t.services.db
      .insertInto('payment_attempts')
      .values({ invoice_id: invoiceId, client_id: bought.clientId, attempt: 1, status: 'processing', txn_ref: null, message: null, created_at: stamp, updated_at: stamp })
      .execute();
    const first = await gateway.chargeSavedMethod!({
      invoice: { id: invoiceId, hash: row.hash, number: null, clientId: bought.clientId, total: '10.00', amount: 1000, currency: 'USD' },
      customerRef: method.customerRef,
      methodRef: method.methodRef,
      idempotencyKey: `tollgate-invoice-${invoiceId}-attempt-1`,
    });
    expect(first.status).toBe('succeeded');
    await run();
    expect((await invoice(invoiceId)).status).toBe('paid');
    const intents = [...stand.stripe.intents.values()].filter((intent) => (intent.metadata as { invoice_id?: string }).invoice_id === String(invoiceId));
    expect(intents).toHaveLength(1);
    expect(await stand.t.services.charges.attemptsOf(invoiceId)).toMatchObject([{ attempt: 1, status: 'succeeded' }]);
    expect((await transactionsOf(stand.t, invoiceId)).map((tx) => tx.transaction_id)).toEqual([intents[0]!.id]);
  });

  it('two senders at once charge once', async () => {
    const bought = await cardCustomer();
    const invoiceId = await renewalInvoice(bought);
    await Promise.all([run(), run(), run()]);
    expect(intentsFor(invoiceId)).toHaveLength(1);
    expect((await transactionsOf(stand.t, invoiceId)).filter((row) => row.status === 'processed')).toHaveLength(1);
  });

  it('no charge without auto-pay, without a card, or once the invoice is paid another way', async () => {
    const off = await cardCustomer();
    expect((await asClient(stand.t, off.token, 'profile/update', { auto_pay: false })).result).toBe(true);
    const offInvoice = await renewalInvoice(off);
    expect(await chargeItems(offInvoice)).toEqual([]);

    const manual = await purchase(stand.t, plan);
    await stand.t.admin('invoice/mark_as_paid', { id: manual.invoiceId });
    const noCard = await renewalInvoice(manual);
    expect(await chargeItems(noCard)).toEqual([]);

    const paidFirst = await cardCustomer();
    const renewal = await renewalInvoice(paidFirst);
    expect(await stand.t.admin('invoice/mark_as_paid', { id: renewal })).toMatchObject({ status: 200 });
    await run();
    expect(intentsFor(renewal)).toEqual([]);
    expect(await chargeItems(renewal)).toMatchObject([{ status: 'sent' }]);

    // The card removed before the charge: nothing charged.
    const removed = await cardCustomer();
    const [card] = (await asClient(stand.t, removed.token, 'payment_method/get_list')).result;
    const removedInvoice = await renewalInvoice(removed);
    expect((await asClient(stand.t, removed.token, 'payment_method/delete', { id: card.id })).result).toBe(true);
    await run();
    expect(intentsFor(removedInvoice)).toEqual([]);
    expect((await invoice(removedInvoice)).status).toBe('unpaid');
  });

  it('the scheduler\'s renewal invoices are charged too', async () => {
    const bought = await cardCustomer();
    const expires = Date.parse((await order(bought.orderId)).expires_at);
    const report = await stand.t.services.cron.run(new Date(expires - 3 * DAY));
    expect(report.renewal_invoices).toBeGreaterThanOrEqual(1);
    await run();
    const renewed = await order(bought.orderId);
    expect(Date.parse(renewed.expires_at)).toBeGreaterThan(expires);
    expect(renewed.unpaid_invoice_id).toBeNull();
  });
});
