// The lifecycle of a metered plan (issue 23 "Done when"): an "AI API" plan at 10 $ a month with three meters —
// `tokens` (sum, 1,000,000 included, then 2 $ per million for the next million and 1 $ beyond), `requests` (count,
// hard limit 50,000) and `users` (unique count of properties.user, 100 included, 0.10 $ per extra user). Bought and
// paid by card (saved), fed through the Node SDK's track() and through admin/usage/ingest with duplicates and a
// backfilled event, the 80% and 100% token alerts seen (webhook and mail), the requests meter run to its hard limit
// (check refuses, get_info names the meter), the month closed: one overage invoice with a line per billed meter,
// charged to the saved card once, and the next month clean. The clock is faked (Date only). Runs on SQLite, and on
// PostgreSQL + Redis when TEST_* are set.
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Tollgate } from '../../../packages/sdk/src/index.ts';
import { Receiver } from '../../helpers/webhook-receiver.ts';
import { asClient } from '../../helpers/selling-fixtures.ts';
import { payByCard, purchase, stripeStand, type StripeStand } from '../../helpers/stripe-fixtures.ts';

const AI_API = {
  title: 'AI API',
  pricing: { type: 'recurrent', recurrent: { '1M': { price: '10.00', setup: '0', enabled: true } } },
  config: {
    usage_period: 'calendar_month',
    meters: [
      {
        code: 'tokens', name: 'Tokens', unit: 'token', aggregation: 'sum', included: 1_000_000,
        overage: { mode: 'graduated', tiers: [{ up_to: 1_000_000, unit_price: '0.000002' }, { up_to: null, unit_price: '0.000001' }] },
      },
      { code: 'requests', name: 'Requests', unit: 'request', aggregation: 'count', hard_limit: 50_000 },
      { code: 'users', name: 'End users', unit: 'user', aggregation: 'unique_count', property: 'user', included: 100, overage: { mode: 'per_unit', unit_price: '0.10' } },
    ],
  },
};

let stand: StripeStand;
const receiver = new Receiver();

beforeAll(async () => {
  stand = await stripeStand({ WEBHOOK_ALLOW_PRIVATE: 'true' });
  await receiver.start();
});
afterAll(async () => {
  vi.useRealTimers();
  await stand.close();
  await receiver.stop();
});

function at(iso: string): void {
  vi.useFakeTimers({ toFake: ['Date'], now: Date.parse(iso) });
  vi.setSystemTime(Date.parse(iso));
}

describe('an AI API plan metered by tokens, requests and users', () => {
  it('ingests through the SDK and the API exactly once, alerts, stops at the hard limit, bills one overage invoice by card', async () => {
    const { t, stripe } = stand;
    at('2027-04-08T09:00:00Z');
    const productId = (await t.admin('product/prepare', { title: AI_API.title, type: 'apikey' })).result as number;
    expect((await t.admin('product/update', { id: productId, status: 'enabled', pricing: AI_API.pricing, config: AI_API.config })).body).toEqual({ result: true, error: null });
    const hook = await t.admin('webhook/create', { url: receiver.url, events: ['usage.threshold_reached'] });
    receiver.secret = hook.result.secret as string;

    // Bought and paid by card: the card is saved for the overage invoice.
    const bought = await purchase(t, productId);
    await payByCard(stand, bought.hash);
    const service = await asClient(t, bought.token, 'order/service', { id: bought.orderId });
    expect(service.result).toMatchObject({ status: 'active', valid: 1 });
    const key = service.result.api_key as string;

    // The operator's app server: the SDK with a verifier token, against this Tollgate over a real socket.
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    const verifier = (await t.admin('staff/verifier_create', { name: 'AI API servers' })).result as { token: string };
    const sdkErrors: string[] = [];
    const sdk = new Tollgate({ baseUrl, token: verifier.token, onError: (_error, what) => sdkErrors.push(what) });
    const ingest = async (events: unknown[]) => (await t.admin('usage/ingest', { events })).result as { accepted: number; duplicates: number; rejected: unknown[] };
    const deliver = () => t.services.outbox.runDue(new Date());
    const tokenAlerts = () => receiver.received.filter((r) => r.verified?.type === 'usage.threshold_reached' && r.verified.data.meter === 'tokens').map((r) => r.verified!.data);

    // 1,000,000 tokens through the SDK, ten requests' worth; then the 80% and 100% alerts, once each.
    for (let i = 0; i < 10; i++) {
      sdk.track(key, 'tokens', 100_000, { user: `u${i}` });
      sdk.track(key, 'requests');
      sdk.track(key, 'users', undefined, { user: `u${i}` });
    }
    await sdk.flush();
    expect(sdkErrors).toEqual([]);
    await deliver();
    // The outbox delivers concurrently: the receiver may hear 100% before 80%. Each once is what counts.
    expect(tokenAlerts().map((data) => data.threshold).toSorted((x, y) => Number(x) - Number(y))).toEqual([80, 100]);
    const mails = await t.services.db.selectFrom('emails').select('subject').where('client_id', '=', bought.clientId).where('template', '=', 'usage_threshold').orderBy('id').execute();
    expect(mails.map((mail) => mail.subject)).toEqual(['AI API: 80% of the included Tokens', 'AI API: 100% of the included Tokens']);

    // Through the API: 1,400,000 tokens, 93 more users (two of them seen before), and a retry of the same batch.
    const batch = [
      { id: 'big-1', key, meter: 'tokens', value: 1_400_000 },
      ...Array.from({ length: 95 }, (_, i) => ({ id: `user-${i}`, key, meter: 'users', properties: { user: `u${i + 8}` } })),
    ];
    expect(await ingest(batch)).toEqual({ accepted: 96, duplicates: 0, rejected: [] });
    expect(await ingest(batch)).toEqual({ accepted: 0, duplicates: 96, rejected: [] });
    // A backfilled event: three days ago, in this period.
    expect(await ingest([{ id: 'late-1', order_id: bought.orderId, meter: 'tokens', value: 100_000, timestamp: '2027-04-05T12:00:00Z' }])).toMatchObject({ accepted: 1 });
    await deliver();
    expect(tokenAlerts().map((data) => data.threshold).toSorted((x, y) => Number(x) - Number(y))).toEqual([80, 100]);

    // The figures the client sees: 2,500,000 tokens (1,500,000 over: 2.00 + 0.50), 103 users (3 over: 0.30).
    const usage = (await asClient(t, bought.token, 'serviceapikey/usage', { order_id: bought.orderId })).result as { meters: Array<Record<string, unknown>> };
    expect(usage.meters.map(({ code, used, overage_units, overage_amount }) => ({ code, used, overage_units, overage_amount }))).toEqual([
      { code: 'tokens', used: 2_500_000, overage_units: 1_500_000, overage_amount: '2.50' },
      { code: 'requests', used: 10, overage_units: 0, overage_amount: null },
      { code: 'users', used: 103, overage_units: 3, overage_amount: '0.30' },
    ]);


    // The requests meter runs to its hard limit of 50,000: the key stops, and get_info names the meter.
    expect((await t.call('/api/guest/serviceapikey/check', { key })).result).toBe(true);
    for (let sent = 10; sent < 50_000; sent += 1000) {
      const count = Math.min(1000, 50_000 - sent);
      expect((await ingest(Array.from({ length: count }, (_, i) => ({ id: `r-${sent + i}`, key, meter: 'requests' })))).accepted).toBe(count);
    }
    expect((await t.call('/api/guest/serviceapikey/check', { key })).result).toBe(false);
    const limited = await t.call('/api/guest/serviceapikey/get_info', { key });
    expect(limited.result).toMatchObject({ valid: 0, reason: 'LIMIT_EXCEEDED', usage: { limited_by: 'requests' } });
    expect((limited.result.usage.meters as Array<{ code: string; used: number; hard_limit: number | null }>).find((meter) => meter.code === 'requests')).toMatchObject({ used: 50_000, hard_limit: 50_000 });
    // The SDK hears it too: its verify refuses the key.
    expect(await sdk.verify(key)).toMatchObject({ valid: false, reason: 'LIMIT_EXCEEDED' });

    // The month closes; one overage invoice with a line per billed meter, charged to the saved card, once.
    await sdk.close();
    at('2027-05-01T00:00:30Z');
    const report = await t.services.cron.run(new Date());
    expect(report.usage_invoices).toBe(1);
    const invoices = (await asClient(t, bought.token, 'invoice/get_list', {})).result.list as Array<{ id: number; total: string; items: Array<{ task: string; title: string; price: string }> }>;
    const overage = invoices.find((invoice) => invoice.items.some((item) => item.task === 'usage'))!;
    expect(overage.total).toBe('2.80');
    expect(overage.items.map((item) => [item.title, item.price])).toEqual([
      ['AI API — usage 2027-04-01 to 2027-04-30: 1,500,000 tokens over the 1,000,000 included', '2.50'],
      ['AI API — End users, usage 2027-04-01 to 2027-04-30: 3 users over the 100 included', '0.30'],
    ]);
    await deliver();
    const charges = stripe.requestsTo('POST', '/v1/payment_intents').filter((request) => (request.body.metadata as { invoice_id: string }).invoice_id === String(overage.id));
    expect(charges).toHaveLength(1);
    expect(charges[0]!.body).toMatchObject({ amount: '280', currency: 'usd', off_session: 'true' });
    expect((await asClient(t, bought.token, 'invoice/get', { id: overage.id })).result).toMatchObject({ status: 'paid', total: '2.80' });
    expect((await t.services.cron.run(new Date())).usage_invoices).toBe(0);

    // Late events for April are refused; May starts clean.
    expect((await ingest([{ id: 'too-late', key, meter: 'tokens', value: 5, timestamp: '2027-04-30T23:00:00Z' }])).rejected).toEqual([{ index: 0, code: 'PERIOD_CLOSED', message: expect.any(String) }]);
    const may = (await asClient(t, bought.token, 'serviceapikey/usage', { order_id: bought.orderId })).result as { meters: Array<{ code: string; used: number }> };
    expect(may.meters.map(({ code, used }) => [code, used])).toEqual([['tokens', 0], ['requests', 0], ['users', 0]]);
    expect((await t.call('/api/guest/serviceapikey/check', { key })).result).toBe(true);
  });
});
