// A top-up invoice paid by card (issue 24): the wallet is credited by the Stripe webhook, once, however many times and
// however concurrently Stripe delivers the events of that payment.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectLedgerConsistent } from '../../helpers/credit-ledger.ts';
import { asClient } from '../../helpers/selling-fixtures.ts';
import { deliver, startCardPayment, stripeStand, type StripeStand } from '../../helpers/stripe-fixtures.ts';

describe('a top-up paid by card', () => {
  let stand: StripeStand;
  beforeAll(async () => {
    stand = await stripeStand();
  });
  afterAll(async () => {
    await stand.close();
  });

  it('credits the wallet once under 20 concurrent deliveries of each event', async () => {
    const { t, stripe } = stand;
    const client = await t.createClient();
    const hash = (await asClient(t, client.token, 'invoice/funds_invoice', { amount: '42.00' })).result as string;
    const session = await startCardPayment(stand, hash);
    const events = stripe.completeSession(session);
    expect(events.length).toBeGreaterThan(0);
    const replies = await Promise.all(events.flatMap((event) => Array.from({ length: 20 }, () => deliver(stand, event))));
    // Under load a delivery may answer 5xx (a call back to Stripe slower than STRIPE_TIMEOUT_MS): Stripe then delivers
    // it again, as here. What counts is that nothing is written twice.
    expect(replies.filter((reply) => reply.status !== 200 && reply.status < 500).map((reply) => [reply.status, reply.body])).toEqual([]);
    for (const event of events) expect((await deliver(stand, event)).status).toBe(200);
    expect((await t.call('/api/guest/invoice/get', { hash })).result.status).toBe('paid');
    expect((await asClient(t, client.token, 'client/balance_get_total')).result).toBe('42.00');
    const lines = (await asClient(t, client.token, 'client/balance_get_list')).result.list;
    expect(lines).toEqual([expect.objectContaining({ type: 'top_up', amount: '42.00' })]);
    await expectLedgerConsistent(t.services.db);
  });
});
