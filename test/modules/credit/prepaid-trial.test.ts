// The free trial of a prepaid plan (issue 24 items 2 and 7 together): a client who starts the trial has no balance, yet
// the units the trial includes cost nothing and so need no credit — the key works at a zero balance until they are
// used up, then the first use beyond them is drawn as debt and the key answers NO_CREDIT; a top-up lets it through and
// pays the debt first. Calls the trial includes likewise. A prepaid plan without included units still refuses at zero
// at once (prepaid.test.ts). At the end of a pay-as-you-go trial (price 0) nothing is invoiced and usage draws on the
// balance. On SQLite, and on PostgreSQL + Redis when TEST_* are set.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectLedgerConsistent } from '../../helpers/credit-ledger.ts';
import { asClient, makeProduct } from '../../helpers/selling-fixtures.ts';

const FREE_PRICE = { type: 'recurrent', recurrent: { '1M': { price: '0', setup: '0', enabled: true } } };
const TOKENS = { code: 'tokens', name: 'Tokens', unit: 'token', aggregation: 'sum', included: 0, overage: { mode: 'per_unit', unit_price: '0.0001' } };

let t: TestApp;
let events = 0;

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t.close();
});
afterEach(async () => {
  await expectLedgerConsistent(t.services.db);
});

async function trialPlan(config: Record<string, unknown>): Promise<number> {
  return makeProduct(t, { title: `Prepaid trial ${++events}`, type: 'apikey', pricing: FREE_PRICE, config: { usage_period: 'calendar_month', prepaid: true, ...config } });
}

/** A new client (no balance) who checked out the trial: its order and key. */
async function startTrial(productId: number) {
  const client = await t.createClient();
  expect((await asClient(t, client.token, 'cart/add_item', { id: productId, period: '1M' })).body.error).toBeNull();
  const checkout = await asClient(t, client.token, 'cart/checkout');
  expect(checkout.body.error).toBeNull();
  const orderId = checkout.result.order_id as number;
  expect((await t.admin('order/get', { id: orderId })).result).toMatchObject({ status: 'active', on_trial: true });
  const key = (await asClient(t, client.token, 'order/service', { id: orderId })).result.api_key as string;
  return { clientId: client.id, orderId, key };
}

const check = async (key: string) => (await t.call('/api/guest/serviceapikey/check', { key })).result as boolean;
const info = async (key: string) => (await t.call('/api/guest/serviceapikey/get_info', { key })).result;
const balance = async (clientId: number) => (await t.admin('client/balance_get_total', { id: clientId })).result as string;

async function ingest(orderId: number, value: number): Promise<void> {
  const reply = await t.admin('usage/ingest', { events: [{ id: `trial-${++events}`, order_id: orderId, meter: 'tokens', value }] });
  expect(reply.result).toMatchObject({ accepted: 1, rejected: [] });
}

describe('the free trial of a prepaid plan', () => {
  it("works at a zero balance while the trial's tokens last; the first token beyond them is debt and NO_CREDIT", async () => {
    const plan = await trialPlan({ meters: [TOKENS], trial: { days: 7, requires_card: false, included: { tokens: 50_000 } } });
    const { clientId, orderId, key } = await startTrial(plan);
    expect(await balance(clientId)).toBe('0.00');
    expect(await check(key)).toBe(true);
    expect(await info(key)).toMatchObject({ valid: 1, reason: 'VALID', credit: { balance: '0.00', currency: 'USD' } });
    await ingest(orderId, 30_000);
    await ingest(orderId, 20_000);
    // All 50,000 trial tokens used: nothing drawn, the key still works (the staff view agrees).
    expect(await balance(clientId)).toBe('0.00');
    expect(await check(key)).toBe(true);
    expect((await t.admin('serviceapikey/get', { order_id: orderId })).result.reason).toBe('VALID');
    // 1,000 tokens beyond them: 0.10 drawn as debt (the usage happened), and the key stops.
    await ingest(orderId, 1000);
    expect(await balance(clientId)).toBe('-0.10');
    expect(await check(key)).toBe(false);
    expect(await info(key)).toMatchObject({ valid: 0, reason: 'NO_CREDIT' });
    expect((await t.admin('serviceapikey/get', { order_id: orderId })).result.reason).toBe('NO_CREDIT');
    // A top-up pays the debt first and lets the key through.
    expect((await t.admin('client/balance_add_funds', { id: clientId, amount: '1.00', description: 'Top-up' })).result).toBe(true);
    expect(await balance(clientId)).toBe('0.90');
    await t.services.apikeys.flushUsage();
    await expect.poll(() => check(key), { timeout: 4000 }).toBe(true);
  });

  it('lets through the calls the trial includes at a zero balance, and refuses the first one that would cost', async () => {
    const plan = await trialPlan({ included: 0, overage: { mode: 'per_unit', unit_price: '0.10' }, trial: { days: 7, requires_card: false, included: { calls: 3 } } });
    const { clientId, key } = await startTrial(plan);
    const answers: boolean[] = [];
    for (let i = 0; i < 5; i++) answers.push(await check(key));
    expect(answers).toEqual([true, true, true, false, false]);
    await t.services.apikeys.flushUsage();
    expect(await balance(clientId)).toBe('0.00');
  });

  it('at the end of a pay-as-you-go trial nothing is invoiced, the order stays active and usage draws on the balance', async () => {
    const plan = await trialPlan({ meters: [TOKENS], trial: { days: 7, requires_card: false, included: { tokens: 50_000 } } });
    const { clientId, orderId, key } = await startTrial(plan);
    const endsAt = Date.parse((await t.admin('order/get', { id: orderId })).result.trial_ends_at as string);
    const report = await t.services.cron.run(new Date(endsAt + 60_000));
    // The earlier tests' trials end in the same run.
    expect(report.failed).toBe(0);
    expect(report.trials_ended).toBeGreaterThanOrEqual(1);
    expect((await t.admin('order/get', { id: orderId })).result).toMatchObject({ status: 'active', on_trial: false, unpaid_invoice_id: null });
    expect(await t.services.db.selectFrom('invoices').select('id').where('client_id', '=', clientId).execute()).toEqual([]);
    // The trial's tokens are gone with it: at a zero balance the key now needs credit.
    await expect.poll(() => check(key), { timeout: 4000 }).toBe(false);
    expect((await info(key)).reason).toBe('NO_CREDIT');
    expect((await t.admin('client/balance_add_funds', { id: clientId, amount: '1.00', description: 'Top-up' })).result).toBe(true);
    await expect.poll(() => check(key), { timeout: 4000 }).toBe(true);
  });

  it('a prepaid trial whose tokens have no trial allowance refuses at a zero balance, as any prepaid plan', async () => {
    const plan = await trialPlan({ meters: [TOKENS], trial: { days: 7, requires_card: false } });
    const { key } = await startTrial(plan);
    expect(await check(key)).toBe(false);
    expect((await info(key)).reason).toBe('NO_CREDIT');
  });
});
