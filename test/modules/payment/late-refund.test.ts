// Issue 20, M2, the last part: a card payment that arrives for an invoice that no longer takes it (an upgrade voided
// when its priced period ended, a renewal canceled or left stale by staff, an invoice already paid) is never applied
// and is refunded automatically, exactly once: through the `late_refund` outbox kind, at Stripe with the idempotency
// key `late-refund:<payment intent>`, recorded as one `refund` transaction, told to the client in one mail. Runs on a
// SQLite file (a second app opens it after a "crash"), and on PostgreSQL + Redis when TEST_* are set.
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inTransaction } from '../../../src/platform/transaction.ts';
import { LATE_REFUND_KIND } from '../../../src/modules/payment/late-refunds.ts';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectError } from '../../helpers/assertions.ts';
import type { StripeEvent } from '../../helpers/stripe-server.ts';
import { asClient, makeProduct } from '../../helpers/selling-fixtures.ts';
import { deliver, purchase, startCardPayment, stripeStand, transactionsOf, type StripeStand } from '../../helpers/stripe-fixtures.ts';

const MINUTE = 60_000;
const monthly = (price: string) => ({ type: 'recurrent', recurrent: { '1M': { price, setup: '0', enabled: true } } });
const file = `/tmp/tollgate-late-refund-${process.pid}-${Date.now()}.db`;

describe('late card payments are refunded automatically, once (issue 20, M2)', () => {
  let stand: StripeStand;
  let planA: number;
  let planB: number;

  beforeAll(async () => {
    // A database file on SQLite, so that a second app can open it after the first one "crashed".
    stand = await stripeStand(process.env.TEST_DATABASE_URL ? {} : { DATABASE_URL: `sqlite:${file}` });
    planA = await makeProduct(stand.t, { title: 'Plan A', setup: 'after_payment', pricing: monthly('10.00') });
    planB = await makeProduct(stand.t, { title: 'Plan B', setup: 'after_payment', pricing: monthly('20.00') });
  }, 60_000);
  afterAll(async () => {
    await stand?.close();
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true });
  });

  const t = () => stand.t;
  // Without card_on_file: the late payment's Checkout saves the card, which is right, but not the order's to change.
  const order = async (id: number) => {
    const { card_on_file: _card, ...record } = (await t().admin('order/get', { id })).result;
    return record;
  };
  const invoice = async (id: number) => (await t().admin('invoice/get', { id })).result;
  const run = (at = Date.now(), app: TestApp = t()) => app.services.outbox.runDue(new Date(at));

  /** The refund requests the stand-in received for payment intent `intent`. */
  const refundRequests = (intent: string) => stand.stripe.requestsTo('POST', '/v1/refunds').filter((request) => request.body.payment_intent === intent);
  /** The refunds the stand-in actually made for `intent`. */
  const refundsMade = (intent: string) => [...stand.stripe.refunds.values()].filter((refund) => refund.payment_intent === intent);
  const refundMails = (clientId: number, app: TestApp = t()) =>
    app.services.db.selectFrom('emails').selectAll().where('client_id', '=', clientId).where('template', '=', 'invoice_payment_refunded').execute();
  const lateItems = (app: TestApp = t()) => app.services.db.selectFrom('outbox_messages').selectAll().where('kind', '=', LATE_REFUND_KIND).execute();
  const intentOf = (events: StripeEvent[]) => (events[1]!.data.object as { id: string }).id;

  /** A client (no saved card) with an active order on plan A, its first invoice paid by staff. */
  async function orderOnA(): Promise<{ token: string; clientId: number; orderId: number }> {
    const client = await t().createClient();
    await asClient(t(), client.token, 'cart/add_item', { id: planA, period: '1M' });
    const checkout = (await asClient(t(), client.token, 'cart/checkout')).result;
    expect((await t().admin('invoice/mark_as_paid', { id: checkout.invoice_id })).result).toBe(true);
    return { token: client.token, clientId: client.id, orderId: checkout.order_id };
  }

  /**
   * An upgrade to plan B whose card payment is opened, then voided by the scheduler at the end of the period it was
   * priced for, and only then completed by the customer: the two Stripe events, not delivered yet.
   */
  async function voidedUpgradePaidLate(): Promise<{ clientId: number; orderId: number; upgradeId: number; total: number; events: StripeEvent[] }> {
    const { token, clientId, orderId } = await orderOnA();
    const reply = await asClient(t(), token, 'order/change_plan', { id: orderId, product_id: planB, period: '1M' });
    expect(reply.result).toMatchObject({ change: 'upgrade', effective: 'on_payment' });
    const upgradeId = reply.result.invoice_id as number;
    const session = await startCardPayment(stand, (await invoice(upgradeId)).hash);
    await t().services.cron.run(new Date(Date.parse((await order(orderId)).expires_at) + 1000));
    expect(await invoice(upgradeId)).toMatchObject({ status: 'canceled' });
    const total = Math.round(Number((await invoice(upgradeId)).total) * 100);
    return { clientId, orderId, upgradeId, total, events: stand.stripe.completeSession(session) };
  }

  it('a late card payment of a voided upgrade: one refund at Stripe, one refund transaction, the order unchanged, one mail', async () => {
    const late = await voidedUpgradePaidLate();
    const before = await order(late.orderId);
    for (const event of late.events) expect((await deliver(stand, event)).status).toBe(200);
    const intent = intentOf(late.events);
    // Recorded, not applied, and not refunded before the outbox runs.
    expect(await transactionsOf(t(), late.upgradeId)).toMatchObject([
      { type: 'payment', status: 'error', transaction_id: intent, amount: late.total, message: expect.stringContaining('refunded automatically') },
    ]);
    expect(refundRequests(intent)).toHaveLength(0);

    await run();
    expect(refundRequests(intent)).toMatchObject([{ idempotencyKey: `late-refund:${intent}`, body: { amount: String(late.total) } }]);
    expect(refundsMade(intent)).toHaveLength(1);
    const [payment, refund, ...more] = await transactionsOf(t(), late.upgradeId);
    expect(more).toHaveLength(0);
    expect(refund).toMatchObject({ type: 'refund', status: 'refunded', amount: late.total, transaction_id: refundsMade(intent)[0]!.id, refund_of: payment!.id });
    expect(await order(late.orderId)).toEqual(before);
    expect(await invoice(late.upgradeId)).toMatchObject({ status: 'canceled' });
    // The money given back never paid the invoice: no credit note corrects it.
    expect(await t().services.db.selectFrom('credit_notes').select('id').where('invoice_id', '=', late.upgradeId).execute()).toEqual([]);
    const mails = await refundMails(late.clientId);
    expect(mails).toHaveLength(1);
    // An unpaid invoice has no number yet: the mail names it as every other mail does (invoiceLabel).
    expect(mails[0]).toMatchObject({ subject: `Your payment for Pro forma ${late.upgradeId} was refunded` });
    expect(mails[0]!.text).toContain(`${(late.total / 100).toFixed(2)} USD`);
    // Staff see it in the transaction list (its declared result schema is checked by the harness).
    const listed = (await t().admin('invoice/transaction_get_list', { invoice_id: late.upgradeId })).result;
    expect(listed.list).toMatchObject([{ type: 'refund', status: 'refunded' }, { type: 'payment', status: 'error' }]);

    // Stripe's own confirmation (charge.refunded) arrives afterwards: nothing more is recorded or mailed.
    const refunded = stand.stripe.events.filter((event) => event.type === 'charge.refunded' && (event.data.object as { payment_intent: string }).payment_intent === intent);
    expect(refunded).toHaveLength(1);
    expect((await deliver(stand, refunded[0]!)).status).toBe(200);
    await run(Date.now() + 2 * MINUTE);
    expect(await transactionsOf(t(), late.upgradeId)).toHaveLength(2);
    expect(await refundMails(late.clientId)).toHaveLength(1);
    expect(refundRequests(intent)).toHaveLength(1);
    const stored = await t().services.db.selectFrom('gateway_events').select(['processed_at', 'last_error']).where('event_id', '=', refunded[0]!.id).executeTakeFirstOrThrow();
    expect(stored).toMatchObject({ processed_at: expect.any(String), last_error: null });
  });

  it('the same event twice, and both events of one payment at once: still one refund', async () => {
    const late = await voidedUpgradePaidLate();
    const intent = intentOf(late.events);
    const [completed, succeeded] = late.events;
    // checkout.session.completed and payment_intent.succeeded, each delivered twice, all at the same time.
    const replies = await Promise.all([completed!, succeeded!, completed!, succeeded!].map((event) => deliver(stand, event)));
    expect(replies.map((reply) => reply.status)).toEqual([200, 200, 200, 200]);
    expect((await lateItems()).filter((item) => JSON.parse(item.payload).paymentId !== undefined && item.dedupe_key === `${LATE_REFUND_KIND}:stripe:${intent}`)).toHaveLength(1);
    expect((await transactionsOf(t(), late.upgradeId)).filter((row) => row.type === 'payment')).toHaveLength(1);
    // Two senders at once claim the item once.
    await Promise.all([run(), run()]);
    await run(Date.now() + 2 * MINUTE);
    expect(refundRequests(intent)).toHaveLength(1);
    expect(refundsMade(intent)).toHaveLength(1);
    expect((await transactionsOf(t(), late.upgradeId)).filter((row) => row.type === 'refund')).toHaveLength(1);
    expect(await refundMails(late.clientId)).toHaveLength(1);
  });

  it('a refund Stripe fails the first time is retried by the outbox later: one refund in the end', async () => {
    const late = await voidedUpgradePaidLate();
    for (const event of late.events) expect((await deliver(stand, event)).status).toBe(200);
    const intent = intentOf(late.events);
    const now = Date.now();
    stand.stripe.failRefunds = true;
    try {
      await run(now);
    } finally {
      stand.stripe.failRefunds = false;
    }
    expect(refundRequests(intent).length).toBeGreaterThanOrEqual(1);
    expect(refundsMade(intent)).toHaveLength(0);
    const [item] = (await lateItems()).filter((row) => row.dedupe_key === `${LATE_REFUND_KIND}:stripe:${intent}`);
    expect(item).toMatchObject({ status: 'pending', attempts: 1, last_error: expect.stringContaining('did not make the refund') });
    expect(item!.last_error).not.toMatch(/sk_test|Bearer/);
    expect((await transactionsOf(t(), late.upgradeId)).map((row) => row.type)).toEqual(['payment']);
    expect(await refundMails(late.clientId)).toHaveLength(0);
    // Not due again before its first retry delay (1 minute) …
    const failedRequests = refundRequests(intent).length;
    await run(now + 30_000);
    expect(refundRequests(intent)).toHaveLength(failedRequests);
    // … then retried with the same key, and refunded once.
    await run(now + 2 * MINUTE);
    expect(refundsMade(intent)).toHaveLength(1);
    expect(new Set(refundRequests(intent).map((request) => request.idempotencyKey))).toEqual(new Set([`late-refund:${intent}`]));
    expect((await transactionsOf(t(), late.upgradeId)).map((row) => [row.type, row.status])).toEqual([
      ['payment', 'error'],
      ['refund', 'refunded'],
    ]);
    expect(await refundMails(late.clientId)).toHaveLength(1);
    const states = await t().services.outbox.states([item!.id]);
    expect(states.get(item!.id)).toMatchObject({ status: 'sent', attempts: 2 });
  });

  it('a crash between enqueue and delivery, and one in the middle of it: a fresh app refunds once, with the same key', async () => {
    const url = t().services.postgresUrl ?? `sqlite:${file}`;
    // Crash 1: the payment and its refund item were committed, then the process died before sending anything.
    const first = await voidedUpgradePaidLate();
    for (const event of first.events) expect((await deliver(stand, event)).status).toBe(200);
    // Crash 2: the sender claimed the item and asked Stripe (which refunded), then died before recording it.
    const second = await voidedUpgradePaidLate();
    for (const event of second.events) expect((await deliver(stand, event)).status).toBe(200);
    const secondIntent = intentOf(second.events);
    const now = Date.now();
    await t()
      .services.db.updateTable('outbox_messages')
      .set({ attempts: 1, claim_token: 'dead-sender', claimed_until: new Date(now + 5 * MINUTE).toISOString() })
      .where('dedupe_key', '=', `${LATE_REFUND_KIND}:stripe:${secondIntent}`)
      .execute();
    await t().services.gateways.byCode('stripe')!.refund!({ paymentRef: secondIntent, amount: second.total, idempotencyKey: `late-refund:${secondIntent}` });
    expect(refundsMade(secondIntent)).toHaveLength(1);

    const fresh = await createTestApp(stand.stripe.env({ PUBLIC_URL: 'https://billing.example.com', DATABASE_URL: url }));
    try {
      await run(now, fresh);
      const firstIntent = intentOf(first.events);
      expect(refundRequests(firstIntent)).toMatchObject([{ idempotencyKey: `late-refund:${firstIntent}` }]);
      expect(refundsMade(firstIntent)).toHaveLength(1);
      expect((await transactionsOf(fresh, first.upgradeId)).map((row) => row.type)).toEqual(['payment', 'refund']);
      expect(await refundMails(first.clientId, fresh)).toHaveLength(1);
      // The dead sender's claim holds until its lease ends; then the fresh app takes the item over.
      expect(refundRequests(secondIntent)).toHaveLength(1);
      await run(now + 6 * MINUTE, fresh);
      const requests = refundRequests(secondIntent);
      expect(requests).toHaveLength(2);
      expect(requests.map((request) => request.idempotencyKey)).toEqual([`late-refund:${secondIntent}`, `late-refund:${secondIntent}`]);
      expect(refundsMade(secondIntent)).toHaveLength(1);
      const rows = await transactionsOf(fresh, second.upgradeId);
      expect(rows.map((row) => row.type)).toEqual(['payment', 'refund']);
      expect(rows[1]).toMatchObject({ transaction_id: refundsMade(secondIntent)[0]!.id, amount: second.total });
      expect(await refundMails(second.clientId, fresh)).toHaveLength(1);
    } finally {
      await fresh.close();
    }
  });

  it('Stripe’s refund event arriving before the outbox records the refund: recorded once, Stripe not asked again', async () => {
    const late = await voidedUpgradePaidLate();
    for (const event of late.events) expect((await deliver(stand, event)).status).toBe(200);
    const intent = intentOf(late.events);
    // The refund was made (a sender that died after asking, or staff at Stripe's dashboard) and Stripe says so first.
    await t().services.gateways.byCode('stripe')!.refund!({ paymentRef: intent, amount: late.total, idempotencyKey: `late-refund:${intent}` });
    const refunded = stand.stripe.events.filter((event) => event.type === 'charge.refunded' && (event.data.object as { payment_intent: string }).payment_intent === intent);
    expect((await deliver(stand, refunded[0]!)).status).toBe(200);
    expect((await transactionsOf(t(), late.upgradeId)).map((row) => [row.type, row.status])).toEqual([
      ['payment', 'error'],
      ['refund', 'refunded'],
    ]);
    await run(Date.now() + 2 * MINUTE);
    expect(refundRequests(intent)).toHaveLength(1);
    expect((await transactionsOf(t(), late.upgradeId)).filter((row) => row.type === 'refund')).toHaveLength(1);
    expect(await refundMails(late.clientId)).toHaveLength(1);
  });

  it('a stale renewal paid by card (the plan changed by staff, or the renewal canceled by them) is refunded the same way', async () => {
    for (const spoil of ['plan moved to B', 'price changed by staff'] as const) {
      const { token, clientId, orderId } = await orderOnA();
      const renewal = (await asClient(t(), token, 'invoice/renewal_invoice', { order_id: orderId })).result as number;
      const session = await startCardPayment(stand, (await invoice(renewal)).hash);
      if (spoil === 'plan moved to B') {
        // The state a staff edit of the plan leaves when it does not cancel the renewal: the renewal is stale.
        await t().services.db.updateTable('orders').set({ product_id: planB, title: 'Plan B', price: 2000 }).where('id', '=', orderId).execute();
      } else {
        expect((await t().admin('order/update', { id: orderId, price: '25.00' })).result).toBe(true);
        expect(await invoice(renewal)).toMatchObject({ status: 'canceled' });
      }
      const before = await order(orderId);
      const events = stand.stripe.completeSession(session);
      for (const event of events) expect((await deliver(stand, event)).status).toBe(200);
      await run();
      const intent = intentOf(events);
      expect(refundRequests(intent), spoil).toMatchObject([{ idempotencyKey: `late-refund:${intent}`, body: { amount: '1000' } }]);
      expect((await transactionsOf(t(), renewal)).map((row) => [row.type, row.status]), spoil).toEqual([
        ['payment', 'error'],
        ['refund', 'refunded'],
      ]);
      expect(await invoice(renewal)).toMatchObject({ status: 'canceled' });
      // Nothing applied: the same plan, price and expiry (only the voided renewal is no longer the order's unpaid one).
      const { unpaid_invoice_id: _voided, updated_at: _touched, ...unchanged } = before;
      expect(await order(orderId), spoil).toMatchObject(unchanged);
      expect(await refundMails(clientId), spoil).toHaveLength(1);
    }
  });

  it('a second card payment of an invoice already paid is refunded; the invoice’s own refunds and credit do not count it', async () => {
    const bought = await purchase(t(), planA);
    // Two payment pages open for one invoice, both paid: the first pays the invoice, the second is late.
    const sessions = [await startCardPayment(stand, bought.hash), await startCardPayment(stand, bought.hash)];
    const [firstEvents, secondEvents] = sessions.map((session) => stand.stripe.completeSession(session));
    for (const event of [...firstEvents!, ...secondEvents!]) expect((await deliver(stand, event)).status).toBe(200);
    const expires = (await order(bought.orderId)).expires_at;
    await run();
    const secondIntent = intentOf(secondEvents!);
    expect(refundRequests(intentOf(firstEvents!))).toHaveLength(0);
    expect(refundRequests(secondIntent)).toHaveLength(1);
    expect(await invoice(bought.invoiceId)).toMatchObject({ status: 'paid' });
    expect((await order(bought.orderId)).expires_at).toBe(expires);
    expect((await transactionsOf(t(), bought.invoiceId)).map((row) => [row.type, row.status])).toEqual([
      ['payment', 'processed'],
      ['payment', 'error'],
      ['refund', 'refunded'],
    ]);
    // A plan change still credits the period in full: the late payment's refund gave back other money.
    const change = await asClient(t(), bought.token, 'order/change_plan', { id: bought.orderId, product_id: planB, period: '1M' });
    expect(Number(change.result.credit)).toBeGreaterThan(9.5);
    await t().admin('invoice/cancel', { id: change.result.invoice_id });
    // And staff can still refund the whole invoice (the first payment), not only what the late refund left.
    expect((await t().admin('invoice/refund', { id: bought.invoiceId })).result).toBe(true);
    expect(refundRequests(intentOf(firstEvents!))).toMatchObject([{ body: { amount: '1000' } }]);
    expect(await invoice(bought.invoiceId)).toMatchObject({ status: 'refunded' });
  });

  it('a manual payment of a voided invoice stays refused (409), and a manual gateway’s payment is left to staff', async () => {
    const { token, clientId, orderId } = await orderOnA();
    const upgradeId = (await asClient(t(), token, 'order/change_plan', { id: orderId, product_id: planB, period: '1M' })).result.invoice_id as number;
    await t().services.cron.run(new Date(Date.parse((await order(orderId)).expires_at) + 1000));
    expectError(await t().admin('invoice/mark_as_paid', { id: upgradeId }), 409);
    const custom = t().services.gateways.byCode('custom')!;
    const total = Math.round(Number((await invoice(upgradeId)).total) * 100);
    const outcome = await inTransaction(t().services.db, (trx) =>
      t().services.gatewayPayments.applyPayment(trx, custom, { invoiceId: upgradeId, ref: `manual-${upgradeId}`, amount: total, currency: 'USD' }, new Date()),
    );
    expect(outcome).toBe('error');
    expect(await transactionsOf(t(), upgradeId)).toMatchObject([{ status: 'error', message: expect.stringContaining('should be refunded') }]);
    expect((await lateItems()).filter((item) => item.dedupe_key === `${LATE_REFUND_KIND}:custom:manual-${upgradeId}`)).toHaveLength(0);
    await run(Date.now() + 2 * MINUTE);
    expect((await transactionsOf(t(), upgradeId)).map((row) => row.type)).toEqual(['payment']);
    expect(await refundMails(clientId)).toHaveLength(0);
  });

  it('a payment of the wrong amount is left to staff, not refunded by itself', async () => {
    const bought = await purchase(t(), planA);
    const session = await startCardPayment(stand, bought.hash);
    const events = stand.stripe.completeSession(session, { amount: 999 });
    for (const event of events) expect((await deliver(stand, event)).status).toBe(200);
    await run(Date.now() + 2 * MINUTE);
    expect(refundRequests(intentOf(events))).toHaveLength(0);
    expect((await transactionsOf(t(), bought.invoiceId)).map((row) => [row.type, row.status])).toEqual([['payment', 'error']]);
    expect(await invoice(bought.invoiceId)).toMatchObject({ status: 'unpaid' });
  });
});
