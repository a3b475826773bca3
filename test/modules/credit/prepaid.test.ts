// Prepaid plans (issue 24 item 2, item 6's wallet.depleted): `config.prepaid` validated; the usage beyond `included`
// drawn from the balance as uses are flushed and events ingested, priced as the close prices overage and equal to it;
// exactly once under concurrent and repeated draws; NO_CREDIT at the floor, enforced from local state with no query;
// a top-up lets the key through again; allow_negative; the close bills nothing for a prepaid plan; one wallet.depleted
// per depletion. On SQLite, and on PostgreSQL + Redis when TEST_DATABASE_URL / TEST_REDIS_URL are set.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { CompiledQuery } from 'kysely';
import { createPrepaidLedger } from '../../../src/modules/credit/prepaid.ts';
import { CREDIT_REFRESH_MS } from '../../../src/modules/serviceapikey/check/credit-state.ts';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectInvalid } from '../../helpers/assertions.ts';
import { expectLedgerConsistent } from '../../helpers/credit-ledger.ts';
import { MONTHLY } from '../../helpers/selling-fixtures.ts';
import { refusalOf } from '../../../packages/sdk/src/guard.ts';
import type { VerifyResult } from '../../../packages/sdk/src/index.ts';

const TOKENS = { code: 'tokens', name: 'Tokens', unit: 'token', aggregation: 'sum', included: 1000, overage: { mode: 'per_unit', unit_price: '0.001' } };
const CALLS = { included: 2, overage: { mode: 'per_unit', unit_price: '0.10' } };

let t: TestApp;
let events = 0;

beforeAll(async () => {
  t = await createTestApp({ WEBHOOK_ALLOW_PRIVATE: 'true' });
  // An endpoint nobody answers: its deliveries are written when the event is emitted, which is what is counted.
  const hook = await t.admin('webhook/create', { url: 'http://127.0.0.1:9/hook', events: ['wallet.depleted'] });
  expect(hook.body.error).toBeNull();
});
afterAll(async () => {
  vi.useRealTimers();
  await t.close();
});
afterEach(async () => {
  vi.useRealTimers();
  vi.restoreAllMocks();
  await expectLedgerConsistent(t.services.db);
});

/** Freezes the clock (Date only: timers and I/O run as usual). */
function at(iso: string): void {
  vi.useFakeTimers({ toFake: ['Date'], now: Date.parse(iso) });
}

async function plan(config: Record<string, unknown>): Promise<number> {
  const prepared = await t.admin('product/prepare', { title: `Prepaid ${Math.random()}`, type: 'apikey' });
  const pricing = { ...MONTHLY, recurrent: { '1M': { price: '0', setup: '0', enabled: true } } };
  const updated = await t.admin('product/update', { id: prepared.result, status: 'enabled', pricing, config: { usage_period: 'calendar_month', prepaid: true, ...config } });
  expect(updated.body).toEqual({ result: true, error: null });
  return prepared.result as number;
}

async function buy(productId: number, funds: string | null): Promise<{ orderId: number; key: string; clientId: number; token: string }> {
  const client = await t.createClient();
  if (funds !== null) await addFunds(client.id, funds);
  const created = await t.admin('order/create', { client_id: client.id, product_id: productId, activate: true, period: '1M' });
  expect(created.body.error).toBeNull();
  const orderId = created.result as number;
  return { orderId, key: (await t.admin('serviceapikey/get', { order_id: orderId })).result.api_key as string, clientId: client.id, token: client.token };
}

async function addFunds(clientId: number, amount: string): Promise<void> {
  expect((await t.admin('client/balance_add_funds', { id: clientId, amount, description: 'Top-up' })).result).toBe(true);
}

const balance = async (clientId: number) => (await t.admin('client/balance_get_total', { id: clientId })).result as string;
const check = async (key: string) => (await t.call('/api/guest/serviceapikey/check', { key })).result as boolean;
const info = async (key: string) => (await t.call('/api/guest/serviceapikey/get_info', { key })).result;

async function checks(key: string, count: number): Promise<boolean[]> {
  const out: boolean[] = [];
  for (let i = 0; i < count; i++) out.push(await check(key));
  return out;
}

async function ingest(orderId: number, meter: string, values: number[]): Promise<void> {
  const batch = values.map((value) => ({ id: `pp-${++events}`, order_id: orderId, meter, value }));
  const reply = await t.admin('usage/ingest', { events: batch });
  expect(reply.result).toMatchObject({ accepted: values.length, rejected: [] });
}

const consumed = async (clientId: number) =>
  (await t.services.db.selectFrom('credit_entries').select(['amount', 'kind', 'idempotency_key']).where('client_id', '=', clientId).where('kind', '=', 'consume').orderBy('id').execute()).map((row) => row.amount);

const depletions = async (clientId: number) =>
  (await t.services.db.selectFrom('webhook_deliveries').select('body').where('event_type', '=', 'wallet.depleted').execute())
    .map((row) => JSON.parse(row.body) as { data: { client_id: number; order_id: number; balance: string; currency: string } })
    .filter((body) => body.data.client_id === clientId);

describe('prepaid plan options', () => {
  it('refuses bad prepaid options with 422 naming the field, and stores good ones', async () => {
    const id = (await t.admin('product/prepare', { title: 'Bad prepaid', type: 'apikey' })).result as number;
    const update = (config: Record<string, unknown>) => t.admin('product/update', { id, config });
    expectInvalid(await update({ prepaid: 'yes' }), 'config.prepaid');
    expectInvalid(await update({ prepaid: 1 }), 'config.prepaid');
    expectInvalid(await update({ allow_negative: '5.00' }), 'config.allow_negative');
    expectInvalid(await update({ prepaid: false, allow_negative: '5.00' }), 'config.allow_negative');
    for (const bad of ['-1', 'five', '1.1234567', { amount: 1 }, -0.5, '1e3']) expectInvalid(await update({ prepaid: true, allow_negative: bad }), 'config.allow_negative');
    expect((await update({ prepaid: true, allow_negative: '5.00' })).body.error).toBeNull();
    const saved = (await t.admin('product/get', { id })).result.config;
    expect(saved).toMatchObject({ prepaid: true, allow_negative: '5.00' });
    // A saved config is merged: switching prepaid off takes allow_negative with it.
    expectInvalid(await update({ prepaid: false }), 'config.allow_negative');
    expect((await update({ prepaid: false, allow_negative: null })).body.error).toBeNull();
    expect((await t.admin('product/get', { id })).result.config.prepaid).toBeUndefined();
  });
});

describe('drawing usage from the balance', () => {
  it('draws calls beyond included at each flush and meters at ingestion, equal to the usage priced as overage', async () => {
    at('2031-06-10T12:00:00Z');
    const { orderId, key, clientId } = await buy(await plan({ ...CALLS, meters: [TOKENS] }), '5.00');
    expect(await checks(key, 5)).toEqual([true, true, true, true, true]);
    // Not flushed yet, get_info's balance already counts the uses beyond the two included (get_info is the sixth).
    expect((await info(key)).credit).toEqual({ balance: '4.60', currency: 'USD' });
    expect(await balance(clientId)).toBe('5.00');
    await t.services.apikeys.flushUsage();
    expect(await balance(clientId)).toBe('4.60');
    await ingest(orderId, 'tokens', [900, 600]);
    expect(await balance(clientId)).toBe('4.10');
    await ingest(orderId, 'tokens', [250]);
    expect(await balance(clientId)).toBe('3.85');
    const shown = await info(key);
    expect(shown).toMatchObject({ valid: 1, reason: 'VALID', credit: { balance: '3.75', currency: 'USD' } });
    await t.services.apikeys.flushUsage();
    // What was drawn is what the close would bill: the calls' and the meter's overage at today's quantities.
    const drawn = -(await consumed(clientId)).reduce((sum, amount) => sum + amount, 0);
    const priced = Math.round(Number(shown.usage.overage_amount) * 100 + Number(shown.usage.meters[0].overage_amount) * 100);
    expect(drawn).toBe(priced);
    expect(await balance(clientId)).toBe('3.75');
    // Flushing and drawing again with nothing new draws nothing.
    await t.services.apikeys.flushUsage();
    await t.services.apikeys.drawPrepaid(orderId, '2031-06-01T00:00:00Z');
    expect(await balance(clientId)).toBe('3.75');
    // A plan that is not prepaid shows no credit.
    const plain = await t.admin('product/prepare', { title: 'Plain', type: 'apikey' });
    await t.admin('product/update', { id: plain.result, status: 'enabled', pricing: MONTHLY, config: {} });
    const other = await buy(plain.result as number, null);
    expect(await info(other.key)).not.toHaveProperty('credit');
  });

  it('draws exactly once when the same draws run concurrently and are retried', async () => {
    const { orderId, clientId } = await buy(await plan(CALLS), '10.00');
    const ledger = createPrepaidLedger({ db: t.services.db, events: t.services.events, selling: t.services.selling });
    const period = '2031-07-01T00:00:00Z';
    // Twenty draws at once, priced at cumulative amounts 100…119 (as processes reading the quantity at different times
    // would), then all again: the balance loses 1.19 and no more.
    const draw = (amount: number) => ledger.drawUsage({ clientId, orderId, periodStart: period, draws: [{ meter: 'calls', amount }] });
    await Promise.all(Array.from({ length: 20 }, (_, i) => draw(100 + i)));
    await Promise.all(Array.from({ length: 20 }, (_, i) => draw(119 - i)));
    expect(await balance(clientId)).toBe('8.81');
    // Concurrent apikey draws of the whole period from the database find nothing more to draw.
    await Promise.all(Array.from({ length: 5 }, () => t.services.apikeys.drawPrepaid(orderId, period)));
    expect(await balance(clientId)).toBe('8.81');
  });
});

describe('NO_CREDIT', () => {
  it('refuses at zero balance from local state, announces one wallet.depleted, and a top-up lets the key through', async () => {
    at('2031-08-10T12:00:00Z');
    const { orderId, key, clientId } = await buy(await plan({ included: 0, overage: CALLS.overage }), '0.30');
    // 0.30 buys three calls: the fourth is refused before any flush (the check priced the unflushed uses).
    expect(await checks(key, 5)).toEqual([true, true, true, false, false]);
    expect(await info(key)).toMatchObject({ valid: 0, config: null, reason: 'NO_CREDIT', credit: { balance: '0.00', currency: 'USD' } });
    expect((await t.admin('serviceapikey/check', { key })).result).toBe(false);
    // Staff reads judge the stored key by the same rules; the SDK middleware answers 402.
    expect((await t.admin('serviceapikey/get', { order_id: orderId })).result.reason).toBe('NO_CREDIT');
    expect((await t.admin('serviceapikey/find', { key })).result.reason).toBe('NO_CREDIT');
    expect(refusalOf({ valid: false, reason: 'NO_CREDIT' } as VerifyResult)).toMatchObject({ status: 402, body: { error: { code: 'NO_CREDIT' } }, retryAfter: null });
    await t.services.apikeys.flushUsage();
    expect(await balance(clientId)).toBe('0.00');
    await vi.waitFor(async () => expect(await depletions(clientId)).toHaveLength(1));
    expect((await depletions(clientId))[0]!.data).toEqual({ client_id: clientId, order_id: orderId, balance: '0.00', currency: 'USD' });
    // A top-up: the key validates again once the view is re-read (at most CREDIT_REFRESH_MS later).
    await addFunds(clientId, '0.20');
    at(new Date(Date.now() + CREDIT_REFRESH_MS + 1).toISOString());
    await vi.waitFor(async () => expect(await check(key)).toBe(true), { timeout: 3000 });
    expect(await checks(key, 2)).toEqual([true, false]);
    // The second depletion is announced once more; refusing again meanwhile announces nothing.
    await t.services.apikeys.flushUsage();
    expect(await balance(clientId)).toBe('0.00');
    await vi.waitFor(async () => expect(await depletions(clientId)).toHaveLength(2));
    expect(await checks(key, 3)).toEqual([false, false, false]);
    expect(await depletions(clientId)).toHaveLength(2);
  });

  it('refuses as soon as an ingested batch takes the balance to zero', async () => {
    at('2031-08-12T12:00:00Z');
    const { orderId, key, clientId } = await buy(await plan({ meters: [TOKENS] }), '1.00');
    expect(await check(key)).toBe(true);
    await ingest(orderId, 'tokens', [1500]);
    expect(await balance(clientId)).toBe('0.50');
    expect(await check(key)).toBe(true);
    // Past the balance: drawn in full (the usage happened), and the key is refused at once.
    await ingest(orderId, 'tokens', [800]);
    expect(await balance(clientId)).toBe('-0.30');
    expect(await check(key)).toBe(false);
    expect((await info(key)).reason).toBe('NO_CREDIT');
    // The next top-up pays the debt first.
    await addFunds(clientId, '1.00');
    expect(await balance(clientId)).toBe('0.70');
  });

  it('allow_negative lets the balance go down to −allow_negative and no further', async () => {
    at('2031-08-14T12:00:00Z');
    const { key, clientId } = await buy(await plan({ included: 0, overage: CALLS.overage, allow_negative: '0.50' }), '0.30');
    const answers = await checks(key, 10);
    expect(answers.filter(Boolean)).toHaveLength(8);
    expect(answers.slice(8)).toEqual([false, false]);
    await t.services.apikeys.flushUsage();
    expect(await balance(clientId)).toBe('-0.50');
    expect((await info(key)).credit).toEqual({ balance: '-0.50', currency: 'USD' });
    // A top-up pays the debt first: 0.70 leaves 0.20, two calls' worth above zero and five more down to −0.50.
    await addFunds(clientId, '0.70');
    at(new Date(Date.now() + CREDIT_REFRESH_MS + 1).toISOString());
    await vi.waitFor(async () => expect(await check(key)).toBe(true), { timeout: 3000 });
    expect((await checks(key, 7)).filter(Boolean)).toHaveLength(6);
    await t.services.apikeys.flushUsage();
    expect(await balance(clientId)).toBe('-0.50');
  });

  it('a warm check of a prepaid key asks the database nothing', async () => {
    const { key } = await buy(await plan({ included: 0, overage: CALLS.overage }), '5.00');
    expect(await check(key)).toBe(true);
    const executor = t.services.db.getExecutor();
    const seen: string[] = [];
    const original = executor.executeQuery.bind(executor);
    vi.spyOn(executor, 'executeQuery').mockImplementation((query: CompiledQuery) => {
      seen.push(query.sql);
      return original(query);
    });
    expect(await checks(key, 20)).toEqual(Array.from({ length: 20 }, () => true));
    expect(seen).toEqual([]);
  });
});

describe('the close of a prepaid period', () => {
  it('draws the last uses and issues no overage invoice; the recurring price is invoiced as before', async () => {
    at('2031-09-20T12:00:00Z');
    const { orderId, key, clientId } = await buy(await plan({ ...CALLS, meters: [TOKENS] }), '5.00');
    expect(await checks(key, 4)).toEqual([true, true, true, true]);
    await ingest(orderId, 'tokens', [1200]);
    // Not flushed: the close flushes and draws before it records the period.
    const report = await t.services.usageCloser.closePeriods(new Date('2031-10-01T00:01:00Z'));
    expect(report).toMatchObject({ failed: 0 });
    const close = await t.services.db.selectFrom('usage_closes').selectAll().where('order_id', '=', orderId).executeTakeFirstOrThrow();
    expect(close).toMatchObject({ invoice_id: null, used: 4, overage_units: 2 });
    expect(Number(close.amount)).toBe(0);
    const meters = await t.services.db.selectFrom('usage_close_meters').selectAll().where('close_id', '=', close.id).execute();
    expect(meters.map((meter) => [meter.meter, Number(meter.overage_units), Number(meter.amount)])).toEqual([['tokens', 200, 0]]);
    // 2 calls × 0.10 + 200 tokens × 0.001.
    expect(await balance(clientId)).toBe('4.60');
    const usageInvoices = await t.services.db
      .selectFrom('invoice_items')
      .innerJoin('invoices', 'invoices.id', 'invoice_items.invoice_id')
      .select('invoice_items.id')
      .where('invoices.client_id', '=', clientId)
      .where('invoice_items.task', '=', 'usage')
      .execute();
    expect(usageInvoices).toEqual([]);
  });
});

describe('a wallet in another currency than the default', () => {
  it("shows get_info's credit in the wallet's currency, less the undrawn uses converted as their draw will be", async () => {
    at('2031-07-10T12:00:00Z');
    // USD is the default (plans price uses in it); the client's wallet is in euros at 0.9.
    expect((await t.admin('currency/create', { code: 'EUR', conversion_rate: '0.9' })).result).toBe('EUR');
    const productId = await plan(CALLS);
    const client = await t.createClient();
    expect((await t.admin('client/update', { id: client.id, currency: 'EUR' })).result).toBe(true);
    await addFunds(client.id, '5.00');
    const created = await t.admin('order/create', { client_id: client.id, product_id: productId, activate: true, period: '1M' });
    expect(created.body.error).toBeNull();
    const key = (await t.admin('serviceapikey/get', { order_id: created.result })).result.api_key as string;
    expect(await checks(key, 5)).toEqual([true, true, true, true, true]);
    // Six uses (get_info is one), four beyond the two included: 0.40 USD, drawn as 0.36 EUR from the €5.00.
    expect((await info(key)).credit).toEqual({ balance: '4.64', currency: 'EUR' });
    await t.services.apikeys.flushUsage();
    expect(await balance(client.id)).toBe('4.64');
    expect(await consumed(client.id)).toEqual([-36]);
    // A seventh use, not drawn yet: 0.10 USD more, €0.09.
    expect((await info(key)).credit).toEqual({ balance: '4.55', currency: 'EUR' });
    await t.services.apikeys.flushUsage();
    expect(await balance(client.id)).toBe('4.55');
  });
});

describe('a euro wallet running out', () => {
  it('records the depletion and sends wallet.depleted with the balance in the wallet’s currency', async () => {
    at('2031-08-10T12:00:00Z');
    const productId = await plan(CALLS);
    const client = await t.createClient();
    expect((await t.admin('client/update', { id: client.id, currency: 'EUR' })).result).toBe(true);
    await addFunds(client.id, '0.20');
    const created = await t.admin('order/create', { client_id: client.id, product_id: productId, activate: true, period: '1M' });
    const orderId = created.result as number;
    const key = (await t.admin('serviceapikey/get', { order_id: orderId })).result.api_key as string;
    // €0.20 is 0.22 USD at 0.9: two included uses and three at 0.10 USD; the sixth is refused.
    expect(await checks(key, 6)).toEqual([true, true, true, true, true, false]);
    await vi.waitFor(async () => expect(await depletions(client.id)).toHaveLength(1));
    // Five uses drawn: 0.30 USD, €0.27 — the wallet at −€0.07, recorded and announced in euros.
    expect((await depletions(client.id))[0]!.data).toEqual({ client_id: client.id, order_id: orderId, balance: '-0.07', currency: 'EUR' });
    const recorded = await t.services.db.selectFrom('credit_depletions').select(['currency', 'balance']).where('client_id', '=', client.id).execute();
    expect(recorded).toEqual([{ currency: 'EUR', balance: -7 }]);
    await t.services.apikeys.flushUsage();
    expect(await balance(client.id)).toBe('-0.07');
  });
});
