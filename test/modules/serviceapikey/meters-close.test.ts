// The close bills every meter (issue 23 item 5): one overage invoice per order and period with one line per meter that
// has an amount (calls first, then the plan's meters in order), each rounded half-up once; `latest` and `max` bill the
// period's value; a period with only meter events closes; a plan change mid-period bills each meter at the plan in
// force at the close; ten concurrent runs bill once; an ingestion racing the close is either billed or refused
// PERIOD_CLOSED. Events go in through the usage service with an explicit `now`; the clock is faked (Date only) where
// HTTP actions read it. Runs on SQLite, and on PostgreSQL + Redis when TEST_* are set.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { inTransaction } from '../../../src/platform/transaction.ts';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { at } from '../../helpers/clock.ts';
import { asClient, MONTHLY } from '../../helpers/selling-fixtures.ts';

let t: TestApp;
let client: Awaited<ReturnType<TestApp['createClient']>>;

beforeAll(async () => {
  t = await createTestApp();
  client = await t.createClient();
});
afterAll(async () => {
  vi.useRealTimers();
  await t.close();
});
afterEach(() => {
  vi.useRealTimers();
});

/** The "AI API" of issue 23: tokens on graduated tiers, requests per unit, distinct users per unit. */
const AI_METERS = [
  {
    code: 'tokens',
    name: 'Tokens',
    unit: 'tokens',
    aggregation: 'sum',
    included: 1_000_000,
    // 2 $ per million for the first million beyond the included ones, then 1 $ per million.
    overage: { mode: 'graduated', tiers: [{ up_to: 1_000_000, unit_price: '0.000002' }, { up_to: null, unit_price: '0.000001' }] },
  },
  // 0.015 per request: 3 extra requests are 0.045, billed 0.05 (rounded once per line, not per request).
  { code: 'requests', name: 'Requests', unit: 'requests', aggregation: 'count', included: 5, overage: { mode: 'per_unit', unit_price: '0.015' } },
  { code: 'users', name: 'Distinct users', unit: 'users', aggregation: 'unique_count', property: 'user', included: 2, overage: { mode: 'per_unit', unit_price: '0.10' } },
];

async function plan(title: string, config: Record<string, unknown>, pricing: Record<string, unknown> = MONTHLY): Promise<number> {
  const id = (await t.admin('product/prepare', { title, type: 'apikey' })).result as number;
  const updated = await t.admin('product/update', { id, status: 'enabled', pricing, config: { usage_period: 'calendar_month', ...config } });
  expect(updated.body).toEqual({ result: true, error: null });
  return id;
}

async function buy(productId: number, buyer = client): Promise<number> {
  const created = await t.admin('order/create', { client_id: buyer.id, product_id: productId, activate: true, period: '1M' });
  expect(created.body.error).toBeNull();
  return created.result as number;
}

/** Ingests `events` for the order at `now`; every one must be accepted. */
async function send(orderId: number, now: Date, events: Array<Record<string, unknown>>): Promise<void> {
  const answer = await t.services.usage.ingest(
    events.map((event) => ({ order_id: orderId, timestamp: now.toISOString(), ...event })),
    now,
  );
  expect(answer.rejected).toEqual([]);
  expect(answer.accepted).toBe(events.length);
}

let ids = 0;
const id = (): string => `e${++ids}`;
const times = (n: number, event: () => Record<string, unknown>) => Array.from({ length: n }, event);

const closes = (orderId: number) => t.services.db.selectFrom('usage_closes').selectAll().where('order_id', '=', orderId).orderBy('period_start').execute();
const closeMeters = (orderId: number) =>
  t.services.db
    .selectFrom('usage_close_meters')
    .innerJoin('usage_closes', 'usage_closes.id', 'usage_close_meters.close_id')
    .select(['usage_close_meters.meter', 'usage_close_meters.used', 'usage_close_meters.overage_units', 'usage_close_meters.amount'])
    .where('usage_closes.order_id', '=', orderId)
    .orderBy('usage_close_meters.close_id')
    .orderBy('usage_close_meters.position')
    .execute()
    .then((rows) => rows.map((row) => [row.meter, Number(row.used), Number(row.overage_units), Number(row.amount)]));
const usageLines = (orderId: number) =>
  t.services.db
    .selectFrom('invoice_items')
    .innerJoin('invoices', 'invoices.id', 'invoice_items.invoice_id')
    .select(['invoices.id as invoice', 'invoices.subtotal', 'invoice_items.title', 'invoice_items.total'])
    .where('invoice_items.order_id', '=', orderId)
    .where('invoice_items.task', '=', 'usage')
    .orderBy('invoice_items.id')
    .execute();

describe('the close bills every meter', () => {
  it('calls and three meters (graduated sum, count, unique count): one invoice, one line per meter, calls first', async () => {
    const now = at('2031-03-20T12:00:00Z');
    const orderId = await buy(await plan('AI API', { included: 10, overage: { mode: 'per_unit', unit_price: '0.01' }, meters: AI_METERS }));
    await send(orderId, now, [
      ...times(15, () => ({ id: id(), meter: 'calls' })),
      { id: id(), meter: 'tokens', value: 1_500_000 },
      { id: id(), meter: 'tokens', value: 1_000_000 },
      { id: id(), meter: 'tokens', value: 1_000_000, timestamp: '2031-03-14T08:00:00Z' },
      ...times(8, () => ({ id: id(), meter: 'requests' })),
      ...['u1', 'u2', 'u3', 'u1', 'u4', 'u5', 'u2'].map((user) => ({ id: id(), meter: 'users', properties: { user } })),
    ]);
    // Not before the grace after the period's end.
    expect((await t.services.usageCloser.closePeriods(new Date('2031-04-01T00:00:05Z'))).closed).toBe(0);
    const run = await t.services.usageCloser.closePeriods(at('2031-04-01T00:01:00Z'));
    expect(run.failed).toBe(0);

    const lines = await usageLines(orderId);
    expect(lines.map((line) => [line.title, line.total])).toEqual([
      ['AI API — usage 2031-03-01 to 2031-03-31: 5 calls over the 10 included', 5],
      // 2,500,000 beyond: the first million at 2 $, the next 1.5 million at 1 $.
      ['AI API — usage 2031-03-01 to 2031-03-31: 2,500,000 tokens over the 1,000,000 included', 350],
      ['AI API — usage 2031-03-01 to 2031-03-31: 3 requests over the 5 included', 5],
      ['AI API — Distinct users, usage 2031-03-01 to 2031-03-31: 3 users over the 2 included', 30],
    ]);
    expect(new Set(lines.map((line) => line.invoice)).size).toBe(1);
    expect(lines[0]!.subtotal).toBe(390);
    const [closed] = await closes(orderId);
    expect([Number(closed!.used), Number(closed!.overage_units), Number(closed!.amount), closed!.invoice_id]).toEqual([15, 5, 5, lines[0]!.invoice]);
    expect(await closeMeters(orderId)).toEqual([
      ['tokens', 3_500_000, 2_500_000, 350],
      ['requests', 8, 3, 5],
      ['users', 5, 3, 30],
    ]);
    // A meter is recorded once per close: the database refuses a second row.
    const again = t.services.db
      .insertInto('usage_close_meters')
      .values({ close_id: closed!.id, position: 9, meter: 'tokens', name: 'Tokens', unit: 'tokens', aggregation: 'sum', used: 1, included: 0, overage_units: 1, amount: 1 })
      .execute();
    await expect(again).rejects.toThrow();
    // The client reads the invoice with its four lines.
    const invoice = (await asClient(t, client.token, 'invoice/get', { id: lines[0]!.invoice })).result;
    expect(invoice.items.map((item: { total: string }) => item.total)).toEqual(['0.05', '3.50', '0.05', '0.30']);
    expect(invoice.subtotal).toBe('3.90');

    // What staff and the client area read of past closes: the calls' figures, the total, and each meter's.
    expect(await t.services.usageCloser.closesOf(orderId)).toEqual([
      {
        period_start: '2031-03-01T00:00:00Z',
        period_end: '2031-04-01T00:00:00Z',
        used: 15,
        included: 10,
        overage_units: 5,
        amount: '0.05',
        total: '3.90',
        invoice_id: lines[0]!.invoice,
        meters: [
          { code: 'tokens', name: 'Tokens', unit: 'tokens', aggregation: 'sum', used: 3_500_000, included: 1_000_000, overage_units: 2_500_000, amount: '3.50' },
          { code: 'requests', name: 'Requests', unit: 'requests', aggregation: 'count', used: 8, included: 5, overage_units: 3, amount: '0.05' },
          { code: 'users', name: 'Distinct users', unit: 'users', aggregation: 'unique_count', used: 5, included: 2, overage_units: 3, amount: '0.30' },
        ],
      },
    ]);
    // Closed: a late event of March is refused, and April starts clean.
    const late = await t.services.usage.ingest([{ id: id(), order_id: orderId, meter: 'tokens', value: 5, timestamp: '2031-03-31T23:00:00Z' }], new Date('2031-04-01T00:02:00Z'));
    expect(late.rejected.map((rejection) => rejection.code)).toEqual(['PERIOD_CLOSED']);
    expect((await t.services.usageCloser.closePeriods(new Date('2031-04-01T00:03:00Z'))).invoices).toBe(0);
    expect(await usageLines(orderId)).toHaveLength(4);
  });

  it('latest and max bill the period\'s value (the last by timestamp, the greatest), not a sum', async () => {
    const now = at('2031-05-20T12:00:00Z');
    const meters = [
      { code: 'seats', name: 'Seats', unit: 'seats', aggregation: 'latest', included: 5, overage: { mode: 'per_unit', unit_price: '1.00' } },
      { code: 'peak', name: 'Peak', unit: 'requests/s', aggregation: 'max', included: 100, overage: { mode: 'per_unit', unit_price: '0.01' } },
    ];
    const orderId = await buy(await plan('Seats', { meters }));
    // Sent out of order: the latest by timestamp is 7 seats (on the 19th), the peak 150.
    await send(orderId, now, [
      { id: id(), meter: 'seats', value: 7, timestamp: '2031-05-19T10:00:00Z' },
      { id: id(), meter: 'seats', value: 12, timestamp: '2031-05-15T10:00:00Z' },
      { id: id(), meter: 'seats', value: 9, timestamp: '2031-05-14T10:00:00Z' },
      { id: id(), meter: 'peak', value: 90 },
      { id: id(), meter: 'peak', value: 150, timestamp: '2031-05-16T10:00:00Z' },
      { id: id(), meter: 'peak', value: 120 },
    ]);
    await t.services.usageCloser.closePeriods(at('2031-06-01T00:01:00Z'));
    expect(await closeMeters(orderId)).toEqual([
      ['seats', 7, 2, 200],
      ['peak', 150, 50, 50],
    ]);
    expect((await usageLines(orderId)).map((line) => [line.title, line.total])).toEqual([
      ['Seats — usage 2031-05-01 to 2031-05-31: 2 seats over the 5 included', 200],
      ['Seats — Peak, usage 2031-05-01 to 2031-05-31: 50 requests/s over the 100 included', 50],
    ]);
  });

  it('a period with only meter events (no calls) closes and bills them', async () => {
    const now = at('2031-07-10T12:00:00Z');
    const orderId = await buy(await plan('Tokens only', { included: 100, overage: { mode: 'per_unit', unit_price: '1' }, meters: AI_METERS }));
    await send(orderId, now, [{ id: id(), meter: 'tokens', value: 1_250_000 }]);
    expect(await t.services.db.selectFrom('api_key_period_usage').innerJoin('api_keys', 'api_keys.id', 'api_key_period_usage.api_key_id').select('count').where('api_keys.order_id', '=', orderId).execute()).toEqual([]);
    const run = await t.services.usageCloser.closePeriods(at('2031-08-01T00:01:00Z'));
    expect(run.failed).toBe(0);
    const [closed] = await closes(orderId);
    expect([closed!.period_start, Number(closed!.used), Number(closed!.amount)]).toEqual(['2031-07-01T00:00:00Z', 0, 0]);
    expect((await usageLines(orderId)).map((line) => [line.title, line.total])).toEqual([['Tokens only — usage 2031-07-01 to 2031-07-31: 250,000 tokens over the 1,000,000 included', 50]]);
    expect(await closeMeters(orderId)).toEqual([
      ['tokens', 1_250_000, 250_000, 50],
      ['requests', 0, 0, 0],
      ['users', 0, 0, 0],
    ]);
  });

  it('a meter without overage bills nothing, and a close whose total is zero issues no invoice', async () => {
    const now = at('2031-09-10T12:00:00Z');
    const meters = [
      // Far past its included units, but no price: measured and recorded, never billed.
      { code: 'storage', name: 'Storage', unit: 'bytes', aggregation: 'max', included: 10 },
      { code: 'images', name: 'Images', unit: 'images', aggregation: 'count', included: 5, overage: { mode: 'per_unit', unit_price: '1' } },
    ];
    const orderId = await buy(await plan('Free tier', { included: 10, overage: { mode: 'per_unit', unit_price: '1' }, meters }));
    await send(orderId, now, [{ id: id(), meter: 'storage', value: 5000 }, ...times(5, () => ({ id: id(), meter: 'images' })), ...times(10, () => ({ id: id(), meter: 'calls' }))]);
    const run = await t.services.usageCloser.closePeriods(at('2031-10-01T00:01:00Z'));
    expect(run.failed).toBe(0);
    const [closed] = await closes(orderId);
    expect(closed!.invoice_id).toBeNull();
    expect(await usageLines(orderId)).toEqual([]);
    expect(await closeMeters(orderId)).toEqual([
      ['storage', 5000, 0, 0],
      ['images', 5, 0, 0],
    ]);
    expect((await t.services.usageCloser.closesOf(orderId))[0]).toMatchObject({ amount: '0.00', total: '0.00', invoice_id: null });
  });

  it('a plan change mid-period bills each meter at the plan in force at the close', async () => {
    const cheapMeters = [
      { code: 'tokens', name: 'Tokens', unit: 'tokens', aggregation: 'sum', included: 1000, overage: { mode: 'per_unit', unit_price: '0.001' } },
      // Dropped by the new plan: measured in the period, billed by no one.
      { code: 'legacy', name: 'Legacy', unit: 'legacy calls', aggregation: 'count', included: 0, overage: { mode: 'per_unit', unit_price: '5' } },
    ];
    const dearMeters = [
      { code: 'images', name: 'Images', unit: 'images', aggregation: 'count', included: 1, overage: { mode: 'per_unit', unit_price: '0.50' } },
      { code: 'tokens', name: 'Tokens', unit: 'tokens', aggregation: 'sum', included: 500, overage: { mode: 'package', package_size: 1000, package_price: '2.00' } },
    ];
    const cheap = await plan('Cheap', { meters: cheapMeters });
    // Dearer per month, so the change applies once its invoice is paid (not at the period's end).
    const dear = await plan('Dear', { meters: dearMeters }, { type: 'recurrent', recurrent: { '1M': { price: '50.00', setup: '0', enabled: true } } });
    const buyer = await t.createClient();
    const now = at('2031-11-03T09:00:00Z');
    const orderId = await buy(cheap, buyer);
    await send(orderId, now, [{ id: id(), meter: 'tokens', value: 2000 }, { id: id(), meter: 'legacy' }]);

    at('2031-11-18T09:00:00Z');
    const changed = await asClient(t, buyer.token, 'order/change_plan', { id: orderId, product_id: dear, period: '1M' });
    expect(changed.body.error).toBeNull();
    if (changed.result.invoice_id !== null) await t.admin('invoice/mark_as_paid', { id: changed.result.invoice_id });
    expect((await t.admin('order/get', { id: orderId })).result.product_id).toBe(dear);
    await send(orderId, new Date(), [{ id: id(), meter: 'tokens', value: 1600 }, ...times(3, () => ({ id: id(), meter: 'images' }))]);

    await t.services.usageCloser.closePeriods(at('2031-12-01T00:01:00Z'));
    // 3,600 tokens, 500 included: 3,100 beyond are 4 started packages of 1,000 at 2.00; 2 images beyond 1 at 0.50.
    expect(await closeMeters(orderId)).toEqual([
      ['images', 3, 2, 100],
      ['tokens', 3600, 3100, 800],
    ]);
    expect((await usageLines(orderId)).map((line) => line.total)).toEqual([100, 800]);
  });

  it('ten concurrent runs issue one invoice with one line per meter', async () => {
    const now = at('2032-01-12T08:00:00Z');
    const product = await plan('Concurrent', { included: 0, overage: { mode: 'per_unit', unit_price: '0.01' }, meters: AI_METERS });
    const orders = [await buy(product), await buy(product)];
    for (const orderId of orders) {
      await send(orderId, now, [
        ...times(3, () => ({ id: id(), meter: 'calls' })),
        { id: id(), meter: 'tokens', value: 2_000_000 },
        ...times(6, () => ({ id: id(), meter: 'requests' })),
        ...['a', 'b', 'c'].map((user) => ({ id: id(), meter: 'users', properties: { user } })),
      ]);
    }
    at('2032-02-01T00:01:00Z');
    // (Periods of the other tests' orders may close in these runs too: counted per order below.)
    const runs = await Promise.all(Array.from({ length: 10 }, () => t.services.usageCloser.closePeriods(new Date())));
    expect(runs.reduce((sum, run) => sum + run.failed, 0)).toBe(0);
    for (const orderId of orders) {
      const lines = await usageLines(orderId);
      expect(lines.map((line) => line.total)).toEqual([3, 200, 2, 10]);
      expect(new Set(lines.map((line) => line.invoice)).size).toBe(1);
      expect(await closes(orderId)).toHaveLength(1);
      expect(await closeMeters(orderId)).toHaveLength(3);
    }
  });

  it('an ingestion racing the close: every accepted event is billed, or it was refused PERIOD_CLOSED', async () => {
    // Per token 1.00 with none included: the tokens line is the number of events billed, in whole units.
    const meters = [{ code: 'tokens', name: 'Tokens', unit: 'tokens', aggregation: 'sum', included: 0, overage: { mode: 'per_unit', unit_price: '1' } }];
    const product = await plan('Racing', { meters });
    for (let round = 0; round < 3; round++) {
      const orderId = await buy(product);
      // The period (March 2032) has ended; its events may still arrive (backfill) until it is closed.
      const first = new Date('2032-03-31T23:59:00Z');
      await send(orderId, first, [{ id: id(), meter: 'tokens', value: 1, timestamp: first.toISOString() }]);
      const now = new Date('2032-04-01T00:00:30Z');
      const batches = Array.from({ length: 12 }, (_, batch) =>
        times(10, () => ({ id: `${id()}-${batch}`, order_id: orderId, meter: 'tokens', value: 1, timestamp: '2032-03-31T23:59:30Z' })),
      );
      const [answers] = await Promise.all([
        Promise.all(batches.map((batch) => t.services.usage.ingest(batch, now))),
        Promise.all(Array.from({ length: 4 }, (_, i) => new Promise((resolve) => setTimeout(resolve, i * 5)).then(() => t.services.usageCloser.closePeriods(now)))),
      ]);
      // Whatever arrived after the close is refused; the next run closes the period if no run did.
      await t.services.usageCloser.closePeriods(now);
      const accepted = answers.reduce((sum, answer) => sum + answer.accepted, 0);
      const refused = answers.flatMap((answer) => answer.rejected);
      expect(refused.every((rejection) => rejection.code === 'PERIOD_CLOSED')).toBe(true);
      expect(accepted + refused.length).toBe(120);
      const billed = (await closeMeters(orderId)).find(([meter]) => meter === 'tokens');
      expect(billed?.[1], `round ${round}: ${accepted} accepted, ${refused.length} refused`).toBe(1 + accepted);
      expect((await usageLines(orderId)).map((line) => line.total)).toEqual([(1 + accepted) * 100]);
    }
  });
});

describe('a moved period moves what its meters measured', () => {
  it('staff extending an order move the meter rows of its open period: closed and billed at the new end, once', async () => {
    const meters = [{ code: 'tokens', name: 'Tokens', unit: 'tokens', aggregation: 'sum', included: 100, overage: { mode: 'per_unit', unit_price: '1' } }];
    const id0 = (await t.admin('product/prepare', { title: 'Moved', type: 'apikey' })).result as number;
    expect((await t.admin('product/update', { id: id0, status: 'enabled', pricing: MONTHLY, config: { usage_period: 'billing_period', meters } })).result).toBe(true);
    const now = at('2032-05-10T00:00:00Z');
    const orderId = await buy(id0);
    // Meter events only: the open period is known from the meters' rows alone.
    await send(orderId, now, [{ id: id(), meter: 'tokens', value: 150 }]);
    const ends = async () => (await t.services.db.selectFrom('usage_meter_days').select('period_end').where('order_id', '=', orderId).execute()).map((row) => row.period_end);
    expect(await ends()).toEqual(['2032-06-10T00:00:00Z']);
    at('2032-05-20T00:00:00Z');
    expect((await t.admin('order/update', { id: orderId, expires_at: '2032-06-24T00:00:00Z' })).result).toBe(true);
    expect(await ends()).toEqual(['2032-06-24T00:00:00Z']);
    // At the old end nothing closes; at the new one the period is billed once.
    expect((await t.services.usageCloser.closePeriods(at('2032-06-10T00:01:00Z'))).closed).toBe(0);
    expect(await closes(orderId)).toEqual([]);
    await t.services.usageCloser.closePeriods(at('2032-06-24T00:01:00Z'));
    expect((await closes(orderId)).map((row) => [row.period_start, row.period_end])).toEqual([['2032-05-10T00:00:00Z', '2032-06-24T00:00:00Z']]);
    expect((await usageLines(orderId)).map((line) => line.total)).toEqual([5000]);

    // With calls too, the period is found from them, and both the calls' and the meters' rows move.
    at('2032-07-01T00:00:00Z');
    const both = await buy(id0);
    await send(both, new Date(), [{ id: id(), meter: 'calls' }, { id: id(), meter: 'tokens', value: 1 }]);
    at('2032-07-05T00:00:00Z');
    expect((await t.admin('order/update', { id: both, expires_at: '2032-08-15T00:00:00Z' })).result).toBe(true);
    const callEnds = await t.services.db.selectFrom('api_key_period_usage').innerJoin('api_keys', 'api_keys.id', 'api_key_period_usage.api_key_id').select('period_end').where('api_keys.order_id', '=', both).execute();
    const meterEnds = await t.services.db.selectFrom('usage_meter_days').select('period_end').where('order_id', '=', both).execute();
    expect([...callEnds, ...meterEnds].map((row) => row.period_end)).toEqual(['2032-08-15T00:00:00Z', '2032-08-15T00:00:00Z']);
  });
});

describe('the overage invoice (invoice service)', () => {
  it('takes several lines or, as before, one; refuses no lines and amounts that are not whole minor units', async () => {
    const now = new Date();
    const orderId = await buy(await plan('Invoice lines', {}));
    const issue = (usage: Parameters<TestApp['services']['invoices']['issueUsageInvoice']>[1]) => inTransaction(t.services.db, (trx) => t.services.invoices.issueUsageInvoice(trx, usage, now));
    const several = await issue({ orderId, clientId: client.id, lines: [{ title: 'first', amount: 120 }, { title: 'second', amount: 3 }] });
    const single = await issue({ orderId, clientId: client.id, title: 'only', amount: 75 });
    const items = await t.services.db.selectFrom('invoice_items').select(['invoice_id', 'title', 'task', 'quantity', 'price', 'total']).where('invoice_id', 'in', [several, single]).orderBy('id').execute();
    expect(items).toEqual([
      { invoice_id: several, title: 'first', task: 'usage', quantity: 1, price: 120, total: 120 },
      { invoice_id: several, title: 'second', task: 'usage', quantity: 1, price: 3, total: 3 },
      { invoice_id: single, title: 'only', task: 'usage', quantity: 1, price: 75, total: 75 },
    ]);
    await expect(issue({ orderId, clientId: client.id, lines: [] })).rejects.toMatchObject({ status: 422 });
    await expect(issue({ orderId, clientId: client.id, lines: [{ title: 'negative', amount: -1 }] })).rejects.toMatchObject({ status: 422 });
    await expect(issue({ orderId, clientId: client.id, title: 'fraction', amount: 1.5 })).rejects.toMatchObject({ status: 422 });
    // Nothing of the refused ones was written.
    expect(await usageLines(orderId)).toHaveLength(3);
  });
});
