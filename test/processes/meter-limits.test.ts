// A plan meter's hard limit across processes (issue 23 item 3): events ingested through one Tollgate process push an
// order over a meter's hard limit; the other process, which holds the order's quantities in memory, refuses its key
// within a second (told by an `m<order id>` message on the key invalidation channel), and the other way round. A lost
// message is caught by the periodic re-read. Runs only where TEST_DATABASE_URL (and TEST_REDIS_URL) are set, as in
// CI's PostgreSQL pass.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { startPeer, type Peer } from '../helpers/peer.ts';
import { METER_REFRESH_MS } from '../../src/modules/serviceapikey/check/meter-state.ts';
import { calendarMonth } from '../../src/modules/serviceapikey/usage/usage-period.ts';

const PG = process.env.TEST_DATABASE_URL ?? '';
const REDIS = process.env.TEST_REDIS_URL ?? '';

/** Polls `probe` until it returns `expected`; returns the milliseconds that took (fails after `limitMs`). */
async function within(probe: () => Promise<unknown>, expected: unknown, limitMs = 3000): Promise<number> {
  const started = Date.now();
  for (;;) {
    if ((await probe()) === expected) return Date.now() - started;
    if (Date.now() - started > limitMs) throw new Error(`still not ${String(expected)} after ${limitMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function suite(redis: boolean) {
  let t: TestApp;
  let peer: Peer;
  let product: number;
  let ids = 0;

  beforeAll(async () => {
    t = await createTestApp(redis ? {} : { REDIS_URL: '' });
    peer = await startPeer(t, redis);
    product = (await t.admin('product/prepare', { title: 'AI API', type: 'apikey' })).result as number;
    const meters = [
      { code: 'tokens', name: 'Tokens', unit: 'token', aggregation: 'sum' },
      { code: 'requests', name: 'Requests', unit: 'request', aggregation: 'count', hard_limit: 20 },
      { code: 'users', name: 'Users', unit: 'user', aggregation: 'unique_count', property: 'user', hard_limit: 50 },
    ];
    const updated = await t.admin('product/update', { id: product, status: 'enabled', config: { usage_period: 'calendar_month', meters } });
    expect(updated.body.error).toBeNull();
  }, 120_000);
  afterAll(async () => {
    await peer?.stop();
    await t?.close();
  });

  async function order(): Promise<{ orderId: number; key: string }> {
    const client = await t.createClient();
    const orderId = (await t.admin('order/create', { client_id: client.id, product_id: product, activate: true })).result as number;
    return { orderId, key: (await t.admin('serviceapikey/get', { order_id: orderId })).result.api_key as string };
  }

  /** `count` requests events for the order, ingested through process A (this test's app). */
  async function ingestHere(orderId: number, count: number): Promise<void> {
    const events = Array.from({ length: count }, () => ({ id: `p-${++ids}`, order_id: orderId, meter: 'requests' }));
    const reply = await t.admin('usage/ingest', { events });
    expect(reply.result).toMatchObject({ accepted: count, rejected: [] });
  }

  const there = async (key: string) => (await peer.call('guest/serviceapikey/check', { key })).result;
  const infoThere = async (key: string) => (await peer.call('guest/serviceapikey/get_info', { key })).result as { reason: string; usage: { limited_by: string | null; meters: Array<{ code: string; used: number }> } };
  const here = async (key: string) => (await t.call('/api/guest/serviceapikey/check', { key })).result;

  it('events ingested through A push the order over a hard limit: B refuses the key within a second and names the meter', async () => {
    const { orderId, key } = await order();
    // B holds the key and its quantities.
    expect(await there(key)).toBe(true);
    await ingestHere(orderId, 19);
    expect(await within(async () => (await infoThere(key)).usage.meters[1]?.used, 19)).toBeLessThan(1000);
    expect(await there(key)).toBe(true);
    await ingestHere(orderId, 1);
    expect(await here(key)).toBe(false);
    expect(await within(() => there(key), false)).toBeLessThan(1000);
    expect(await infoThere(key)).toMatchObject({ reason: 'LIMIT_EXCEEDED', usage: { limited_by: 'requests' } });
  });

  it('a message lost on the way: B learns it from its periodic re-read', async () => {
    const { orderId, key } = await order();
    expect(await there(key)).toBe(true);
    // Written to the rollups behind the channel's back, as if the message about it were lost.
    const period = calendarMonth(Date.now());
    await t.services.db
      .insertInto('usage_meter_days')
      .values({ order_id: orderId, meter: 'requests', period_start: period.start, period_end: period.end, day: new Date().toISOString().slice(0, 10), quantity: 20, latest_at: null })
      .execute();
    // Within the re-read interval, then the read itself (started by a check) and one more check.
    expect(await within(() => there(key), false, METER_REFRESH_MS + 1500)).toBeLessThan(METER_REFRESH_MS + 1500);
  });

  it('the next ingestion through B stops A too', async () => {
    const { orderId, key } = await order();
    expect(await here(key)).toBe(true);
    const events = Array.from({ length: 20 }, () => ({ id: `q-${++ids}`, order_id: orderId, meter: 'requests' }));
    const reply = await peer.call('admin/usage/ingest', { events }, t.adminToken);
    expect(reply.result).toMatchObject({ accepted: 20 });
    expect(await there(key)).toBe(false);
    expect(await within(() => here(key), false)).toBeLessThan(1000);
  });
}

describe.runIf(PG !== '')('meter hard limits across two processes on PostgreSQL (LISTEN/NOTIFY)', () => suite(false));
describe.runIf(PG !== '' && REDIS !== '')('meter hard limits across two processes on PostgreSQL and Redis (pub/sub)', () => suite(true));
