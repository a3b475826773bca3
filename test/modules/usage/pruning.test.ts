// Pruning (issue 23): usage events are kept 35 days from their arrival (the idempotency window) and then deleted in
// bounded batches; the distinct values of a unique_count meter go once their period is closed. Run by the scheduled
// jobs, where a failure is counted and logged without ending the run. Runs on SQLite, and on PostgreSQL when TEST_* are set.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCronService } from '../../../src/modules/cron/service.ts';
import { IDEMPOTENCY_WINDOW_MS } from '../../../src/modules/usage/pruning.ts';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { meteredOrder } from './helpers.ts';

let t: TestApp;
let clientId: number;

beforeAll(async () => {
  t = await createTestApp();
  clientId = (await t.createClient()).id;
});
afterAll(async () => {
  await t.close();
});

const T0 = new Date('2033-01-10T12:00:00Z');
const T1 = new Date('2033-02-05T12:00:00Z');
const eventIds = async (orderId: number) => (await t.services.db.selectFrom('usage_events').select('event_id').where('order_id', '=', orderId).orderBy('event_id').execute()).map((row) => row.event_id);
const uniques = async (orderId: number) =>
  (await t.services.db.selectFrom('usage_meter_uniques').select(['period_start', 'value']).where('order_id', '=', orderId).orderBy('period_start').orderBy('value').execute()).map((row) => `${row.period_start.slice(0, 7)} ${row.value}`);

async function sendAt(orderId: number, now: Date, events: Array<Record<string, unknown>>): Promise<void> {
  const answer = await t.services.usage.ingest(events.map((event) => ({ order_id: orderId, timestamp: now.toISOString(), ...event })), now);
  expect(answer.rejected).toEqual([]);
  expect(answer.accepted).toBe(events.length);
}

describe('pruning usage events and distinct values', () => {
  it('deletes events received more than 35 days ago, in bounded batches, and the distinct values of closed periods', async () => {
    const { orderId } = await meteredOrder(t, clientId);
    // January: 7 requests and 3 users; February: 2 users.
    await sendAt(orderId, T0, [
      ...Array.from({ length: 7 }, (_, i) => ({ id: `jan-r${i}`, meter: 'requests' })),
      ...['ann', 'bob', 'cy'].map((user) => ({ id: `jan-u-${user}`, meter: 'users', properties: { user } })),
    ]);
    await sendAt(orderId, T1, ['ann', 'dee'].map((user) => ({ id: `feb-u-${user}`, meter: 'users', properties: { user } })));
    expect(await uniques(orderId)).toEqual(['2033-01 ann', '2033-01 bob', '2033-01 cy', '2033-02 ann', '2033-02 dee']);

    // Within the window nothing goes, and an open period keeps its distinct values.
    const inside = new Date(T0.getTime() + IDEMPOTENCY_WINDOW_MS - 1000);
    expect(await t.services.usagePruning.prune(inside)).toEqual({ events: 0, uniques: 0 });
    expect(await eventIds(orderId)).toHaveLength(12);
    expect(await uniques(orderId)).toHaveLength(5);

    // January closes (on February 5th): its distinct values are no longer needed, February's are.
    await t.services.usageCloser.closePeriods(T1);
    const past = new Date(T0.getTime() + IDEMPOTENCY_WINDOW_MS + 1000);
    // One batch of 4 when the run's time is spent at once (each table gets its first batch).
    expect(await t.services.usagePruning.prune(past, { batch: 4, budgetMs: 0 })).toEqual({ events: 4, uniques: 3 });
    expect(await eventIds(orderId)).toHaveLength(8);
    // Then batches of 4 until none is full: the 6 other January events.
    expect(await t.services.usagePruning.prune(past, { batch: 4 })).toEqual({ events: 6, uniques: 0 });
    expect(await eventIds(orderId)).toEqual(['feb-u-ann', 'feb-u-dee']);
    expect(await uniques(orderId)).toEqual(['2033-02 ann', '2033-02 dee']);
    // What the meters measured stays: the day rows are not events.
    const days = await t.services.db.selectFrom('usage_meter_days').select(['meter', 'quantity']).where('order_id', '=', orderId).where('period_start', '=', '2033-01-01T00:00:00Z').orderBy('meter').execute();
    expect(days).toEqual([
      { meter: 'requests', quantity: 7 },
      { meter: 'users', quantity: 3 },
    ]);
  });

  it('is one of the scheduled jobs', async () => {
    const { orderId } = await meteredOrder(t, clientId);
    await sendAt(orderId, new Date('2033-03-10T12:00:00Z'), [{ id: 'mar-u', meter: 'users', properties: { user: 'eve' } }, { id: 'mar-r', meter: 'requests' }]);
    const report = await t.services.cron.run(new Date('2033-04-20T00:00:00Z'));
    expect(report.failed).toBe(0);
    expect(await eventIds(orderId)).toEqual([]);
    // March closed in the same run, before the pruning: its distinct values went too.
    expect(await uniques(orderId)).toEqual([]);
  });

  it('a pruning that fails is logged and counted; the other jobs run and the run is recorded', async () => {
    const logged: string[] = [];
    const cron = createCronService({
      db: t.services.db,
      orders: t.services.orders,
      dueOrders: { freeRenewalsDue: async () => [], canceledAtPeriodEndDue: async () => [], expiredActive: async () => [], suspendedBefore: async () => [] },
      invoices: t.services.invoices,
      renewalsDue: { ordersAwaitingRenewalInvoice: async () => [] },
      carts: { purgeAbandoned: async () => 2 },
      invoiceDaysBeforeExpiry: 7,
      cancelSuspendedAfterDays: 30,
      usagePruning: {
        prune: () => Promise.reject(new Error('disk full')),
      },
      log: (message) => logged.push(message),
    });
    const report = await cron.run(new Date('2033-05-01T00:00:00Z'));
    expect(report).toMatchObject({ failed: 1, carts_purged: 2 });
    expect(logged).toEqual(['pruning usage events failed']);
    expect((await cron.info()).last_cron_exec).not.toBeNull();
  });
});
