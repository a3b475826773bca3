// The lifecycle of a usage-priced plan (issue 12 "Done when"): "10 $/month, 1,000 included, 1 $ per 100 more, hard
// limit 5,000". Bought and paid by card (the Stripe stand-in, card saved), used 1,750 times, crossing 80% and 100%
// (a mail each, a signed webhook each at a real receiver), the month closes, the overage invoice of 8 $ is issued on
// its own and charged to the saved card off-session, and the next month starts clean. The uses go through two keys of
// the order (i12-keys: the quota, thresholds and overage are the order's), and the plan's rate limit refuses calls
// past it without counting them. The clock is faked (Date only). Runs on SQLite, and on PostgreSQL + Redis when
// TEST_* are set.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Receiver } from '../../helpers/webhook-receiver.ts';
import { asClient } from '../../helpers/selling-fixtures.ts';
import { payByCard, purchase, stripeStand, type StripeStand } from '../../helpers/stripe-fixtures.ts';

const PLAN = {
  title: 'Metered API',
  pricing: { type: 'recurrent', recurrent: { '1M': { price: '10.00', setup: '0', enabled: true } } },
  config: {
    // This walk follows calendar months (new plans default to billing_period, issue 21 item 5).
    usage_period: 'calendar_month',
    included: 1000,
    overage: { mode: 'package', package_size: 100, package_price: '1.00' },
    hard_limit: 5000,
    max_keys: 2,
    // Shared by the order's keys; the April uses (1,750) stay under it, the last step goes past it.
    rate_limit: { limit: 2000, window_seconds: 3600 },
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

describe('a usage-priced plan from purchase to the next period', () => {
  it('bills 1,750 uses of a 1,000-included plan as 8 $ overage, charged to the saved card, once', async () => {
    const { t, stripe } = stand;
    at('2027-04-08T09:00:00Z');
    const prepared = await t.admin('product/prepare', { title: PLAN.title, type: 'apikey' });
    const productId = prepared.result as number;
    expect((await t.admin('product/update', { id: productId, status: 'enabled', pricing: PLAN.pricing, config: PLAN.config })).result).toBe(true);
    const hook = await t.admin('webhook/create', { url: receiver.url, events: ['usage.threshold_reached'] });
    expect(hook.body.error).toBeNull();
    receiver.secret = hook.result.secret as string;

    // Bought and paid by card: the card is saved for off-session charges.
    const bought = await purchase(t, productId);
    await payByCard(stand, bought.hash);
    const service = await asClient(t, bought.token, 'order/service', { id: bought.orderId });
    expect(service.result).toMatchObject({ status: 'active', valid: 1 });
    // The keys the plan's uses go through, in turn: the order's first and a second one (the plan allows two).
    const keys: string[] = [service.result.api_key as string];
    const second = await asClient(t, bought.token, 'serviceapikey/create', { order_id: bought.orderId, name: 'staging' });
    expect(second.status).toBe(200);
    keys.push(second.result.api_key as string);
    expect((await asClient(t, bought.token, 'serviceapikey/create', { order_id: bought.orderId, name: 'third' })).status).toBe(409);
    let turn = 0;
    const use = async (times: number) => {
      for (let i = 0; i < times; i++) {
        const reply = await t.call('/api/guest/serviceapikey/check', { key: keys[turn++ % keys.length] });
        expect(reply.result).toBe(true);
      }
    };
    const flushAndDeliver = async () => {
      await t.services.apikeys.flushUsage();
      await t.services.outbox.runDue(new Date());
    };
    const thresholdsReceived = () => receiver.received.filter((r) => r.verified?.type === 'usage.threshold_reached').map((r) => r.verified!.data);
    const thresholdMails = async () =>
      t.services.db.selectFrom('emails').select(['subject', 'text']).where('client_id', '=', bought.clientId).where('template', '=', 'usage_threshold').orderBy('id').execute();

    await use(799);
    await flushAndDeliver();
    expect(thresholdsReceived()).toEqual([]);
    await use(1);
    await flushAndDeliver();
    expect(thresholdsReceived()).toEqual([{ order_id: bought.orderId, client_id: bought.clientId, meter: 'calls', meter_name: 'Calls', unit: 'calls', threshold: 80, used: 800, included: 1000, period_start: '2027-04-01T00:00:00Z' }]);
    await use(949);
    const info = await t.call('/api/guest/serviceapikey/get_info', { key: keys[0] });
    expect(info.result).toMatchObject({
      valid: 1,
      reason: 'VALID',
      usage: { period_start: '2027-04-01', period_end: '2027-04-30', used: 1750, included: 1000, overage_units: 750, overage_amount: '8.00', hard_limit: 5000 },
    });
    await flushAndDeliver();
    // Announced by the flush that carried the count past 1,000 (the background flush runs every second meanwhile).
    const announced = thresholdsReceived();
    expect(announced.map((data) => data.threshold)).toEqual([80, 100]);
    expect(announced[1]!.used).toBeGreaterThanOrEqual(1000);
    expect(receiver.received.every((r) => r.verifyError === null)).toBe(true);
    const mails = await thresholdMails();
    expect(mails.map((mail) => mail.subject)).toEqual(['Metered API: 80% of the included Calls', 'Metered API: 100% of the included Calls']);
    expect(mails[1]!.text).toContain('of the 1,000 calls included in this period for Calls (100%)');
    // Each key's share (alternating, get_info on the first key was a use too); together they are the order's 1,750.
    const usageOf = async (keyId?: number) =>
      (await asClient(t, bought.token, 'serviceapikey/usage', keyId === undefined ? { order_id: bought.orderId } : { order_id: bought.orderId, key_id: keyId })).result.total as number;
    expect(await usageOf()).toBe(1750);
    expect(await usageOf(second.result.id as number)).toBe(874);
    // The client area's figures: used / included, projected extra charge.
    expect((await asClient(t, bought.token, 'order/service', { id: bought.orderId })).result.usage).toMatchObject({ used: 1750, included: 1000, overage_amount: '8.00' });

    // The month closes; the scheduler bills the overage on an invoice of its own and charges the saved card.
    at('2027-05-01T00:00:30Z');
    const report = await t.services.cron.run(new Date());
    expect(report.usage_invoices).toBe(1);
    const invoices = (await asClient(t, bought.token, 'invoice/get_list', {})).result.list as Array<{ id: number; total: string; items: Array<{ task: string; title: string }> }>;
    const overage = invoices.find((invoice) => invoice.items.some((item) => item.task === 'usage'))!;
    expect(overage).toMatchObject({ total: '8.00', items: [{ task: 'usage', title: 'Metered API — usage 2027-04-01 to 2027-04-30: 750 calls over the 1,000 included' }] });
    await t.services.outbox.runDue(new Date());
    const charges = stripe.requestsTo('POST', '/v1/payment_intents').filter((request) => (request.body.metadata as { invoice_id: string }).invoice_id === String(overage.id));
    expect(charges).toHaveLength(1);
    expect(charges[0]!.body).toMatchObject({ amount: '800', currency: 'usd', off_session: 'true' });
    expect((await asClient(t, bought.token, 'invoice/get', { id: overage.id })).result).toMatchObject({ status: 'paid', total: '8.00' });

    // Once: the scheduler runs again (and again) and issues nothing more.
    expect((await t.services.cron.run(new Date())).usage_invoices).toBe(0);
    at('2027-05-01T00:05:00Z');
    expect((await t.services.cron.run(new Date())).usage_invoices).toBe(0);

    // The next period starts clean.
    const next = await t.call('/api/guest/serviceapikey/get_info', { key: keys[0] });
    expect(next.result.usage).toMatchObject({ period_start: '2027-05-01', period_end: '2027-05-31', used: 1, overage_units: 0, overage_amount: '0.00' });

    // The rate limit (2,000 an hour, both keys together): past it a check answers false and is not a use.
    let accepted = 0;
    let refused = false;
    for (let i = 0; i < 2100 && !refused; i++) {
      const reply = await t.call('/api/guest/serviceapikey/check', { key: keys[i % 2] });
      if (reply.result === true) accepted++;
      else refused = true;
    }
    expect(refused).toBe(true);
    expect(accepted).toBeLessThan(2000);
    const limited = await t.call('/api/guest/serviceapikey/get_info', { key: keys[1] });
    expect(limited.result).toMatchObject({ valid: 0, reason: 'RATE_LIMITED', usage: { used: 1 + accepted } });
    expect(limited.result.retry_after).toBeGreaterThanOrEqual(1);
  });
});
