// Issue 20, H1, M2 and L6: one unpaid invoice buys an order time. A renewal is refused (409) while a plan change is
// unpaid and for an order canceled at period end; a renewal line records the plan it renews and a payment for a plan
// the order is no longer on is refused (staff: 409; a provider's payment or an off-session charge: recorded or
// skipped, the invoice voided, nothing applied); an unpaid plan change lapses at the end of the period it was priced
// for. Runs on SQLite, and on PostgreSQL + Redis when TEST_* are set.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inTransaction } from '../src/db/transaction.ts';
import { expectError, expectInvalid } from './helpers/assertions.ts';
import { asClient, makeProduct } from './selling-fixtures.ts';
import { payByCard, purchase, startCardPayment, stripeStand, transactionsOf, type StripeStand } from './stripe-fixtures.ts';
import { deliver } from './stripe-fixtures.ts';

const DAY = 86_400_000;
const monthly = (price: string) => ({ type: 'recurrent', recurrent: { '1M': { price, setup: '0', enabled: true } } });

describe('renewals and plan changes of one order (issue 20: H1, M2, L6)', () => {
  let stand: StripeStand;
  let planA: number;
  let planB: number;

  beforeAll(async () => {
    stand = await stripeStand();
    planA = await makeProduct(stand.t, { title: 'Plan A', setup: 'after_payment', pricing: monthly('10.00') });
    planB = await makeProduct(stand.t, { title: 'Plan B', setup: 'after_payment', pricing: monthly('20.00') });
  });
  afterAll(async () => {
    await stand.close();
  });

  const t = () => stand.t;
  const order = async (id: number) => (await t().admin('order/get', { id })).result;
  const invoice = async (id: number) => (await t().admin('invoice/get', { id })).result;
  const lines = (invoiceId: number) => t().services.db.selectFrom('invoice_items').selectAll().where('invoice_id', '=', invoiceId).execute();

  /** A client (paying by hand, no card) with an active order on plan A, its first invoice paid. */
  async function orderOnA(): Promise<{ token: string; clientId: number; orderId: number }> {
    const client = await t().createClient();
    await asClient(t(), client.token, 'cart/add_item', { id: planA, period: '1M' });
    const checkout = (await asClient(t(), client.token, 'cart/checkout')).result;
    expect((await t().admin('invoice/mark_as_paid', { id: checkout.invoice_id })).result).toBe(true);
    return { token: client.token, clientId: client.id, orderId: checkout.order_id };
  }

  async function upgrade(token: string, orderId: number): Promise<number> {
    const reply = await asClient(t(), token, 'order/change_plan', { id: orderId, product_id: planB, period: '1M' });
    expect(reply.body.error).toBeNull();
    expect(reply.result).toMatchObject({ change: 'upgrade', effective: 'on_payment' });
    return reply.result.invoice_id as number;
  }

  /** Moves the order onto plan B behind the services' back: the state H1 used to leave (a renewal of A unpaid). */
  async function forcePlanB(orderId: number): Promise<void> {
    await t().services.db.updateTable('orders').set({ product_id: planB, title: 'Plan B', price: 2000 }).where('id', '=', orderId).execute();
  }

  it('H1: refuses a renewal invoice while an upgrade invoice is unpaid; after the upgrade the renewal is priced on B', async () => {
    const { token, orderId } = await orderOnA();
    const upgradeId = await upgrade(token, orderId);
    expectError(await asClient(t(), token, 'invoice/renewal_invoice', { order_id: orderId }), 409);
    // Nothing was issued by the refused call.
    expect((await order(orderId)).unpaid_invoice_id).toBe(upgradeId);
    expect((await t().admin('invoice/mark_as_paid', { id: upgradeId })).result).toBe(true);
    const before = await order(orderId);
    expect(before).toMatchObject({ product_id: planB, price: '20.00' });
    const renewal = (await asClient(t(), token, 'invoice/renewal_invoice', { order_id: orderId })).result as number;
    expect(await invoice(renewal)).toMatchObject({ subtotal: '20.00', items: [{ task: 'renew', price: '20.00', title: expect.stringContaining('Plan B') }] });
    expect(await lines(renewal)).toMatchObject([{ task: 'renew', product_id: planB, period: '1M', price: 2000 }]);
    await t().admin('invoice/mark_as_paid', { id: renewal });
    expect(Date.parse((await order(orderId)).expires_at)).toBeGreaterThan(Date.parse(before.expires_at));
  });

  it('H1, vice versa: refuses a plan change while a renewal is unpaid', async () => {
    const { token, orderId } = await orderOnA();
    const renewal = (await asClient(t(), token, 'invoice/renewal_invoice', { order_id: orderId })).result as number;
    expect(await lines(renewal)).toMatchObject([{ task: 'renew', product_id: planA, price: 1000 }]);
    expectError(await asClient(t(), token, 'order/change_plan', { id: orderId, product_id: planB, period: '1M' }), 409);
    expect((await order(orderId)).product_id).toBe(planA);
  });

  it('H1: a renewal of plan A is never applied to an order on plan B (staff 409, provider payment recorded, invoice voided)', async () => {
    const { token, orderId } = await orderOnA();
    const renewal = (await asClient(t(), token, 'invoice/renewal_invoice', { order_id: orderId })).result as number;
    await forcePlanB(orderId);
    const before = await order(orderId);
    expectError(await t().admin('invoice/mark_as_paid', { id: renewal }), 409);
    expect(await invoice(renewal)).toMatchObject({ status: 'unpaid' });
    // A provider's payment of it arriving anyway: recorded for staff to refund, never applied; the invoice is voided.
    const gateway = t().services.gateways.byCode('custom')!;
    const outcome = await inTransaction(t().services.db, (trx) =>
      t().services.invoicePayments.applyPayment(trx, gateway, { invoiceId: renewal, ref: 'late-1', amount: 1000, currency: 'USD' }, new Date()),
    );
    expect(outcome).toBe('error');
    expect(await transactionsOf(t(), renewal)).toMatchObject([{ type: 'payment', status: 'error', amount: 1000, message: expect.stringContaining('refunded') }]);
    expect(await invoice(renewal)).toMatchObject({ status: 'canceled' });
    expect(await order(orderId)).toMatchObject({ expires_at: before.expires_at, product_id: planB });
  });

  it('H1: staff moving the order to another price cancels the renewal issued for the old one', async () => {
    const { token, orderId } = await orderOnA();
    const renewal = (await asClient(t(), token, 'invoice/renewal_invoice', { order_id: orderId })).result as number;
    expect((await t().admin('order/update', { id: orderId, price: '25.00' })).result).toBe(true);
    expect(await invoice(renewal)).toMatchObject({ status: 'canceled' });
    const next = (await asClient(t(), token, 'invoice/renewal_invoice', { order_id: orderId })).result as number;
    expect(next).not.toBe(renewal);
    expect(await invoice(next)).toMatchObject({ subtotal: '25.00' });
    // Notes alone leave the renewal as it is.
    await t().admin('order/update', { id: orderId, notes: 'VIP' });
    expect(await invoice(next)).toMatchObject({ status: 'unpaid' });
  });

  it('H1: the scheduler issues no renewal while an upgrade is unpaid, and issues it once the upgrade lapses', async () => {
    const { token, orderId } = await orderOnA();
    const upgradeId = await upgrade(token, orderId);
    const expires = Date.parse((await order(orderId)).expires_at);
    const report = await t().services.cron.run(new Date(expires - DAY));
    expect(report.failed).toBe(0);
    expect((await order(orderId)).unpaid_invoice_id).toBe(upgradeId);
    const after = await t().services.cron.run(new Date(expires + 1000));
    expect(after.plan_changes_voided).toBeGreaterThanOrEqual(1);
    expect(await invoice(upgradeId)).toMatchObject({ status: 'canceled' });
    const renewalId = (await order(orderId)).unpaid_invoice_id as number;
    expect(renewalId).not.toBe(upgradeId);
    expect(await invoice(renewalId)).toMatchObject({ subtotal: '10.00', items: [{ task: 'renew' }] });
  });

  it('H1: of a renewal and a plan change asked at once, exactly one is issued', async () => {
    // Sent in both orders: whichever is served first wins and the other answers 409.
    for (let round = 0; round < 4; round++) {
      const { token, orderId } = await orderOnA();
      const renew = () => asClient(t(), token, 'invoice/renewal_invoice', { order_id: orderId });
      const change = () => asClient(t(), token, 'order/change_plan', { id: orderId, product_id: planB, period: '1M' });
      const replies = await Promise.all(round % 2 === 0 ? [renew(), change()] : [change(), renew()]);
      expect(replies.map((reply) => reply.status).toSorted((a, b) => a - b)).toEqual([200, 409]);
      const unpaid = await t()
        .services.db.selectFrom('invoice_items')
        .innerJoin('invoices', 'invoices.id', 'invoice_items.invoice_id')
        .select('invoices.id')
        .where('invoice_items.order_id', '=', orderId)
        .where('invoices.status', '=', 'unpaid')
        .execute();
      expect(unpaid).toHaveLength(1);
    }
  });

  it('M2: an unpaid upgrade is voided at the end of the period it was priced for; paying it then is never applied', async () => {
    const { token, orderId } = await orderOnA();
    const upgradeId = await upgrade(token, orderId);
    expect(await lines(upgradeId)).toMatchObject([{ task: 'change', product_id: planB, priced_until: (await order(orderId)).expires_at, credit: expect.any(Number) }]);
    const expires = Date.parse((await order(orderId)).expires_at);
    // Still payable inside the period: the scheduler leaves it.
    expect((await t().services.cron.run(new Date(expires - 1000))).failed).toBe(0);
    expect(await invoice(upgradeId)).toMatchObject({ status: 'unpaid' });
    await t().services.cron.run(new Date(expires + 1000));
    expect(await invoice(upgradeId)).toMatchObject({ status: 'canceled' });
    expectError(await t().admin('invoice/mark_as_paid', { id: upgradeId }), 409);
    const gateway = t().services.gateways.byCode('custom')!;
    const total = Math.round(Number((await invoice(upgradeId)).total) * 100);
    const outcome = await inTransaction(t().services.db, (trx) =>
      t().services.invoicePayments.applyPayment(trx, gateway, { invoiceId: upgradeId, ref: 'late-2', amount: total, currency: 'USD' }, new Date(expires + 2000)),
    );
    expect(outcome).toBe('error');
    expect(await order(orderId)).toMatchObject({ product_id: planA, status: 'suspended' });
  });

  it('M2: without the scheduler, a payment after the priced period is refused (staff) and not applied (provider)', async () => {
    const { token, orderId } = await orderOnA();
    const upgradeId = await upgrade(token, orderId);
    const expires = Date.parse((await order(orderId)).expires_at);
    await expect(t().services.invoices.markAsPaid(upgradeId, {}, new Date(expires + 1000))).rejects.toMatchObject({ status: 409 });
    const gateway = t().services.gateways.byCode('custom')!;
    const total = Math.round(Number((await invoice(upgradeId)).total) * 100);
    const outcome = await inTransaction(t().services.db, (trx) =>
      t().services.invoicePayments.applyPayment(trx, gateway, { invoiceId: upgradeId, ref: 'late-3', amount: total, currency: 'USD' }, new Date(expires + 1000)),
    );
    expect(outcome).toBe('error');
    expect(await invoice(upgradeId)).toMatchObject({ status: 'canceled' });
    expect(await transactionsOf(t(), upgradeId)).toMatchObject([{ status: 'error', message: expect.stringContaining('lapsed') }]);
    expect(await order(orderId)).toMatchObject({ product_id: planA, expires_at: new Date(expires).toISOString().replace(/\.\d{3}Z$/, 'Z') });
  });

  it('M2: a card payment of an upgrade completed after it lapsed is recorded as an error, not applied', async () => {
    const bought = await purchase(t(), planA);
    await payByCard(stand, bought.hash);
    const reply = await asClient(t(), bought.token, 'order/change_plan', { id: bought.orderId, product_id: planB, period: '1M' });
    const upgradeId = reply.result.invoice_id as number;
    const session = await startCardPayment(stand, (await invoice(upgradeId)).hash);
    // The priced period ends before the card payment completes (as if the scheduler had not run yet).
    await t().services.db.updateTable('invoice_items').set({ priced_until: '2000-01-01T00:00:00Z' }).where('invoice_id', '=', upgradeId).execute();
    for (const event of stand.stripe.completeSession(session)) expect((await deliver(stand, event)).status).toBe(200);
    expect(await order(bought.orderId)).toMatchObject({ product_id: planA });
    expect(await invoice(upgradeId)).toMatchObject({ status: 'canceled' });
    expect((await transactionsOf(t(), upgradeId)).map((row) => row.status)).toEqual(['error']);
  });

  it('L6: no renewal invoice for an order canceled at period end until uncancel', async () => {
    const { token, orderId } = await orderOnA();
    expect((await asClient(t(), token, 'order/cancel', { id: orderId })).result).toBe(true);
    expectError(await asClient(t(), token, 'invoice/renewal_invoice', { order_id: orderId }), 409);
    const expires = Date.parse((await order(orderId)).expires_at);
    expect((await t().services.cron.run(new Date(expires - DAY))).failed).toBe(0);
    expect((await order(orderId)).unpaid_invoice_id).toBeNull();
    expect((await asClient(t(), token, 'order/uncancel', { id: orderId })).result).toBe(true);
    const renewal = await asClient(t(), token, 'invoice/renewal_invoice', { order_id: orderId });
    expect(renewal.body.error).toBeNull();
    // Canceling again cancels that renewal, and a payment of it is refused.
    await asClient(t(), token, 'order/cancel', { id: orderId });
    expect(await invoice(renewal.result)).toMatchObject({ status: 'canceled' });
    expectError(await t().admin('invoice/mark_as_paid', { id: renewal.result }), 409);
  });

  it('L6: a renewal left unpaid for an order canceled at period end is refused at payment', async () => {
    const { token, orderId } = await orderOnA();
    const renewal = (await asClient(t(), token, 'invoice/renewal_invoice', { order_id: orderId })).result as number;
    // The cancellation recorded without its event (as before this fix): the invoice is still unpaid.
    await t().services.db.updateTable('orders').set({ cancel_at_period_end: 1 }).where('id', '=', orderId).execute();
    const before = await order(orderId);
    expectError(await t().admin('invoice/mark_as_paid', { id: renewal }), 409);
    expect((await order(orderId)).expires_at).toBe(before.expires_at);
  });

  it('L6 and H1: auto-pay charges no card for a renewal the order no longer takes', async () => {
    const run = () => t().services.outbox.runDue(new Date());
    const intents = (invoiceId: number) => stand.stripe.requestsTo('POST', '/v1/payment_intents').filter((request) => (request.body.metadata as { invoice_id: string }).invoice_id === String(invoiceId));
    for (const spoil of ['canceled at period end', 'moved to plan B'] as const) {
      const bought = await purchase(t(), planA);
      await payByCard(stand, bought.hash);
      const renewal = (await asClient(t(), bought.token, 'invoice/renewal_invoice', { order_id: bought.orderId })).result as number;
      const before = await order(bought.orderId);
      if (spoil === 'canceled at period end') await t().services.db.updateTable('orders').set({ cancel_at_period_end: 1 }).where('id', '=', bought.orderId).execute();
      else await forcePlanB(bought.orderId);
      await run();
      expect(intents(renewal), spoil).toHaveLength(0);
      expect(await invoice(renewal)).toMatchObject({ status: 'canceled' });
      expect((await order(bought.orderId)).expires_at).toBe(before.expires_at);
    }
    // The same customer's renewal that is still valid is charged: the guard refuses only stale ones.
    const bought = await purchase(t(), planA);
    await payByCard(stand, bought.hash);
    const renewal = (await asClient(t(), bought.token, 'invoice/renewal_invoice', { order_id: bought.orderId })).result as number;
    await run();
    expect(intents(renewal)).toHaveLength(1);
    expect(await invoice(renewal)).toMatchObject({ status: 'paid' });
  });

  it('answers the failure paths in the envelope', async () => {
    const { token, orderId } = await orderOnA();
    const other = await t().createClient();
    expectError(await asClient(t(), other.token, 'invoice/renewal_invoice', { order_id: orderId }), 404);
    expectInvalid(await asClient(t(), token, 'invoice/renewal_invoice', {}), 'order_id');
    expectInvalid(await asClient(t(), token, 'invoice/renewal_invoice', { order_id: 'x' }), 'order_id');
    expectError(await t().call('/api/client/invoice/renewal_invoice', { order_id: orderId }), 201, 401);
    expectError(await asClient(t(), token, 'invoice/renewal_invoice', { order_id: 999_999 }), 404);
  });
});
