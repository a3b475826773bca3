// Usage alerts across processes (issue 23 item 7): this test's app and a real second Tollgate process (tsx, a real
// socket) share one PostgreSQL database and Redis; batches of events crossing the same percentages of a meter arrive
// through both at once, and each alert (the usage_thresholds row, the webhook delivery, the mail) exists once. Runs
// only where TEST_DATABASE_URL is set, as in CI's PostgreSQL pass (SQLite serves one process).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { buyKey, createPlan } from '../helpers/apikey.ts';
import { startPeer, type Peer } from '../helpers/peer.ts';

const PG = process.env.TEST_DATABASE_URL ?? '';

describe.runIf(PG !== '')('alerts of a meter through two processes', () => {
  let t: TestApp;
  let peer: Peer;

  beforeAll(async () => {
    t = await createTestApp({ WEBHOOK_ALLOW_PRIVATE: 'true' });
    peer = await startPeer(t, Boolean(process.env.TEST_REDIS_URL));
  }, 120_000);
  afterAll(async () => {
    await peer?.stop();
    await t?.close();
  });

  it('batches crossing 50%, 80% and 100% through both processes at once send each alert once', async () => {
    expect((await t.admin('webhook/create', { url: 'http://127.0.0.1:9/usage', events: ['usage.threshold_reached'] })).body.error).toBeNull();
    const buyer = await t.createClient();
    const plan = await createPlan(t, { meters: [{ code: 'tokens', name: 'Tokens', unit: 'tokens', aggregation: 'sum', included: 10_000 }] });
    const { orderId } = await buyKey(t, plan, buyer.id);
    expect((await t.admin('serviceapikey/alerts_set', { order_id: orderId, meter: 'tokens', percentages: [50] })).body.error).toBeNull();

    for (let round = 0; round < 3; round++) {
      // Each round: eight batches of 50 events of 10 tokens (4,000 tokens), half through each process, at once.
      const batches = Array.from({ length: 8 }, (_batch, b) => Array.from({ length: 50 }, (_event, n) => ({ id: `r${round}-b${b}-${n}`, order_id: orderId, meter: 'tokens', value: 10 })));
      const replies = await Promise.all(
        batches.map((events, b) => (b % 2 === 0 ? t.admin('usage/ingest', { events }).then((reply) => ({ status: reply.status, result: reply.result })) : peer.call('admin/usage/ingest', { events }, t.adminToken))),
      );
      expect(replies.map((reply) => reply.status)).toEqual(Array.from({ length: 8 }, () => 200));
      expect(replies.reduce((sum, reply) => sum + (reply.result as { accepted: number }).accepted, 0)).toBe(400);
    }

    const rows = await t.services.db.selectFrom('usage_thresholds').select(['meter', 'threshold']).where('order_id', '=', orderId).orderBy('threshold').execute();
    expect(rows).toEqual([
      { meter: 'tokens', threshold: 50 },
      { meter: 'tokens', threshold: 80 },
      { meter: 'tokens', threshold: 100 },
    ]);
    const deliveries = await t.services.db.selectFrom('webhook_deliveries').select('body').where('event_type', '=', 'usage.threshold_reached').execute();
    const data = deliveries.map((row) => (JSON.parse(row.body) as { data: { order_id: number; meter: string; threshold: number } }).data).filter((item) => item.order_id === orderId);
    expect(data.map((item) => `${item.meter} ${item.threshold}`).toSorted()).toEqual(['tokens 100', 'tokens 50', 'tokens 80']);
    const mails = await t.services.db.selectFrom('emails').select('subject').where('client_id', '=', buyer.id).where('template', '=', 'usage_threshold').execute();
    expect(mails).toHaveLength(3);
  }, 60_000);
});
