// Usage alerts per meter (issue 23 item 7): each alert percentage of a meter's included units sends the
// `usage.threshold_reached` webhook (with `meter`) and the `usage_threshold` mail once per order, period, meter and
// percentage — in one batch or many, under concurrent batches and two app instances on one database — and again in
// the next period; a meter without `included` sends none; the client's own percentages fire too; a listener that
// failed is caught up by the next batch. The clock is faked (Date only) where periods must change.
// Runs on SQLite, and on PostgreSQL + Redis when TEST_* are set.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { buyKey, createPlan } from '../../helpers/apikey.ts';
import { asClient } from '../../helpers/selling-fixtures.ts';

const TOKENS = { code: 'tokens', name: 'Tokens', unit: 'tokens', aggregation: 'sum', included: 1000 };
const SEATS = { code: 'seats', name: 'Seats', unit: 'seats', aggregation: 'latest' };

let t: TestApp;
let client: Awaited<ReturnType<TestApp['createClient']>>;
let eventIds = 0;

beforeAll(async () => {
  t = await createTestApp({ WEBHOOK_ALLOW_PRIVATE: 'true' });
  client = await t.createClient();
  const hook = await t.admin('webhook/create', { url: 'http://127.0.0.1:9/usage', events: ['usage.threshold_reached'] });
  expect(hook.body.error).toBeNull();
});
afterAll(async () => {
  vi.useRealTimers();
  await t.close();
});
afterEach(() => {
  vi.useRealTimers();
});

/** Freezes the clock (Date only: timers and I/O run as usual). */
function at(iso: string): void {
  vi.useFakeTimers({ toFake: ['Date'], now: Date.parse(iso) });
  vi.setSystemTime(Date.parse(iso));
}

async function meteredOrder(app: TestApp, config: Record<string, unknown> = {}, buyer = client) {
  const plan = await createPlan(app, { usage_period: 'calendar_month', meters: [TOKENS, SEATS], ...config });
  return buyKey(app, plan, buyer.id);
}

/** Sends `values` as events of `meter` for the order, one batch, each with a fresh id; answers the accepted count. */
async function send(app: TestApp, orderId: number, values: number[], meter = 'tokens', timestamp?: string, adminToken = app.adminToken): Promise<number> {
  const events = values.map((value) => ({ id: `e${++eventIds}`, order_id: orderId, meter, ...(meter === 'calls' ? {} : { value }), ...(timestamp !== undefined && { timestamp }) }));
  const reply = await app.call('/api/admin/usage/ingest', { events }, { basic: ['admin', adminToken] });
  expect(reply.body.error).toBeNull();
  expect(reply.result.rejected).toEqual([]);
  return reply.result.accepted as number;
}

/** The webhook data of the order's alerts, in the order they were written. */
async function alerts(orderId: number) {
  const rows = await t.services.db.selectFrom('webhook_deliveries').select('body').where('event_type', '=', 'usage.threshold_reached').orderBy('id').execute();
  return rows.map((row) => (JSON.parse(row.body) as { data: Record<string, unknown> }).data).filter((data) => data.order_id === orderId);
}
const sent = async (orderId: number) => (await alerts(orderId)).map((data) => `${String(data.meter)} ${String(data.threshold)}`);

async function mails(clientId = client.id) {
  return t.services.db.selectFrom('emails').select(['subject', 'text']).where('client_id', '=', clientId).where('template', '=', 'usage_threshold').orderBy('id').execute();
}

describe('alerts of a sum meter', () => {
  it('sends 80% and 100% once each as events cross them over many batches, with meter, name and unit, webhook and mail', async () => {
    at('2029-03-10T10:00:00Z');
    const buyer = await t.createClient();
    const { orderId } = await meteredOrder(t, {}, buyer);
    await send(t, orderId, [300, 400]);
    expect(await alerts(orderId)).toEqual([]);
    await send(t, orderId, [99]);
    expect(await alerts(orderId)).toEqual([]);
    await send(t, orderId, [1]);
    expect(await alerts(orderId)).toEqual([
      { order_id: orderId, client_id: buyer.id, meter: 'tokens', meter_name: 'Tokens', unit: 'tokens', threshold: 80, used: 800, included: 1000, period_start: '2029-03-01T00:00:00Z' },
    ]);
    const first = await mails(buyer.id);
    expect(first.map((mail) => mail.subject)).toEqual([expect.stringMatching(/: 80% of the included Tokens$/)]);
    expect(first[0]!.text).toContain('has used 800 of the 1,000 tokens included in this period for Tokens (80%)');
    await send(t, orderId, [150]);
    await send(t, orderId, [49]);
    expect(await sent(orderId)).toEqual(['tokens 80']);
    await send(t, orderId, [1, 5]);
    expect(await sent(orderId)).toEqual(['tokens 80', 'tokens 100']);
    expect((await alerts(orderId))[1]).toMatchObject({ threshold: 100, used: 1005 });
    // Past 100%: not again in this period, however much more comes.
    await send(t, orderId, [5000]);
    await send(t, orderId, [1]);
    expect(await sent(orderId)).toEqual(['tokens 80', 'tokens 100']);
    expect(await mails(buyer.id)).toHaveLength(2);
    const rows = await t.services.db.selectFrom('usage_thresholds').select(['meter', 'threshold', 'period_start']).where('order_id', '=', orderId).orderBy('threshold').execute();
    expect(rows).toEqual([
      { meter: 'tokens', threshold: 80, period_start: '2029-03-01T00:00:00Z' },
      { meter: 'tokens', threshold: 100, period_start: '2029-03-01T00:00:00Z' },
    ]);
  });

  it('one batch crossing both sends both once; the next period sends them again, and a backfill into the last one sends nothing new', async () => {
    at('2029-04-30T22:00:00Z');
    const { orderId } = await meteredOrder(t);
    await send(t, orderId, [600, 500]);
    expect(await sent(orderId)).toEqual(['tokens 80', 'tokens 100']);
    at('2029-05-01T02:00:00Z');
    await send(t, orderId, [700]);
    expect(await sent(orderId)).toEqual(['tokens 80', 'tokens 100']);
    // A late event for April (backfill) lands in April, which has announced everything already.
    await send(t, orderId, [900], 'tokens', '2029-04-30T23:00:00Z');
    expect(await sent(orderId)).toEqual(['tokens 80', 'tokens 100']);
    await send(t, orderId, [100]);
    const data = await alerts(orderId);
    expect(data.map((item) => [item.threshold, item.period_start])).toEqual([
      [80, '2029-04-01T00:00:00Z'],
      [100, '2029-04-01T00:00:00Z'],
      [80, '2029-05-01T00:00:00Z'],
    ]);
  });

  it('a meter without included sends none; the plan meter alerts list decides the percentages ([] sends none)', async () => {
    const { orderId } = await meteredOrder(t, { meters: [{ ...TOKENS, included: null }, { ...SEATS, included: 10, alerts: [] }, { code: 'bytes', name: 'Bytes', unit: 'bytes', aggregation: 'max', included: 100, alerts: [25] }] });
    await send(t, orderId, [1_000_000]);
    await send(t, orderId, [50], 'seats');
    await send(t, orderId, [24], 'bytes');
    expect(await sent(orderId)).toEqual([]);
    await send(t, orderId, [25, 3], 'bytes');
    expect(await sent(orderId)).toEqual(['bytes 25']);
    expect(await t.services.db.selectFrom('usage_thresholds').select('meter').where('order_id', '=', orderId).execute()).toEqual([{ meter: 'bytes' }]);
  });
});

describe('exactly once under concurrency', () => {
  it('ten concurrent batches each crossing 80% and 100% send each once', async () => {
    const { orderId } = await meteredOrder(t);
    await send(t, orderId, [790]);
    const replies = await Promise.all(Array.from({ length: 10 }, () => send(t, orderId, [30, 200])));
    expect(replies).toEqual(Array.from({ length: 10 }, () => 2));
    expect(await sent(orderId)).toEqual(['tokens 80', 'tokens 100']);
  });

  it('two app instances on one database, batches crossing the same percentages at once, send each once', async () => {
    // SQLite: a file both instances open (the test app's own database is in memory); PostgreSQL: the test's database.
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-alerts-'));
    const shared = process.env.TEST_DATABASE_URL ? t.services.config.databaseUrl : `sqlite:${join(dir, 'db.sqlite')}`;
    const first = shared === t.services.config.databaseUrl ? t : await createTestApp({ DATABASE_URL: shared, WEBHOOK_ALLOW_PRIVATE: 'true' });
    // The same instance secret and administrator token, as two processes of one installation have.
    const second = await createTestApp({ DATABASE_URL: shared, WEBHOOK_ALLOW_PRIVATE: 'true', TOLLGATE_SECRET: first.services.config.secret ?? '', TOLLGATE_ADMIN_API_TOKEN: first.adminToken });
    try {
      if (first !== t) expect((await first.admin('webhook/create', { url: 'http://127.0.0.1:9/usage', events: ['usage.threshold_reached'] })).body.error).toBeNull();
      const buyer = await first.createClient();
      const { orderId } = await meteredOrder(first, {}, buyer);
      await asClient(first, buyer.token, 'serviceapikey/alerts_set', { order_id: orderId, meter: 'tokens', percentages: [90] });
      await send(first, orderId, [700]);
      await Promise.all([0, 1, 2, 3, 4, 5].map((n) => send(n % 2 === 0 ? first : second, orderId, [100, 150], 'tokens', undefined, first.adminToken)));
      const rows = await first.services.db.selectFrom('usage_thresholds').select(['meter', 'threshold']).where('order_id', '=', orderId).orderBy('threshold').execute();
      expect(rows).toEqual([
        { meter: 'tokens', threshold: 80 },
        { meter: 'tokens', threshold: 90 },
        { meter: 'tokens', threshold: 100 },
      ]);
      const deliveries = await first.services.db.selectFrom('webhook_deliveries').select('body').where('event_type', '=', 'usage.threshold_reached').execute();
      const mine = deliveries.map((row) => (JSON.parse(row.body) as { data: { order_id: number; threshold: number } }).data).filter((data) => data.order_id === orderId);
      expect(mine.map((data) => data.threshold).toSorted((a, b) => a - b)).toEqual([80, 90, 100]);
      const mailed = await first.services.db.selectFrom('emails').select('subject').where('client_id', '=', buyer.id).where('template', '=', 'usage_threshold').execute();
      expect(mailed).toHaveLength(3);
    } finally {
      await second.close();
      if (first !== t) await first.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("the client's percentages and the calls meter", () => {
  it("a client's percentages fire beside the plan's, per meter; calls too, whether counted by checks or ingested", async () => {
    at('2029-06-10T10:00:00Z');
    const buyer = await t.createClient();
    const { orderId, key } = await meteredOrder(t, { included: 10 }, buyer);
    expect((await asClient(t, buyer.token, 'serviceapikey/alerts_set', { order_id: orderId, meter: 'tokens', percentages: [50, 90] })).body.error).toBeNull();
    expect((await asClient(t, buyer.token, 'serviceapikey/alerts_set', { order_id: orderId, meter: 'calls', percentages: [30] })).body.error).toBeNull();
    await send(t, orderId, [500]);
    expect(await sent(orderId)).toEqual(['tokens 50']);
    await send(t, orderId, [400]);
    expect(await sent(orderId)).toEqual(['tokens 50', 'tokens 80', 'tokens 90']);
    // calls by checks: counted at the flush, 30% of 10 at the third use.
    for (let n = 0; n < 3; n++) expect((await t.call('/api/guest/serviceapikey/check', { key })).result).toBe(true);
    await t.services.apikeys.flushUsage();
    expect((await alerts(orderId)).at(-1)).toMatchObject({ meter: 'calls', meter_name: 'Calls', unit: 'calls', threshold: 30, used: 3, included: 10 });
    // calls ingested as events: 80% and 100% of 10.
    await send(t, orderId, [0, 0, 0, 0, 0], 'calls');
    expect(await sent(orderId)).toEqual(['tokens 50', 'tokens 80', 'tokens 90', 'calls 30', 'calls 80']);
    await send(t, orderId, [0, 0], 'calls');
    expect(await sent(orderId)).toEqual(['tokens 50', 'tokens 80', 'tokens 90', 'calls 30', 'calls 80', 'calls 100']);
    const subjects = (await mails(buyer.id)).map((mail) => mail.subject.replace(/^.*: /, ''));
    expect(subjects).toEqual(['50% of the included Tokens', '80% of the included Tokens', '90% of the included Tokens', '30% of the included Calls', '80% of the included Calls', '100% of the included Calls']);
  });

  it('a percentage added after the usage passed it is sent at the next measurement, once', async () => {
    const buyer = await t.createClient();
    const { orderId } = await meteredOrder(t, {}, buyer);
    await send(t, orderId, [850]);
    expect(await sent(orderId)).toEqual(['tokens 80']);
    await asClient(t, buyer.token, 'serviceapikey/alerts_set', { order_id: orderId, meter: 'tokens', percentages: [10, 95] });
    await send(t, orderId, [1]);
    expect(await sent(orderId)).toEqual(['tokens 80', 'tokens 10']);
    await send(t, orderId, [1]);
    expect(await sent(orderId)).toEqual(['tokens 80', 'tokens 10']);
  });
});

describe('a listener that fails', () => {
  it('loses no alert: nothing is recorded, and the next batch (of any order) catches up', async () => {
    const { orderId } = await meteredOrder(t);
    const other = await meteredOrder(t);
    let failures = 1;
    // A listener of the event failing inside the alert's transaction rolls the alert back (the webhook and the mail
    // with it), as a database failure would.
    t.services.events.on('usage.threshold_reached', () => {
      if (failures > 0) {
        failures--;
        throw new Error('the outbox is away');
      }
    });
    expect(await send(t, orderId, [900])).toBe(1);
    expect(await sent(orderId)).toEqual([]);
    expect(await t.services.db.selectFrom('usage_thresholds').selectAll().where('order_id', '=', orderId).execute()).toEqual([]);
    expect(t.services.apikeys.internals.meterAlerts.pendingCount()).toBe(1);
    await send(t, other.orderId, [1]);
    expect(await sent(orderId)).toEqual(['tokens 80']);
    expect(t.services.apikeys.internals.meterAlerts.pendingCount()).toBe(0);
  });

  it('loses no alert when it cannot even read the plans: every order of the batch is looked at again with the next', async () => {
    const first = await meteredOrder(t);
    const second = await meteredOrder(t);
    // The client percentages' table away for a moment, as a database that does not answer.
    await sql`ALTER TABLE usage_alert_percentages RENAME TO usage_alert_percentages_away`.execute(t.services.db);
    try {
      const events = [first, second].map(({ orderId }) => ({ id: `away-${orderId}`, order_id: orderId, meter: 'tokens', value: 1000 }));
      const reply = await t.admin('usage/ingest', { events });
      // The events are stored all the same; the alerts wait.
      expect(reply.result).toEqual({ accepted: 2, duplicates: 0, rejected: [] });
      expect(t.services.apikeys.internals.meterAlerts.pendingCount()).toBe(2);
    } finally {
      await sql`ALTER TABLE usage_alert_percentages_away RENAME TO usage_alert_percentages`.execute(t.services.db);
    }
    expect(await sent(first.orderId)).toEqual([]);
    const third = await meteredOrder(t);
    await send(t, third.orderId, [1]);
    expect(await sent(first.orderId)).toEqual(['tokens 80', 'tokens 100']);
    expect(await sent(second.orderId)).toEqual(['tokens 80', 'tokens 100']);
    expect(t.services.apikeys.internals.meterAlerts.pendingCount()).toBe(0);
  });
});
