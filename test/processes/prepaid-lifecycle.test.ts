// The prepaid "AI API" lifecycle of issue 24's "Done when", through two Tollgate processes sharing one database (this
// test's app, and a second process: test/helpers/peer.ts), each serving its own app server's Node SDK: a pay-as-you-go
// plan (price 0, tokens drawn from the balance) with a 7-day trial without card and 50,000 trial tokens; the trial's
// tokens used at a zero balance; a 10 $ pack bought by card through Stripe Checkout (the local stand-in), which saves
// the card; auto-recharge of 10 $ under 2 $; tokens tracked through both SDKs until the balance has recharged twice
// (one charge and one top-up per crossing); the card disabled (the stand-in declines it): the third crossing's charge
// fails and the client is mailed; the balance runs dry and every process refuses NO_CREDIT within a second; a top-up
// by bank transfer (the manual gateway, confirmed by staff) lets the key through everywhere; a partial refund of it
// makes a credit note; and after every step the ledger sums to the balance (test/helpers/credit-ledger.ts).
// On a SQLite file both processes open, and on PostgreSQL + Redis when TEST_DATABASE_URL / TEST_REDIS_URL are set (CI
// requires it to have passed there: .ci/run).
import { rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Tollgate } from '../../packages/sdk/src/index.ts';
import { CREDIT_REFRESH_MS } from '../../src/modules/serviceapikey/check/credit-state.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { expectLedgerConsistent } from '../helpers/credit-ledger.ts';
import { startPeer, type Peer } from '../helpers/peer.ts';
import { asClient } from '../helpers/selling-fixtures.ts';
import { payByCard, payment, type StripeStand } from '../helpers/stripe-fixtures.ts';
import { StripeStandIn } from '../helpers/stripe-server.ts';

const PG = process.env.TEST_DATABASE_URL ?? '';
const REDIS = process.env.TEST_REDIS_URL ?? '';
const file = `/tmp/tollgate-prepaid-lifecycle-${process.pid}-${Date.now()}.db`;

/** 1 $ per 10,000 tokens; calls are not priced (the plan sells tokens). */
const TOKEN_PRICE = '0.0001';
const AI_API = {
  title: 'AI API',
  pricing: { type: 'recurrent', recurrent: { '1M': { price: '0', setup: '0', enabled: true } } },
  config: {
    usage_period: 'calendar_month',
    prepaid: true,
    meters: [{ code: 'tokens', name: 'Tokens', unit: 'token', aggregation: 'sum', included: 0, overage: { mode: 'per_unit', unit_price: TOKEN_PRICE } }],
    trial: { days: 7, requires_card: false, included: { tokens: 50_000 } },
  },
};

/** Polls `probe` until it returns `expected`; the milliseconds that took (fails after `limitMs`). */
async function within(probe: () => Promise<unknown>, expected: unknown, limitMs: number): Promise<number> {
  const started = Date.now();
  for (;;) {
    if ((await probe()) === expected) return Date.now() - started;
    if (Date.now() - started > limitMs) throw new Error(`still not ${String(expected)} after ${limitMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('the prepaid AI API lifecycle across two processes', () => {
  let stand: StripeStand;
  let t: TestApp;
  let peer: Peer;
  const sdkErrors: string[] = [];
  let sdkHere: Tollgate;
  let sdkThere: Tollgate;

  beforeAll(async () => {
    const stripe = new StripeStandIn();
    await stripe.start();
    t = await createTestApp(stripe.env({ PUBLIC_URL: 'https://billing.example.com', ...(PG === '' ? { DATABASE_URL: `sqlite:${file}` } : {}) }));
    stand = {
      t,
      stripe,
      async close() {
        await t.close();
        await stripe.stop();
      },
    };
    peer = await startPeer(t, REDIS !== '');
    await t.app.listen({ port: 0, host: '127.0.0.1' });
  }, 120_000);

  afterAll(async () => {
    await sdkHere?.close();
    await sdkThere?.close();
    await peer?.stop();
    await stand?.close();
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true });
  });

  it('trial, pack by card, two auto-recharges, a declined card, NO_CREDIT everywhere, a bank top-up and a partial refund', async () => {
    const db = t.services.db;
    // ----- the operator: the plan, a pack, and one verifier token for both app servers -----
    const productId = (await t.admin('product/prepare', { title: AI_API.title, type: 'apikey' })).result as number;
    expect((await t.admin('product/update', { id: productId, status: 'enabled', pricing: AI_API.pricing, config: AI_API.config })).body.error).toBeNull();
    const packId = (await t.admin('credit/pack_create', { title: 'AI credits 10 $', amount: '10.00' })).result as number;
    const verifier = (await t.admin('staff/verifier_create', { name: 'AI API servers' })).result as { token: string };
    const hereUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    const onError = (_error: unknown, what: string) => sdkErrors.push(what);
    sdkHere = new Tollgate({ baseUrl: hereUrl, token: verifier.token, onError });
    sdkThere = new Tollgate({ baseUrl: peer.url, token: verifier.token, onError });

    // ----- the client -----
    const client = await t.createClient();
    const asMe = (path: string, params: Record<string, unknown> = {}) => asClient(t, client.token, path, params);
    const total = async () => (await asMe('client/balance_get_total')).result as string;
    const here = async (key: string) => (await t.call('/api/guest/serviceapikey/check', { key })).result;
    const there = async (key: string) => (await peer.call('guest/serviceapikey/check', { key })).result;

    /** The ledger is consistent (every account) and the client's lines add up to the balance it is shown. */
    async function ledgerAgrees(expected: string): Promise<void> {
      await expectLedgerConsistent(db);
      const shown = await total();
      expect(shown).toBe(expected);
      let cents = 0;
      for (let page = 1; ; page++) {
        const lines = (await asMe('client/balance_get_list', { page, per_page: 100 })).result as { list: Array<{ amount: string }>; pages: number };
        for (const line of lines.list) cents += Math.round(Number(line.amount) * 100);
        if (page >= lines.pages) break;
      }
      expect(cents).toBe(Math.round(Number(shown) * 100));
    }

    /** Tracks `tokens` through one app server's SDK and waits until Tollgate has them (the draw is done by then). */
    let turn = 0;
    async function use(tokens: number): Promise<void> {
      const sdk = turn++ % 2 === 0 ? sdkHere : sdkThere;
      sdk.track(key, 'tokens', tokens);
      await sdk.flush();
      expect(sdkErrors).toEqual([]);
    }

    // 1. The 7-day trial without card: active at once, nothing paid, the key valid on both processes at a zero balance.
    expect((await asMe('cart/add_item', { id: productId, period: '1M' })).body.error).toBeNull();
    const checkout = await asMe('cart/checkout');
    expect(checkout.body.error).toBeNull();
    expect(checkout.result.invoice_id).toBeNull();
    const orderId = checkout.result.order_id as number;
    expect((await asMe('order/get', { id: orderId })).result).toMatchObject({ status: 'active', on_trial: true });
    const key = (await asMe('order/service', { id: orderId })).result.api_key as string;
    expect(await here(key)).toBe(true);
    expect(await there(key)).toBe(true);
    await ledgerAgrees('0.00');

    // 2. The 50,000 trial tokens through both SDKs: free, nothing drawn, the key still valid everywhere.
    await use(25_000);
    await use(25_000);
    const tokensShown = async () => {
      const info = (await t.call('/api/guest/serviceapikey/get_info', { key })).result;
      expect(info).toMatchObject({ valid: 1, credit: { balance: '0.00', currency: 'USD' } });
      const tokens = (info.usage.meters as Array<{ code: string; used: number; included: number }>).find((meter) => meter.code === 'tokens')!;
      return `${tokens.used} of ${tokens.included}`;
    };
    // get_info's figures of tokens ingested through the other process are re-read in the background (within 2 s).
    await within(tokensShown, '50000 of 50000', 4000);
    expect(await here(key)).toBe(true);
    expect(await there(key)).toBe(true);
    await ledgerAgrees('0.00');

    // 3. A 10 $ pack bought by card through Stripe Checkout: credited once, the card saved.
    const packHash = (await asMe('credit/pack_buy', { id: packId })).result as string;
    await payByCard(stand, packHash);
    await ledgerAgrees('10.00');
    expect((await asMe('credit/auto_recharge_get')).result).toMatchObject({ enabled: false, has_card: true });

    // 4. Auto-recharge of 10 $ under 2 $.
    const recharge = await asMe('credit/auto_recharge_set', { enabled: true, threshold: '2', amount: '10' });
    expect(recharge.result).toEqual({ enabled: true, threshold: '2.00', amount: '10.00', currency: 'USD', has_card: true });

    // 5. Tokens at 1 $ a batch until the balance has recharged twice: each crossing below 2 $ charges the card once
    // (the outbox item of whichever process drew) and credits 10 $ once.
    const recharges = () => db.selectFrom('credit_recharges').selectAll().where('client_id', '=', client.id).orderBy('crossing').execute();
    const charges = () => stand.stripe.requestsTo('POST', '/v1/payment_intents').filter((request) => request.body.off_session === 'true');
    const rechargeTopUps = async () => {
      const invoiceIds = (await recharges()).map((row) => row.invoice_id).filter((id): id is number => id !== null);
      if (invoiceIds.length === 0) return [];
      return db.selectFrom('credit_entries').select(['invoice_id', 'amount']).where('kind', '=', 'top_up').where('invoice_id', 'in', invoiceIds).execute();
    };
    let batches = 0;
    while ((await rechargeTopUps()).length < 2) {
      expect(batches++).toBeLessThan(30);
      await use(10_000);
      await t.services.outbox.runDue(new Date());
      await t.services.outbox.runDue(new Date());
      expect(await here(key)).toBe(true);
      expect(await there(key)).toBe(true);
    }
    // 10.00 → 1.00 after nine batches (recharged to 11.00), then ten more to 1.00 (recharged to 11.00).
    expect(batches).toBe(19);
    expect((await recharges()).map((row) => row.crossing)).toEqual([1, 2]);
    expect(charges().map((request) => request.body.amount)).toEqual(['1000', '1000']);
    expect(new Set(charges().map((request) => request.idempotencyKey)).size).toBe(2);
    expect((await rechargeTopUps()).map((entry) => entry.amount)).toEqual([1000, 1000]);
    await ledgerAgrees('11.00');

    // 6. The card is disabled by its bank: every charge of it now declines at the stand-in. The third crossing's
    // charge fails: nothing is credited, the client is mailed the invoice's pay link, a retry is scheduled.
    stand.stripe.chargeQueue.push('decline', 'decline', 'decline', 'decline');
    for (let i = 0; i < 10; i++) await use(10_000);
    await t.services.outbox.runDue(new Date());
    await t.services.outbox.runDue(new Date());
    expect((await recharges()).map((row) => row.crossing)).toEqual([1, 2, 3]);
    expect(charges()).toHaveLength(3);
    const third = (await recharges())[2]!;
    expect((await t.admin('invoice/get', { id: third.invoice_id })).result).toMatchObject({ status: 'unpaid', total: '10.00' });
    expect(await t.services.charges.attemptsOf(third.invoice_id!)).toMatchObject([{ attempt: 1, status: 'failed' }]);
    const failedMails = await db.selectFrom('emails').select('template').where('client_id', '=', client.id).where('template', '=', 'invoice_payment_failed').execute();
    expect(failedMails).toHaveLength(1);
    await ledgerAgrees('1.00');
    expect(await here(key)).toBe(true);
    expect(await there(key)).toBe(true);

    // 7. It runs dry: 15,000 more tokens through this process's SDK take the balance to −0.50 (the usage happened and is
    // drawn in full). This process refuses at once; the other within a second; both SDKs hear NO_CREDIT.
    sdkHere.track(key, 'tokens', 15_000);
    await sdkHere.flush();
    expect(await here(key)).toBe(false);
    const heardIn = await within(() => there(key), false, 3000);
    process.stdout.write(`prepaid lifecycle: the second process refused NO_CREDIT ${heardIn} ms after the draw (${PG === '' ? 'SQLite' : 'PostgreSQL'}${REDIS === '' ? '' : ' + Redis'})\n`);
    // Told through Redis or LISTEN/NOTIFY. Two separately started processes on one SQLite file have no channel (not a
    // supported deployment, docs/deployment.md: WORKERS=n is, prepaid-cluster.test.ts); the other one then hears at its
    // own next flush, at most a second away, and one read.
    expect(heardIn).toBeLessThan(PG === '' && REDIS === '' ? 1500 : 1000);
    expect((await t.call('/api/guest/serviceapikey/get_info', { key })).result).toMatchObject({ valid: 0, reason: 'NO_CREDIT', credit: { balance: '-0.50' } });
    await within(async () => (await sdkHere.verify(key)).reason, 'NO_CREDIT', 3000);
    await within(async () => (await sdkThere.verify(key)).reason, 'NO_CREDIT', 3000);
    expect(sdkErrors).toEqual([]);
    await ledgerAgrees('-0.50');

    // 8. A top-up of 20 $ by bank transfer (the manual gateway), confirmed by staff: the debt is paid first, and the
    // key is valid again on both processes (each re-reads the balance within CREDIT_REFRESH_MS).
    const bankHash = (await asMe('invoice/funds_invoice', { amount: '20.00' })).result as string;
    expect((await payment(t, { hash: bankHash, gateway_id: 'custom' })).body.error).toBeNull();
    const bankInvoice = (await t.call('/api/guest/invoice/get', { hash: bankHash })).result as { id: number; status: string };
    expect(bankInvoice.status).toBe('unpaid');
    expect((await t.admin('invoice/mark_as_paid', { id: bankInvoice.id })).result).toBe(true);
    // Confirmed twice (the other process too): credited once.
    expect((await peer.call('admin/invoice/mark_as_paid', { id: bankInvoice.id }, t.adminToken)).status).toBe(409);
    await ledgerAgrees('19.50');
    expect(await within(() => here(key), true, CREDIT_REFRESH_MS + 1500)).toBeLessThan(CREDIT_REFRESH_MS + 1500);
    expect(await within(() => there(key), true, CREDIT_REFRESH_MS + 1500)).toBeLessThan(CREDIT_REFRESH_MS + 1500);

    // 9. A partial refund of the transfer: one numbered credit note of 5.00 linked to the invoice, and the credit it
    // bought taken back (a refund line of −5.00).
    expect((await t.admin('invoice/refund', { id: bankInvoice.id, amount: '5.00', reason: 'Partial refund' })).result).toBe(true);
    const notes = (await asMe('invoice/credit_note_get_list', {})).result as { list: Array<{ invoice_id: number; total: string; number: string; method: string }> };
    expect(notes.list).toEqual([expect.objectContaining({ invoice_id: bankInvoice.id, total: '5.00', method: 'refund', number: expect.stringMatching(/^CN-/) })]);
    expect((await t.admin('invoice/get', { id: bankInvoice.id })).result).toMatchObject({ status: 'paid', credited: '5.00' });
    const refundLines = (await asMe('client/balance_get_list', { type: 'refund' })).result.list as Array<{ amount: string; invoice_id: number }>;
    expect(refundLines).toEqual([expect.objectContaining({ amount: '-5.00', invoice_id: bankInvoice.id })]);
    await ledgerAgrees('14.50');
    await within(() => there(key), true, CREDIT_REFRESH_MS + 1500);

    // Money moved exactly once: one top-up per paid invoice (the pack, two recharges, the transfer).
    const topUps = await db.selectFrom('credit_entries').select('invoice_id').where('client_id', '=', client.id).where('kind', '=', 'top_up').execute();
    expect(topUps).toHaveLength(4);
    expect(new Set(topUps.map((row) => row.invoice_id)).size).toBe(4);
  }, 180_000);
});
