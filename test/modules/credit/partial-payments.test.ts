// Paying an invoice partly from the balance (issue 24): pay_with_credits with `amount` applies part of the balance to
// an unpaid invoice (a `consume` line; the invoice shows credit_applied and amount_due), a card then pays only the
// rest (Stripe Checkout and off-session), and the invoice is paid once however often the payment is reported. Every
// refusal is a clear 4xx; concurrent applies never take more than is due or than the balance holds; a canceled
// invoice gives its applied credit back; a Checkout started before the apply pays the whole total and the balance gets
// its part back; a refund gives the balance's part back to the balance first. Runs on SQLite, and on PostgreSQL +
// Redis when TEST_* are set.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { expectInvalid } from '../../helpers/assertions.ts';
import { expectLedgerConsistent } from '../../helpers/credit-ledger.ts';
import { asClient, asStaff, expectError, makeProduct, staffWith } from '../../helpers/selling-fixtures.ts';
import { deliver, payByCard, purchase, startCardPayment, stripeStand, transactionsOf, type StripeStand } from '../../helpers/stripe-fixtures.ts';

describe('paying an invoice partly from the balance', () => {
  let stand: StripeStand;
  let plan: number;
  beforeAll(async () => {
    stand = await stripeStand();
    plan = await makeProduct(stand.t, { title: 'Ten a month' });
  });
  afterEach(async () => {
    await expectLedgerConsistent(stand.t.services.db);
    expect((await stand.t.admin('system/settings_update', { credits_pay_invoices: false })).body.error).toBeNull();
  });
  afterAll(async () => {
    await stand.close();
  });

  const t = () => stand.t;
  const total = async (token: string) => (await asClient(t(), token, 'client/balance_get_total')).result as string;
  const fund = async (clientId: number, amount: string) => expect((await t().admin('client/balance_add_funds', { id: clientId, amount, description: 'Funds' })).result).toBe(true);
  const invoice = async (id: number) => (await t().admin('invoice/get', { id })).result;
  const apply = (token: string, params: Record<string, unknown>) => asClient(t(), token, 'invoice/pay_with_credits', params);

  it('applies part of the balance; Stripe Checkout then charges only the rest, and the invoice is paid once', async () => {
    const bought = await purchase(t(), plan);
    await fund(bought.clientId, '4');
    expect((await apply(bought.token, { id: bought.invoiceId, amount: '4' })).result).toBe(true);
    expect(await invoice(bought.invoiceId)).toMatchObject({ status: 'unpaid', total: '10.00', credit_applied: '4.00', amount_due: '6.00' });
    expect((await t().call('/api/guest/invoice/get', { hash: bought.hash })).result).toMatchObject({ credit_applied: '4.00', amount_due: '6.00' });
    expect(await total(bought.token)).toBe('0.00');
    const lines = (await asClient(t(), bought.token, 'client/balance_get_list', { type: 'consume' })).result.list;
    expect(lines).toEqual([expect.objectContaining({ type: 'consume', amount: '-4.00', invoice_id: bought.invoiceId })]);
    // The PDF says it too.
    const pdf = await t().app.inject({ method: 'GET', url: `/api/guest/invoice/pdf?hash=${bought.hash}` });
    const file = join(mkdtempSync(join(tmpdir(), 'tollgate-part-')), 'invoice.pdf');
    writeFileSync(file, pdf.rawPayload);
    const text = execFileSync('pdftotext', ['-layout', file, '-'], { encoding: 'utf8' });
    expect(text).toMatch(/Paid from balance\s+-4\.00/);
    expect(text).toMatch(/Amount due\s+6\.00/);
    // The order waits for the rest.
    expect((await t().admin('order/get', { id: bought.orderId })).result.status).toBe('pending_setup');
    const session = await startCardPayment(stand, bought.hash);
    expect(stand.stripe.sessions.get(session)).toMatchObject({ amount_total: 600 });
    const events = stand.stripe.completeSession(session);
    const replies = await Promise.all(events.flatMap((event) => Array.from({ length: 5 }, () => deliver(stand, event))));
    expect(replies.filter((reply) => reply.status !== 200 && reply.status < 500)).toEqual([]);
    for (const event of events) expect((await deliver(stand, event)).status).toBe(200);
    expect(await invoice(bought.invoiceId)).toMatchObject({ status: 'paid', credit_applied: '4.00', amount_due: '0.00' });
    expect((await transactionsOf(t(), bought.invoiceId)).map((row) => [row.type, row.status, row.gateway, row.amount])).toEqual([['payment', 'processed', 'stripe', 600]]);
    expect((await t().admin('order/get', { id: bought.orderId })).result.status).toBe('active');
    expect(await total(bought.token)).toBe('0.00');
  });

  it('refuses bad amounts (422), more than the balance (409), another client (404), a paid or top-up invoice (409), without the permission (403)', async () => {
    const bought = await purchase(t(), plan);
    const other = await t().createClient();
    await fund(bought.clientId, '5');
    await fund(other.id, '50');
    for (const amount of ['0', '-1', '0.001', 'abc', '', 0, -2, '10.01', 10.5]) {
      expectInvalid(await apply(bought.token, { id: bought.invoiceId, amount }), 'amount');
      expectInvalid(await t().admin('invoice/pay_with_credits', { id: bought.invoiceId, amount }), 'amount');
    }
    expectInvalid(await apply(bought.token, { id: bought.invoiceId, amount: { value: 1 } }), 'amount');
    const short = await apply(bought.token, { id: bought.invoiceId, amount: '6' });
    expectError(short, 409);
    expect(short.body.error!.message).toContain('6.00');
    expectError(await apply(other.token, { id: bought.invoiceId, amount: '1' }), 404);
    expectError(await apply(other.token, { hash: bought.hash, amount: '1' }), 404);
    const viewer = await staffWith(t(), ['invoice.view']);
    expectError(await asStaff(t(), viewer, 'invoice/pay_with_credits', { id: bought.invoiceId, amount: '1' }), 403);
    expect(await total(bought.token)).toBe('5.00');
    expect(await total(other.token)).toBe('50.00');
    expect((await invoice(bought.invoiceId)).credit_applied).toBe('0.00');
    // Staff apply part, by hash the client the rest of what the balance holds is refused when it is short of the due.
    expect((await t().admin('invoice/pay_with_credits', { id: bought.invoiceId, amount: '2.50' })).result).toBe(true);
    expectError(await apply(bought.token, { hash: bought.hash }), 409);
    expect(await invoice(bought.invoiceId)).toMatchObject({ credit_applied: '2.50', amount_due: '7.50' });
    // Applying exactly what is due pays the invoice.
    await fund(bought.clientId, '5');
    expect((await apply(bought.token, { hash: bought.hash, amount: '7.50' })).result).toBe(true);
    expect(await invoice(bought.invoiceId)).toMatchObject({ status: 'paid', credit_applied: '2.50' });
    expect((await transactionsOf(t(), bought.invoiceId)).map((row) => [row.gateway, row.amount])).toEqual([['credits', 750]]);
    expect(await total(bought.token)).toBe('0.00');
    expectError(await apply(bought.token, { id: bought.invoiceId, amount: '1' }), 409);
    const topUp = await t().call('/api/guest/invoice/get', { hash: (await asClient(t(), bought.token, 'invoice/funds_invoice', { amount: '5' })).result });
    await fund(bought.clientId, '1');
    expectError(await apply(bought.token, { id: topUp.result.id, amount: '1' }), 409);
  });

  it('never takes more than is due or than the balance holds under concurrent applies', async () => {
    const bought = await purchase(t(), plan);
    await fund(bought.clientId, '7');
    const replies = await Promise.all(
      Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? apply(bought.token, { id: bought.invoiceId, amount: '3' }) : t().admin('invoice/pay_with_credits', { id: bought.invoiceId, amount: '3' }))),
    );
    expect(replies.filter((reply) => reply.status === 200)).toHaveLength(2);
    expect(replies.filter((reply) => reply.status !== 200).every((reply) => reply.status === 409)).toBe(true);
    expect(await invoice(bought.invoiceId)).toMatchObject({ credit_applied: '6.00', amount_due: '4.00' });
    expect(await total(bought.token)).toBe('1.00');
    // More than is due: with a balance that holds it, concurrent applies of 3 stop at what is due.
    await fund(bought.clientId, '20');
    const more = await Promise.all(Array.from({ length: 6 }, () => apply(bought.token, { id: bought.invoiceId, amount: '3' })));
    expect(more.filter((reply) => reply.status === 200)).toHaveLength(1);
    expect(more.filter((reply) => reply.status !== 200).every((reply) => reply.status === 409 || reply.status === 422)).toBe(true);
    expect(await invoice(bought.invoiceId)).toMatchObject({ status: 'unpaid', credit_applied: '9.00', amount_due: '1.00' });
    expect(await total(bought.token)).toBe('18.00');
    // The rest, paid twice at once: paid once.
    const rest = await Promise.all(Array.from({ length: 5 }, () => apply(bought.token, { id: bought.invoiceId })));
    expect(rest.filter((reply) => reply.status === 200)).toHaveLength(1);
    expect(await invoice(bought.invoiceId)).toMatchObject({ status: 'paid' });
    expect(await total(bought.token)).toBe('17.00');
  });

  it('a canceled invoice gives the applied credit back to the balance, once', async () => {
    const bought = await purchase(t(), plan);
    await fund(bought.clientId, '4');
    expect((await apply(bought.token, { id: bought.invoiceId, amount: '4' })).result).toBe(true);
    expect(await total(bought.token)).toBe('0.00');
    const replies = await Promise.all(Array.from({ length: 5 }, () => t().admin('invoice/cancel', { id: bought.invoiceId })));
    expect(replies.filter((reply) => reply.status === 200)).toHaveLength(1);
    expect(await invoice(bought.invoiceId)).toMatchObject({ status: 'canceled', credit_applied: '0.00' });
    expect(await total(bought.token)).toBe('4.00');
  });

  it('a Checkout for the whole total started before the apply pays the invoice, and the balance gets its part back', async () => {
    const bought = await purchase(t(), plan);
    const session = await startCardPayment(stand, bought.hash);
    await fund(bought.clientId, '3');
    expect((await apply(bought.token, { id: bought.invoiceId, amount: '3' })).result).toBe(true);
    for (const event of stand.stripe.completeSession(session)) expect((await deliver(stand, event)).status).toBe(200);
    expect(await invoice(bought.invoiceId)).toMatchObject({ status: 'paid', credit_applied: '0.00' });
    expect((await transactionsOf(t(), bought.invoiceId)).map((row) => [row.status, row.amount])).toEqual([['processed', 1000]]);
    expect(await total(bought.token)).toBe('3.00');
  });

  it('a Checkout for the whole total reported while the client applies part of the balance: paid once, the part back, never a 500', async () => {
    // The webhook locks the invoice and then (to give the applied part back) the account; the apply locks the account
    // and then the invoice. On PostgreSQL the two may deadlock: PostgreSQL undoes one, which answers 503 "send it
    // again" — the client resends, Stripe redelivers — and nothing of it was kept. Whatever the interleaving, each
    // round ends with the invoice paid once and the balance whole.
    for (let round = 0; round < 30; round += 1) {
      const bought = await purchase(t(), plan);
      const session = await startCardPayment(stand, bought.hash);
      await fund(bought.clientId, '3');
      const events = stand.stripe.completeSession(session);
      // One side a little later each round (0–14 ms, the apply in even rounds, the webhook in odd ones), so the two
      // meet at different points of each other's work.
      const wait = (side: number) => new Promise((resolve) => setTimeout(resolve, round % 2 === side ? Math.floor(round / 2) : 0));
      const [applied, ...delivered] = await Promise.all([
        wait(0).then(() => apply(bought.token, { id: bought.invoiceId, amount: '3' })),
        ...events.map((event) => wait(1).then(() => deliver(stand, event))),
      ]);
      expect([200, 409, 503], JSON.stringify(applied.body)).toContain(applied.status);
      for (const [index, reply] of delivered.entries()) {
        expect([200, 503], JSON.stringify(reply.body)).toContain(reply.status);
        // Stripe redelivers what was not acknowledged.
        if (reply.status !== 200) expect((await deliver(stand, events[index]!)).status).toBe(200);
      }
      expect(await invoice(bought.invoiceId), `round ${round}`).toMatchObject({ status: 'paid', credit_applied: '0.00' });
      expect((await transactionsOf(t(), bought.invoiceId)).filter((row) => row.type === 'payment' && row.status === 'processed').map((row) => row.amount)).toEqual([1000]);
      expect(await total(bought.token)).toBe('3.00');
      await expectLedgerConsistent(t().services.db);
    }
  });

  it('with credits_pay_invoices on, a renewal takes what the balance holds and the saved card is charged only the rest', async () => {
    const bought = await purchase(t(), plan);
    await payByCard(stand, bought.hash);
    await fund(bought.clientId, '4');
    expect((await t().admin('system/settings_update', { credits_pay_invoices: true })).body.error).toBeNull();
    const renewal = (await asClient(t(), bought.token, 'invoice/renewal_invoice', { order_id: bought.orderId })).result as number;
    expect(await invoice(renewal)).toMatchObject({ status: 'unpaid', credit_applied: '4.00', amount_due: '6.00' });
    expect(await total(bought.token)).toBe('0.00');
    await t().services.outbox.runDue(new Date());
    const intents = stand.stripe.requestsTo('POST', '/v1/payment_intents').filter((request) => (request.body.metadata as { invoice_id: string }).invoice_id === String(renewal));
    expect(intents.map((request) => request.body.amount)).toEqual(['600']);
    expect(await invoice(renewal)).toMatchObject({ status: 'paid', credit_applied: '4.00' });
    expect((await transactionsOf(t(), renewal)).map((row) => [row.gateway, row.amount])).toEqual([['stripe', 600]]);
  });

  it("a refund gives the balance's part back to the balance first, then refunds the card", async () => {
    const bought = await purchase(t(), plan);
    await fund(bought.clientId, '4');
    expect((await apply(bought.token, { id: bought.invoiceId, amount: '4' })).result).toBe(true);
    await payByCard(stand, bought.hash);
    // 5 of 10: 4 to the balance, 1 to the card.
    expect((await t().admin('invoice/refund', { id: bought.invoiceId, amount: '5' })).body.error).toBeNull();
    expect(await total(bought.token)).toBe('4.00');
    const refunds = () => stand.stripe.requestsTo('POST', '/v1/refunds').filter((request) => stand.stripe.intents.get(String(request.body.payment_intent))?.metadata !== undefined && (stand.stripe.intents.get(String(request.body.payment_intent))!.metadata as { invoice_id?: string }).invoice_id === String(bought.invoiceId));
    expect(refunds().map((request) => request.body.amount)).toEqual(['100']);
    expect((await invoice(bought.invoiceId)).status).toBe('paid');
    // The rest: all to the card; the balance gets nothing more.
    expect((await t().admin('invoice/refund', { id: bought.invoiceId })).body.error).toBeNull();
    expect(refunds().map((request) => request.body.amount)).toEqual(['100', '500']);
    expect(await total(bought.token)).toBe('4.00');
    expect((await invoice(bought.invoiceId)).status).toBe('refunded');
    // Stripe's own charge.refunded events arriving afterwards change nothing.
    for (const event of stand.stripe.events.filter((candidate) => candidate.type === 'charge.refunded')) expect((await deliver(stand, event)).status).toBe(200);
    expect(await total(bought.token)).toBe('4.00');
    const rows = await transactionsOf(t(), bought.invoiceId);
    expect(rows.filter((row) => row.type === 'refund').map((row) => [row.gateway, row.amount])).toEqual([['credits', 400], ['stripe', 100], ['stripe', 500]]);
    expect((await t().admin('invoice/credit_note_get_list', { invoice_id: bought.invoiceId })).result.list).toHaveLength(3);
  });
});
