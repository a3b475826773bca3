// Auto-recharge (issue 24 item 3) through the Stripe stand-in: the settings and their refusals (no saved card, bad
// amounts, limits); a debit that takes the balance below the threshold charges the saved card once per crossing (ten
// concurrent debits cross once; a debit that stays above does not charge; a second crossing charges again), the paid
// charge credits the wallet once; turned on below the threshold it charges at once; a declined card follows the
// dunning schedule and mails the client; turning it off stops the retries. Runs on SQLite, and on PostgreSQL + Redis
// when TEST_* are set.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { expectInvalid } from '../../helpers/assertions.ts';
import { expectLedgerConsistent } from '../../helpers/credit-ledger.ts';
import { asClient, expectError } from '../../helpers/selling-fixtures.ts';
import { payByCard, stripeStand, type StripeStand } from '../../helpers/stripe-fixtures.ts';

const DAY = 86_400_000;

describe('auto-recharge', () => {
  let stand: StripeStand;
  beforeAll(async () => {
    stand = await stripeStand();
  });
  beforeEach(() => {
    stand.stripe.chargeQueue.length = 0;
  });
  afterEach(async () => {
    await expectLedgerConsistent(stand.t.services.db);
    expect((await stand.t.admin('system/settings_update', { funds_min_amount: '', funds_max_amount: '' })).body.error).toBeNull();
  });
  afterAll(async () => {
    await stand.close();
  });

  const total = async (token: string) => (await asClient(stand.t, token, 'client/balance_get_total')).result as string;
  const spend = async (clientId: number, amount: string) =>
    expect((await stand.t.admin('client/balance_add_funds', { id: clientId, amount: `-${amount}`, description: 'Usage' })).body.error).toBeNull();
  /** Runs what is due `ahead` ms from now; the auto_recharge item queues the card_charge item: two rounds. */
  const run = async (ahead = 0) => {
    await stand.t.services.outbox.runDue(new Date(Date.now() + ahead));
    await stand.t.services.outbox.runDue(new Date(Date.now() + ahead));
  };
  const recharges = (clientId: number) => stand.t.services.db.selectFrom('credit_recharges').selectAll().where('client_id', '=', clientId).orderBy('crossing').execute();
  const intentsOf = (invoiceId: number | null) =>
    stand.stripe.requestsTo('POST', '/v1/payment_intents').filter((request) => (request.body.metadata as { invoice_id: string }).invoice_id === String(invoiceId));
  const invoice = async (id: number | null) => (await stand.t.admin('invoice/get', { id })).result;
  const mails = async (clientId: number) => ((await stand.t.admin('email/email_get_list', { client_id: clientId })).result.list as Array<{ template: string }>).map((mail) => mail.template);

  /** A client whose wallet holds `amount` bought by card (so the card is saved). */
  async function cardClient(amount = '10.00') {
    const client = await stand.t.createClient();
    const hash = (await asClient(stand.t, client.token, 'invoice/funds_invoice', { amount })).result as string;
    await payByCard(stand, hash);
    expect(await total(client.token)).toBe(amount);
    return client;
  }

  it('refuses to turn on without a saved card, without amounts, or with bad ones', async () => {
    const bare = await stand.t.createClient();
    expect((await asClient(stand.t, bare.token, 'credit/auto_recharge_get')).result).toEqual({ enabled: false, threshold: null, amount: null, currency: 'USD', has_card: false });
    expectError(await asClient(stand.t, bare.token, 'credit/auto_recharge_set', { enabled: true, threshold: '2', amount: '10' }), 409);
    const client = await cardClient();
    const set = (params: Record<string, unknown>) => asClient(stand.t, client.token, 'credit/auto_recharge_set', params);
    expectInvalid(await set({ enabled: true }), 'threshold');
    expectInvalid(await set({ enabled: true, threshold: '2' }), 'amount');
    expectInvalid(await set({ enabled: true, threshold: '0', amount: '10' }), 'threshold');
    expectInvalid(await set({ enabled: true, threshold: '2', amount: '-10' }), 'amount');
    expectInvalid(await set({ enabled: true, threshold: '2', amount: '10.001' }), 'amount');
    expect((await stand.t.admin('system/settings_update', { funds_min_amount: '20', funds_max_amount: '100' })).body.error).toBeNull();
    expectInvalid(await set({ enabled: true, threshold: '2', amount: '10' }), 'amount');
    expectInvalid(await set({ enabled: true, threshold: '2', amount: '101' }), 'amount');
    expect((await set({ enabled: true, threshold: '2', amount: '20' })).result).toEqual({ enabled: true, threshold: '2.00', amount: '20.00', currency: 'USD', has_card: true });
    // Off keeps the amounts; on again without them reuses them.
    expect((await set({ enabled: false })).result).toMatchObject({ enabled: false, threshold: '2.00', amount: '20.00' });
    expect((await set({ enabled: true })).result).toMatchObject({ enabled: true, threshold: '2.00', amount: '20.00' });
    expect(await recharges(client.id)).toEqual([]);
  });

  it('charges the saved card once per crossing and credits the wallet once per charge', async () => {
    const client = await cardClient('10.00');
    expect((await asClient(stand.t, client.token, 'credit/auto_recharge_set', { enabled: true, threshold: '5', amount: '20' })).body.error).toBeNull();
    // Above the threshold: no crossing.
    await spend(client.id, '4.00');
    await run();
    expect(await recharges(client.id)).toEqual([]);
    // Ten concurrent debits, several of them below the threshold: one crossing.
    await Promise.all(Array.from({ length: 10 }, () => stand.t.admin('client/balance_add_funds', { id: client.id, amount: '-0.50', description: 'Usage' })));
    expect(await total(client.token)).toBe('1.00');
    const [first] = await recharges(client.id);
    expect(await recharges(client.id)).toHaveLength(1);
    expect(first).toMatchObject({ crossing: 1, amount: 2000, status: 'pending', invoice_id: null });
    await run();
    await run();
    const [issued] = await recharges(client.id);
    expect(issued).toMatchObject({ status: 'invoiced' });
    expect(intentsOf(issued!.invoice_id)).toHaveLength(1);
    expect(intentsOf(issued!.invoice_id)[0]).toMatchObject({ idempotencyKey: `tollgate-invoice-${issued!.invoice_id}-attempt-1`, body: { amount: '2000', off_session: 'true' } });
    expect(await invoice(issued!.invoice_id)).toMatchObject({ status: 'paid', total: '20.00' });
    expect(await total(client.token)).toBe('21.00');
    const topUps = await stand.t.services.db.selectFrom('credit_entries').select('amount').where('client_id', '=', client.id).where('kind', '=', 'top_up').execute();
    expect(topUps.map((row) => row.amount)).toEqual([1000, 2000]);
    // A second crossing charges again, with its own key.
    await spend(client.id, '17.00');
    await run();
    const both = await recharges(client.id);
    expect(both.map((row) => [row.crossing, row.status])).toEqual([
      [1, 'invoiced'],
      [2, 'invoiced'],
    ]);
    expect(intentsOf(both[1]!.invoice_id)).toHaveLength(1);
    expect(await total(client.token)).toBe('24.00');
    expect(await stand.t.services.db.selectFrom('credit_watches').select('recharge_crossings').where('client_id', '=', client.id).executeTakeFirst()).toEqual({ recharge_crossings: 2 });
  });

  it('charges at once when turned on below the threshold, and not with auto-pay off either way', async () => {
    const client = await cardClient('3.00');
    expect((await asClient(stand.t, client.token, 'profile/update', { auto_pay: false })).body.error).toBeNull();
    expect((await asClient(stand.t, client.token, 'credit/auto_recharge_set', { enabled: true, threshold: '5', amount: '10' })).body.error).toBeNull();
    await run();
    const [row] = await recharges(client.id);
    expect(await invoice(row!.invoice_id)).toMatchObject({ status: 'paid' });
    expect(await total(client.token)).toBe('13.00');
    // Saving the same settings again is no new crossing.
    expect((await asClient(stand.t, client.token, 'credit/auto_recharge_set', { enabled: true, threshold: '5', amount: '10' })).body.error).toBeNull();
    await run();
    expect(await recharges(client.id)).toHaveLength(1);
  });

  it('follows the dunning schedule for a declined card, mails the client, and pays on a later retry', async () => {
    const client = await cardClient('10.00');
    expect((await asClient(stand.t, client.token, 'credit/auto_recharge_set', { enabled: true, threshold: '5', amount: '15' })).body.error).toBeNull();
    stand.stripe.chargeQueue.push('decline');
    await spend(client.id, '6.00');
    await run();
    const [row] = await recharges(client.id);
    expect(intentsOf(row!.invoice_id)).toHaveLength(1);
    expect(await invoice(row!.invoice_id)).toMatchObject({ status: 'unpaid' });
    expect(await total(client.token)).toBe('4.00');
    expect(await mails(client.id)).toContain('invoice_payment_failed');
    // Not before the first retry day; then the card goes through (a new attempt, a new key) and the wallet is credited.
    await run(DAY / 2);
    expect(intentsOf(row!.invoice_id)).toHaveLength(1);
    await run(DAY + 60_000);
    expect(intentsOf(row!.invoice_id).map((request) => request.idempotencyKey)).toEqual([`tollgate-invoice-${row!.invoice_id}-attempt-1`, `tollgate-invoice-${row!.invoice_id}-attempt-2`]);
    expect(await invoice(row!.invoice_id)).toMatchObject({ status: 'paid' });
    expect(await total(client.token)).toBe('19.00');
  });

  it('stops pending retries when turned off', async () => {
    const client = await cardClient('10.00');
    expect((await asClient(stand.t, client.token, 'credit/auto_recharge_set', { enabled: true, threshold: '5', amount: '15' })).body.error).toBeNull();
    stand.stripe.chargeQueue.push('decline');
    await spend(client.id, '6.00');
    await run();
    const [row] = await recharges(client.id);
    expect(await invoice(row!.invoice_id)).toMatchObject({ status: 'unpaid' });
    expect((await asClient(stand.t, client.token, 'credit/auto_recharge_set', { enabled: false })).result).toMatchObject({ enabled: false });
    expect(await invoice(row!.invoice_id)).toMatchObject({ status: 'canceled' });
    for (const days of [1, 3, 5, 6]) await run(days * DAY + 60_000);
    expect(intentsOf(row!.invoice_id)).toHaveLength(1);
    expect(await total(client.token)).toBe('4.00');
    // A crossing not yet issued when it is turned off is stopped, never charged.
    expect((await asClient(stand.t, client.token, 'credit/auto_recharge_set', { enabled: true })).body.error).toBeNull();
    const [, again] = await recharges(client.id);
    expect(again).toMatchObject({ crossing: 2, status: 'pending' });
    expect((await asClient(stand.t, client.token, 'credit/auto_recharge_set', { enabled: false })).body.error).toBeNull();
    await run();
    expect((await recharges(client.id))[1]).toMatchObject({ status: 'stopped', invoice_id: null });
    expect(await total(client.token)).toBe('4.00');
  });
});
