// Usage billing (CONTRACT §12) over HTTP and through the scheduled jobs: usage periods, included uses, the overage
// projection in get_info, hard limits, validation at product update, thresholds once per period, and the close of
// each period billed exactly once (ten concurrent runs, catching up after downtime, the last second before the
// close, plan changes, nothing for 0 overage). The clock is faked (Date only), so periods can end inside a test.
// Runs on SQLite, and on PostgreSQL + Redis when TEST_* are set.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createUsageCloser } from '../../../src/modules/serviceapikey/usage/overage.ts';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectInvalid } from '../../helpers/assertions.ts';
import { asClient, asStaff, MONTHLY, staffWith } from '../../helpers/selling-fixtures.ts';

const PACKAGE = { mode: 'package', package_size: 100, package_price: '1.00' };

let t: TestApp;
let client: Awaited<ReturnType<TestApp['createClient']>>;

beforeAll(async () => {
  t = await createTestApp({ WEBHOOK_ALLOW_PRIVATE: 'true' });
  client = await t.createClient();
});
afterAll(async () => {
  vi.useRealTimers();
  await t.close();
});
afterEach(() => {
  vi.useRealTimers();
});

/** Freezes the clock (Date only: timers and I/O run as usual). */
function at(iso: string): number {
  const ms = Date.parse(iso);
  vi.useFakeTimers({ toFake: ['Date'], now: ms });
  vi.setSystemTime(ms);
  return ms;
}

async function plan(config: Record<string, unknown>, title = 'Metered plan', pricing: Record<string, unknown> = MONTHLY): Promise<number> {
  const prepared = await t.admin('product/prepare', { title, type: 'apikey' });
  expect(prepared.body.error).toBeNull();
  const id = prepared.result as number;
  // These tests count by calendar month unless they say otherwise (new plans default to billing_period, issue 21 item 5).
  const updated = await t.admin('product/update', { id, status: 'enabled', pricing, config: { usage_period: 'calendar_month', ...config } });
  expect(updated.body).toEqual({ result: true, error: null });
  return id;
}

async function buy(productId: number, buyer = client): Promise<{ orderId: number; key: string }> {
  const created = await t.admin('order/create', { client_id: buyer.id, product_id: productId, activate: true, period: '1M' });
  expect(created.body.error).toBeNull();
  const orderId = created.result as number;
  const key = (await t.admin('serviceapikey/get', { order_id: orderId })).result.api_key as string;
  return { orderId, key };
}

const check = async (key: string) => (await t.call('/api/guest/serviceapikey/check', { key })).result as boolean;
const info = async (key: string) => (await t.call('/api/guest/serviceapikey/get_info', { key })).result;

async function use(key: string, times: number): Promise<void> {
  for (let i = 0; i < times; i++) expect(await check(key)).toBe(true);
}

const flush = () => t.services.apikeys.flushUsage();
const closes = (orderId: number) => t.services.db.selectFrom('usage_closes').selectAll().where('order_id', '=', orderId).orderBy('period_start').execute();
const usageInvoices = async (orderId: number) =>
  t.services.db
    .selectFrom('invoice_items')
    .innerJoin('invoices', 'invoices.id', 'invoice_items.invoice_id')
    .select(['invoices.id', 'invoices.total', 'invoices.status', 'invoice_items.title', 'invoice_items.total as line'])
    .where('invoice_items.order_id', '=', orderId)
    .where('invoice_items.task', '=', 'usage')
    .orderBy('invoices.id')
    .execute();

describe('validation at product update', () => {
  it('refuses invalid usage options with a 422 naming the field, and stores valid ones normalised', async () => {
    const id = await plan({});
    const update = (config: Record<string, unknown>) => t.admin('product/update', { id, config });
    expectInvalid(await update({ included: -5 }), 'config.included');
    expectInvalid(await update({ included: 'many' }), 'config.included');
    expectInvalid(await update({ hard_limit: -1 }), 'config.hard_limit');
    expectInvalid(await update({ usage_period: 'fortnight' }), 'config.usage_period');
    expectInvalid(await update({ overage: { mode: 'bidding' } }), 'config.overage.mode');
    expectInvalid(await update({ overage: { mode: 'per_unit', unit_price: '-0.01' } }), 'config.overage.unit_price');
    expectInvalid(await update({ overage: { mode: 'per_unit', unit_price: '0.1234567' } }), 'config.overage.unit_price');
    expectInvalid(await update({ overage: { mode: 'package', package_size: 0, package_price: '1' } }), 'config.overage.package_size');
    expectInvalid(
      await update({ overage: { mode: 'graduated', tiers: [{ up_to: 500, unit_price: '0.01' }, { up_to: 100, unit_price: '0.02' }, { up_to: null, unit_price: '0.03' }] } }),
      'config.overage.tiers[1].up_to',
    );
    expectInvalid(await update({ overage: { mode: 'graduated', tiers: [{ up_to: null, unit_price: '1' }, { up_to: 10, unit_price: '1' }] } }), 'config.overage.tiers[0].up_to');
    expectInvalid(await update({ included: 100, hard_limit: 50 }), 'config.hard_limit');

    expect((await update({ included: '1000', overage: { mode: 'per_unit', unit_price: 0.5 }, hard_limit: 5000, usage_period: 'billing_period' })).result).toBe(true);
    const got = (await t.admin('product/get', { id })).result;
    expect(got.config).toMatchObject({ included: 1000, overage: { mode: 'per_unit', unit_price: '0.5' }, hard_limit: 5000, usage_period: 'billing_period' });
    // Guests see the plan's usage terms beside its custom parameters (the price preview of the order form).
    expect((await t.call('/api/guest/product/get', { id })).result.config).toEqual({
      custom: {},
      included: 1000,
      overage: { mode: 'per_unit', unit_price: '0.5' },
      hard_limit: 5000,
      usage_period: 'billing_period',
    });
    // Sending null takes an option off.
    expect((await update({ overage: null, hard_limit: null })).result).toBe(true);
    const cleared = (await t.admin('product/get', { id })).result.config as Record<string, unknown>;
    expect(cleared.overage).toBeUndefined();
    expect(cleared.hard_limit).toBeUndefined();
  });
});

describe('get_info and the limits', () => {
  it('projects the overage and keeps validating past the included uses; stops at the hard limit', async () => {
    at('2027-03-10T12:00:00Z');
    const id = await plan({ included: 10, overage: PACKAGE, hard_limit: 25 });
    const { key } = await buy(id);
    await use(key, 14);
    const got = await info(key);
    expect(got).toMatchObject({ valid: 1, reason: 'VALID' });
    expect(got.usage).toEqual({
      period_start: '2027-03-01',
      period_end: '2027-03-31',
      used: 15,
      limit: null,
      // An overage plan's remaining is what is left to the hard limit (issue 21 item 4).
      remaining: 10,
      included: 10,
      overage_units: 5,
      overage_amount: '1.00',
      hard_limit: 25,
      limited_by: null,
      meters: [],
    });
    await use(key, 10);
    // The 25th use was the last: the hard limit holds even with overage pricing.
    expect(await check(key)).toBe(false);
    const stopped = await info(key);
    expect(stopped).toMatchObject({ valid: 0, reason: 'LIMIT_EXCEEDED', usage: { used: 25, overage_units: 15, overage_amount: '1.00', limited_by: 'calls' } });
    // The client area and the admin order page read the same figures from order/service.
    const service = await t.admin('order/service', { id: (await t.admin('order/get_list', { product_id: id })).result.list[0].id });
    expect(service.result.usage).toMatchObject({ used: 25, included: 10, overage_units: 15, overage_amount: '1.00', hard_limit: 25, limited_by: 'calls' });
  });

  it('enforce_limit without overage stops at the included uses (the monthlyLimit parameter by default)', async () => {
    at('2027-03-10T12:00:00Z');
    const id = await plan({ enforce_limit: true, custom: { monthlyLimit: 3 } });
    const { key } = await buy(id);
    await use(key, 3);
    expect(await check(key)).toBe(false);
    expect((await info(key)).usage).toMatchObject({ used: 3, limit: 3, included: 3, overage_units: 0, overage_amount: null, hard_limit: null });
  });

  it('billing_period counts from the order\'s activation to its expiry, to the second', async () => {
    at('2027-01-10T14:23:05Z');
    const id = await plan({ usage_period: 'billing_period', included: 2, overage: { mode: 'per_unit', unit_price: '0.25' } });
    const { orderId, key } = await buy(id);
    await use(key, 3);
    expect((await info(key)).usage).toMatchObject({ period_start: '2027-01-10T14:23:05Z', period_end: '2027-02-10T14:23:05Z', used: 4, overage_units: 2, overage_amount: '0.50' });
    // The last second of the period, then the renewal's first seconds: each use lands in its own period.
    at('2027-02-10T14:23:04.600Z');
    await use(key, 1);
    expect((await t.admin('order/renew', { id: orderId })).result).toBe(true);
    at('2027-02-10T14:23:05.400Z');
    await use(key, 2);
    expect((await info(key)).usage).toMatchObject({ period_start: '2027-02-10T14:23:05Z', period_end: '2027-03-10T14:23:05Z', used: 3 });
    await flush();
    at('2027-02-10T14:25:00Z');
    await t.services.cron.run(new Date());
    const [closed] = await closes(orderId);
    expect(closed).toMatchObject({ period_start: '2027-01-10T14:23:05Z', period_end: '2027-02-10T14:23:05Z' });
    expect(Number(closed!.used)).toBe(5);
    expect(Number(closed!.amount)).toBe(75);
    expect((await usageInvoices(orderId)).map((row) => row.total)).toEqual([75]);
  });
});

describe('the close of a usage period', () => {
  it('bills a use counted in the last second of a month in that month, and one a moment later in the next', async () => {
    at('2027-01-31T23:59:59.300Z');
    const id = await plan({ included: 1, overage: { mode: 'per_unit', unit_price: '1' } });
    const { orderId, key } = await buy(id);
    await use(key, 3);
    at('2027-02-01T00:00:00.200Z');
    await use(key, 2);
    expect((await info(key)).usage).toMatchObject({ period_start: '2027-02-01', used: 3 });
    // Before the grace after the close nothing is closed; a moment later January is.
    expect((await t.services.cron.run(new Date())).usage_invoices).toBe(0);
    at('2027-02-01T00:00:20Z');
    expect((await t.services.cron.run(new Date())).usage_invoices).toBe(1);
    const [january] = await closes(orderId);
    expect({ start: january!.period_start, used: Number(january!.used), units: Number(january!.overage_units), amount: Number(january!.amount) }).toEqual({
      start: '2027-01-01T00:00:00Z',
      used: 3,
      units: 2,
      amount: 200,
    });
    const [invoice] = await usageInvoices(orderId);
    expect(invoice).toMatchObject({ status: 'unpaid', line: 200, title: 'Metered plan — usage 2027-01-01 to 2027-01-31: 2 calls over the 1 included' });
    const record = (await asClient(t, client.token, 'invoice/get', { id: invoice!.id })).result;
    expect(record).toMatchObject({ total: '2.00', items: [{ task: 'usage', quantity: 1, price: '2.00', total: '2.00', order_id: orderId }] });
  });

  it('ten concurrent runs issue one line per order and period', async () => {
    at('2027-05-12T08:00:00Z');
    const id = await plan({ included: 5, overage: PACKAGE });
    const first = await buy(id);
    const second = await buy(id);
    await use(first.key, 120);
    await use(second.key, 6);
    await flush();
    at('2027-06-01T00:01:00Z');
    // (Periods of the other tests' orders close in these runs too: count per order.)
    const runs = await Promise.all(Array.from({ length: 10 }, () => t.services.usageCloser.closePeriods(new Date())));
    expect(runs.reduce((sum, run) => sum + run.failed, 0)).toBe(0);
    expect((await usageInvoices(first.orderId)).map((row) => row.total)).toEqual([200]);
    expect((await usageInvoices(second.orderId)).map((row) => row.total)).toEqual([100]);
    expect(await closes(first.orderId)).toHaveLength(1);
    // Once more, later: nothing new.
    at('2027-06-01T00:30:00Z');
    expect((await t.services.cron.run(new Date())).usage_invoices).toBe(0);
    expect(await usageInvoices(first.orderId)).toHaveLength(1);
  });

  it('catches up every period that closed while the server was down, and bills nothing for 0 overage', async () => {
    at('2027-07-15T10:00:00Z');
    const id = await plan({ included: 2, overage: { mode: 'per_unit', unit_price: '0.10' } });
    const { orderId, key } = await buy(id);
    await use(key, 5);
    at('2027-08-15T10:00:00Z');
    expect((await t.admin('order/renew', { id: orderId })).result).toBe(true);
    await use(key, 2);
    at('2027-09-15T10:00:00Z');
    expect((await t.admin('order/renew', { id: orderId })).result).toBe(true);
    await use(key, 4);
    await flush();
    // Down from July to October: the first run after it closes July, August and September.
    at('2027-10-03T00:00:00Z');
    const run = await t.services.usageCloser.closePeriods(new Date());
    expect(run.failed).toBe(0);
    const rows = await closes(orderId);
    expect(rows.map((row) => [row.period_start.slice(0, 7), Number(row.used), Number(row.amount), row.invoice_id === null])).toEqual([
      ['2027-07', 5, 30, false],
      ['2027-08', 2, 0, true],
      ['2027-09', 4, 20, false],
    ]);
    expect((await usageInvoices(orderId)).map((row) => row.total)).toEqual([30, 20]);
  });

  it('a failure between recording the close and issuing the invoice leaves neither: the next run bills it once', async () => {
    at('2027-08-10T10:00:00Z');
    const id = await plan({ included: 1, overage: { mode: 'per_unit', unit_price: '0.50' } });
    const { orderId, key } = await buy(id);
    await use(key, 3);
    await flush();
    at('2027-09-01T00:01:00Z');
    // A closer whose invoice step dies (the process crashing at the worst moment, inside the transaction).
    const crashing = createUsageCloser({
      db: t.services.db,
      dialect: t.services.dialect,
      invoices: {
        issueUsageInvoice: () => {
          throw new Error('killed');
        },
      },
      money: { precision: 2, format: (minor: number) => (minor / 100).toFixed(2) },
      selling: t.services.selling,
      flushUsage: flush,
    });
    const failed = await crashing.closePeriods(new Date());
    expect(failed.failed).toBeGreaterThanOrEqual(1);
    expect(await closes(orderId)).toEqual([]);
    expect(await usageInvoices(orderId)).toEqual([]);
    await t.services.usageCloser.closePeriods(new Date());
    await t.services.usageCloser.closePeriods(new Date());
    expect((await usageInvoices(orderId)).map((row) => row.total)).toEqual([100]);
    expect(await closes(orderId)).toHaveLength(1);
  });

  it('a plan change mid-period bills the whole period at the plan in force when it closes', async () => {
    at('2027-11-03T09:00:00Z');
    const cheap = await plan({ included: 10, overage: { mode: 'per_unit', unit_price: '0.01' } }, 'Cheap', {
      type: 'recurrent',
      recurrent: { '1M': { price: '5.00', setup: '0', enabled: true } },
    });
    const dear = await plan({ included: 20, overage: { mode: 'per_unit', unit_price: '0.10' } }, 'Dear', {
      type: 'recurrent',
      recurrent: { '1M': { price: '50.00', setup: '0', enabled: true } },
    });
    const buyer = await t.createClient();
    const { orderId, key } = await buy(cheap, buyer);
    await use(key, 15);
    at('2027-11-18T09:00:00Z');
    const changed = await asClient(t, buyer.token, 'order/change_plan', { id: orderId, product_id: dear, period: '1M' });
    expect(changed.body.error).toBeNull();
    if (changed.result.invoice_id !== null) await t.admin('invoice/mark_as_paid', { id: changed.result.invoice_id });
    expect((await t.admin('order/get', { id: orderId })).result.product_id).toBe(dear);
    await use(key, 15);
    // The projection already applies the new plan to the whole period: 30 uses, 20 included, 10 × 0.10.
    expect((await info(key)).usage).toMatchObject({ used: 31, included: 20, overage_units: 11, overage_amount: '1.10' });
    await flush();
    at('2027-12-01T00:05:00Z');
    await t.services.usageCloser.closePeriods(new Date());
    const [november] = await closes(orderId);
    expect({ used: Number(november!.used), included: Number(november!.included), amount: Number(november!.amount) }).toEqual({ used: 31, included: 20, amount: 110 });
  });

  it("an order's keys share its period's uses, and a plan change moves every key of the order to the new plan", async () => {
    at('2027-08-03T09:00:00Z');
    const small = await plan({ included: 10, overage: { mode: 'per_unit', unit_price: '0.01' }, max_keys: 2 }, 'Small', {
      type: 'recurrent',
      recurrent: { '1M': { price: '5.00', setup: '0', enabled: true } },
    });
    const large = await plan({ included: 20, overage: { mode: 'per_unit', unit_price: '0.10' }, hard_limit: 30, max_keys: 2 }, 'Large', {
      type: 'recurrent',
      recurrent: { '1M': { price: '50.00', setup: '0', enabled: true } },
    });
    const buyer = await t.createClient();
    const { orderId, key: first } = await buy(small, buyer);
    const added = await t.admin('serviceapikey/create', { order_id: orderId, name: 'second' });
    expect(added.body.error).toBeNull();
    const second = added.result.api_key as string;
    await use(first, 6);
    await use(second, 6);
    // The order's 12 uses and this get_info, whichever key asks.
    expect((await info(second)).usage).toMatchObject({ used: 13, included: 10, overage_units: 3, overage_amount: '0.03', hard_limit: null });
    at('2027-08-18T09:00:00Z');
    const changed = await asClient(t, buyer.token, 'order/change_plan', { id: orderId, product_id: large, period: '1M' });
    expect(changed.body.error).toBeNull();
    if (changed.result.invoice_id !== null) await t.admin('invoice/mark_as_paid', { id: changed.result.invoice_id });
    expect((await t.admin('order/get', { id: orderId })).result.product_id).toBe(large);
    // Both keys apply the new plan, to the period's uses so far.
    expect((await info(first)).usage).toMatchObject({ used: 14, included: 20, overage_units: 0, hard_limit: 30 });
    expect((await info(second)).usage).toMatchObject({ used: 15, included: 20, overage_units: 0, hard_limit: 30 });
    // The hard limit is the order's: 15 more through the second key stop the first one too.
    await use(second, 15);
    expect(await check(first)).toBe(false);
    expect(await info(first)).toMatchObject({ valid: 0, reason: 'LIMIT_EXCEEDED', usage: { used: 30, overage_units: 10, overage_amount: '1.00' } });
    await flush();
    at('2027-09-01T00:05:00Z');
    await t.services.usageCloser.closePeriods(new Date());
    const [august] = await closes(orderId);
    expect({ used: Number(august!.used), included: Number(august!.included), amount: Number(august!.amount) }).toEqual({ used: 30, included: 20, amount: 100 });
  });
});

describe('usage thresholds', () => {
  it('announces 80% and 100% of the included uses once per period each, as a webhook delivery and a mail', async () => {
    at('2028-01-05T10:00:00Z');
    const hook = await t.admin('webhook/create', { url: 'http://127.0.0.1:9/usage', events: ['usage.threshold_reached'] });
    expect(hook.body.error).toBeNull();
    const buyer = await t.createClient();
    const id = await plan({ included: 10, overage: PACKAGE });
    const { orderId, key } = await buy(id, buyer);
    const announced = async () =>
      (await t.services.db.selectFrom('webhook_deliveries').select('body').where('event_type', '=', 'usage.threshold_reached').orderBy('id').execute())
        .map((row) => (JSON.parse(row.body) as { data: Record<string, unknown> }).data)
        .filter((data) => data.order_id === orderId);
    const mails = async () => (await t.services.db.selectFrom('emails').select(['template', 'subject']).where('client_id', '=', buyer.id).where('template', '=', 'usage_threshold').execute()).map((row) => row.subject);

    await use(key, 7);
    await flush();
    expect(await announced()).toEqual([]);
    await use(key, 1);
    await flush();
    expect(await announced()).toEqual([{ order_id: orderId, client_id: buyer.id, meter: 'calls', meter_name: 'Calls', unit: 'calls', threshold: 80, used: 8, included: 10, period_start: '2028-01-01T00:00:00Z' }]);
    expect(await mails()).toEqual(['Metered plan: 80% of the included Calls']);
    await use(key, 5);
    await flush();
    await use(key, 5);
    await flush();
    // 100% comes with the flush that carried the count past 10 (the background flush may run in between).
    const both = await announced();
    expect(both.map((data) => data.threshold)).toEqual([80, 100]);
    expect(both[1]!.used).toBeGreaterThanOrEqual(10);
    expect(await mails()).toHaveLength(2);
    // The next month starts clean and announces again.
    at('2028-02-02T10:00:00Z');
    await use(key, 10);
    await flush();
    expect((await announced()).map((data) => [data.threshold, data.period_start])).toEqual([
      [80, '2028-01-01T00:00:00Z'],
      [100, '2028-01-01T00:00:00Z'],
      [80, '2028-02-01T00:00:00Z'],
      [100, '2028-02-01T00:00:00Z'],
    ]);
    // Uses reported by an SDK (report_usage) count in the period and cross thresholds too.
    const sdk = await buy(await plan({ included: 100, overage: PACKAGE }), buyer);
    const verifier = await staffWith(t, ['serviceapikey.check']);
    const keyId = (await asStaff(t, verifier, 'serviceapikey/get_info', { key: sdk.key })).result.key_id as number;
    await flush();
    const reported = await asStaff(t, verifier, 'serviceapikey/report_usage', { batch_id: 'usage-test-1', usage: [{ key_id: keyId, count: 85 }] });
    expect(reported.body).toEqual({ result: true, error: null });
    expect((await announced()).filter((data) => data.order_id === sdk.orderId)).toEqual([]);
    const sdkAnnounced = (await t.services.db.selectFrom('usage_thresholds').select(['threshold', 'used']).where('order_id', '=', sdk.orderId).execute()).map((row) => [row.threshold, Number(row.used)]);
    expect(sdkAnnounced).toEqual([[80, 86]]);
    expect((await info(sdk.key)).usage).toMatchObject({ used: 87, included: 100 });
    // A key without a quota announces nothing.
    const free = await buy(await plan({}), buyer);
    await use(free.key, 50);
    await flush();
    expect(await t.services.db.selectFrom('usage_thresholds').selectAll().where('order_id', '=', free.orderId).execute()).toEqual([]);
  });
});
