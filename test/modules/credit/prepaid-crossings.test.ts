// Prepaid usage crosses thresholds like any other debit (issue 24 items 2, 3 and 6): tokens drawn from the balance
// that take it below the auto-recharge threshold charge the saved card once and credit the wallet once; below the
// low-balance amount they send one wallet.low_balance delivery and one mail. Usage that stays above, or below, sends
// nothing more. On SQLite, and on PostgreSQL + Redis when TEST_* are set.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { expectLedgerConsistent } from '../../helpers/credit-ledger.ts';
import { asClient, makeProduct } from '../../helpers/selling-fixtures.ts';
import { payByCard, stripeStand, type StripeStand } from '../../helpers/stripe-fixtures.ts';

const PAY_AS_YOU_GO = { type: 'recurrent', recurrent: { '1M': { price: '0', setup: '0', enabled: true } } };
const TOKENS = { code: 'tokens', name: 'Tokens', unit: 'token', aggregation: 'sum', included: 0, overage: { mode: 'per_unit', unit_price: '0.0001' } };

describe('prepaid usage and the balance thresholds', () => {
  let stand: StripeStand;
  let plan: number;
  let webhookId: number;
  let events = 0;

  beforeAll(async () => {
    stand = await stripeStand({ WEBHOOK_ALLOW_PRIVATE: 'true' });
    plan = await makeProduct(stand.t, { title: 'Tokens', type: 'apikey', pricing: PAY_AS_YOU_GO, config: { usage_period: 'calendar_month', prepaid: true, meters: [TOKENS] } });
    const hook = await stand.t.admin('webhook/create', { url: 'http://127.0.0.1:9/hook', events: ['wallet.low_balance'] });
    webhookId = hook.result.id as number;
  });
  afterEach(async () => {
    await expectLedgerConsistent(stand.t.services.db);
  });
  afterAll(async () => {
    await stand.close();
  });

  /** A client whose wallet holds 10.00 paid by card (the card saved), with an order of the plan. */
  async function tokenBuyer() {
    const { t } = stand;
    const client = await t.createClient();
    await payByCard(stand, (await asClient(t, client.token, 'invoice/funds_invoice', { amount: '10.00' })).result as string);
    const orderId = (await t.admin('order/create', { client_id: client.id, product_id: plan, activate: true, period: '1M' })).result as number;
    return { ...client, orderId };
  }
  /** `tokens` ingested for the order: drawn from the balance before the answer. */
  async function use(orderId: number, tokens: number) {
    const reply = await stand.t.admin('usage/ingest', { events: [{ id: `x-${++events}`, order_id: orderId, meter: 'tokens', value: tokens }] });
    expect(reply.result).toMatchObject({ accepted: 1 });
  }
  const total = async (token: string) => (await asClient(stand.t, token, 'client/balance_get_total')).result as string;
  const recharges = (clientId: number) => stand.t.services.db.selectFrom('credit_recharges').select(['crossing', 'status']).where('client_id', '=', clientId).orderBy('crossing').execute();

  it('usage taking the balance below the auto-recharge threshold charges the card once and credits the wallet once', async () => {
    const buyer = await tokenBuyer();
    expect((await asClient(stand.t, buyer.token, 'credit/auto_recharge_set', { enabled: true, threshold: '2', amount: '10' })).body.error).toBeNull();
    await use(buyer.orderId, 70_000);
    expect(await recharges(buyer.id)).toEqual([]);
    // 3.00 → 1.00: a crossing.
    await use(buyer.orderId, 20_000);
    expect(await recharges(buyer.id)).toEqual([{ crossing: 1, status: 'pending' }]);
    // Below the threshold already: no second crossing.
    await use(buyer.orderId, 5_000);
    for (let i = 0; i < 2; i++) await stand.t.services.outbox.runDue(new Date());
    expect((await recharges(buyer.id)).map((row) => row.crossing)).toEqual([1]);
    expect(await total(buyer.token)).toBe('10.50');
  });

  it('usage taking the balance below the low-balance amount alerts once, by webhook and mail', async () => {
    const buyer = await tokenBuyer();
    expect((await asClient(stand.t, buyer.token, 'credit/low_balance_set', { amount: '5' })).body.error).toBeNull();
    await use(buyer.orderId, 40_000);
    await use(buyer.orderId, 20_000);
    await use(buyer.orderId, 10_000);
    expect(await total(buyer.token)).toBe('3.00');
    const deliveries = await stand.t.services.db.selectFrom('webhook_deliveries').select('body').where('webhook_id', '=', webhookId).execute();
    const mine = deliveries.map((row) => JSON.parse(row.body) as { data: { client_id: number; balance: number; threshold: number } }).filter((body) => body.data.client_id === buyer.id);
    expect(mine.map((body) => [body.data.balance, body.data.threshold])).toEqual([[400, 500]]);
    const mails = (await stand.t.admin('email/email_get_list', { client_id: buyer.id })).result.list as Array<{ template: string }>;
    expect(mails.filter((mail) => mail.template === 'wallet_low_balance')).toHaveLength(1);
  });
});
