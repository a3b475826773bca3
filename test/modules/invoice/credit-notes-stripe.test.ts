// Credit notes for card refunds (issue 24 item 8), against the Stripe stand-in: a staff refund through Stripe makes
// exactly one note, however often its `charge.refunded` event arrives; a refund made in Stripe's dashboard (only the
// event) makes one too. Runs on SQLite, and on
// PostgreSQL + Redis when TEST_* are set.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeProduct } from '../../helpers/selling-fixtures.ts';
import { deliver, payByCard, purchase, stripeStand, transactionsOf, type StripeStand } from '../../helpers/stripe-fixtures.ts';

describe('credit notes for card refunds', () => {
  let stand: StripeStand;
  let plan: number;
  beforeAll(async () => {
    stand = await stripeStand();
    plan = await makeProduct(stand.t, { title: 'Card plan' });
  });
  afterAll(async () => {
    await stand.close();
  });

  const notesOf = async (invoiceId: number) => (await stand.t.admin('invoice/credit_note_get_list', { invoice_id: invoiceId })).result.list.toReversed();

  it('a staff refund through Stripe makes one note, also when its event arrives twice; a dashboard refund makes one more', async () => {
    const { t, stripe } = stand;
    const bought = await purchase(t, plan);
    const [, succeeded] = await payByCard(stand, bought.hash);
    expect((await t.admin('invoice/refund', { id: bought.invoiceId, amount: '3.00', reason: 'Unused days' })).result).toBe(true);
    const event = stripe.events.at(-1)!;
    expect(event.type).toBe('charge.refunded');
    for (let n = 0; n < 3; n += 1) expect((await deliver(stand, event)).status).toBe(200);
    let notes = await notesOf(bought.invoiceId);
    expect(notes).toHaveLength(1);
    const refunds = (await transactionsOf(t, bought.invoiceId)).filter((row) => row.type === 'refund');
    expect(notes[0]).toMatchObject({ method: 'refund', reason: 'Unused days', total: '3.00', transaction_id: refunds[0]!.id });
    // The rest refunded in Stripe's dashboard: only the event tells Tollgate.
    const charge = [...stripe.charges.values()].find((row) => row.payment_intent === succeeded!.data.object.id)!;
    charge.amount_refunded = 1000;
    charge.refunded = true;
    const full = stripe.event('charge.refunded', charge);
    expect((await deliver(stand, full)).status).toBe(200);
    expect((await deliver(stand, full)).status).toBe(200);
    notes = await notesOf(bought.invoiceId);
    expect(notes.map((row: { total: string; method: string }) => [row.method, row.total])).toEqual([
      ['refund', '3.00'],
      ['refund', '7.00'],
    ]);
    expect(await t.admin('invoice/get', { id: bought.invoiceId }).then((reply) => reply.result)).toMatchObject({ status: 'refunded', credited: '10.00' });
  });

  it('after a credit to the balance, a card refund gives back only the rest and ends the invoice refunded', async () => {
    const { t } = stand;
    const bought = await purchase(t, plan);
    await payByCard(stand, bought.hash);
    expect((await t.admin('invoice/credit_note_create', { invoice_id: bought.invoiceId, reason: 'Outage', amount: '4.00' })).status).toBe(200);
    // More than is left (6.00) is refused before Stripe is asked.
    expect((await t.admin('invoice/refund', { id: bought.invoiceId, amount: '6.01' })).status).toBe(422);
    expect((await t.admin('invoice/refund', { id: bought.invoiceId })).result).toBe(true);
    const refunds = (await transactionsOf(t, bought.invoiceId)).filter((row) => row.type === 'refund');
    expect(refunds.map((row) => row.amount)).toEqual([600]);
    expect((await notesOf(bought.invoiceId)).map((row: { method: string; total: string }) => [row.method, row.total])).toEqual([
      ['balance', '4.00'],
      ['refund', '6.00'],
    ]);
    expect((await t.admin('invoice/get', { id: bought.invoiceId })).result).toMatchObject({ status: 'refunded', credited: '10.00' });
    expect((await t.call('/api/client/client/balance_get_total', {}, { basic: ['client', bought.token] })).result).toBe('4.00');
  });

  it('concurrent staff refunds through Stripe: one refund, one note', async () => {
    const { t } = stand;
    const bought = await purchase(t, plan);
    await payByCard(stand, bought.hash);
    const replies = await Promise.all(Array.from({ length: 5 }, () => t.admin('invoice/refund', { id: bought.invoiceId })));
    expect(replies.filter((reply) => reply.status === 200).length).toBeGreaterThanOrEqual(1);
    const notes = await notesOf(bought.invoiceId);
    expect(notes).toHaveLength(1);
    expect(notes[0]).toMatchObject({ method: 'refund', total: '10.00' });
    expect((await transactionsOf(t, bought.invoiceId)).filter((row) => row.type === 'refund')).toHaveLength(1);
  });
});
