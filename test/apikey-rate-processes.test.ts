// The per-key rate limit across processes (CONTRACT §12, issue 12): two real Tollgate processes sharing one
// PostgreSQL and one Redis, 10 keep-alive connections each, all checking one key whose plan allows 100 calls per
// second. The counters are local and meet in Redis in the background (src/modules/serviceapikey/key-rate.ts), so the
// processes may together accept a little more than the limit: README "How far the per-key rate limit can be
// overshot" says how much (documentedMaxPerWindow: 110 per window here, however slow the round trip to Redis); this
// test measures it and holds it to that. Refused calls are never counted as uses.
// Runs where TEST_DATABASE_URL and TEST_REDIS_URL are set (CI's PostgreSQL pass).
import { Agent, request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { buyKey, createPlan, documentedMaxPerWindow, rateLimitRun } from './helpers/apikey.ts';
import { startPeer, type Peer } from './helpers/peer.ts';

const PG = process.env.TEST_DATABASE_URL ?? '';
const REDIS = process.env.TEST_REDIS_URL ?? '';
const LIMIT = 100;
const RUN_MS = 4000;
const CONNECTIONS = 10;

/** Sends checks for `key` on `connections` keep-alive connections until `until`; returns when each answer was true. */
async function hammer(url: string, key: string, connections: number, until: number): Promise<{ accepted: number[]; refused: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const { hostname, port } = new URL(url);
  const body = JSON.stringify({ key });
  const accepted: number[] = [];
  let refused = 0;
  const one = () =>
    new Promise<boolean>((resolve, reject) => {
      const req = request(
        { host: hostname, port, path: '/api/guest/serviceapikey/check', method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
        (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => (text += chunk.toString()));
          res.on('end', () => resolve((JSON.parse(text) as { result: unknown }).result === true));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (Date.now() < until) {
        if (await one()) accepted.push(Date.now());
        else refused++;
      }
    }),
  );
  agent.destroy();
  return { accepted, refused };
}

describe.skipIf(PG === '' || REDIS === '')('per-key rate limit: 2 processes × 10 connections, limit 100 / 1 s', () => {
  let t: TestApp;
  const peers: Peer[] = [];

  beforeAll(async () => {
    t = await createTestApp();
    peers.push(await startPeer(t, true), await startPeer(t, true));
  }, 200_000);
  afterAll(async () => {
    for (const peer of peers) await peer.stop();
    await t?.close();
  });

  it('accepts per window no more than the documented overshoot above the limit, and counts only accepted calls', async () => {
    const plan = await createPlan(t, { rate_limit: { limit: LIMIT, window_seconds: 1 } });
    const client = await t.createClient();
    const { orderId, key } = await buyKey(t, plan, client.id);
    // Warm both processes' caches (these calls count against the limit too, in a window of their own, long gone).
    for (const peer of peers) expect((await peer.call('guest/serviceapikey/check', { key })).result).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 1100));

    const started = Date.now();
    const runs = await Promise.all(peers.map((peer) => hammer(peer.url, key, CONNECTIONS, started + RUN_MS)));
    const accepted = runs.flatMap((run) => run.accepted);
    const refused = runs.reduce((sum, run) => sum + run.refused, 0);
    const run = rateLimitRun(accepted, started, RUN_MS);
    process.stdout.write(`per-key rate limit, 2 processes × ${CONNECTIONS} connections, limit ${LIMIT}/1 s: accepted ${run.total} in ${RUN_MS / 1000} s (per second ${JSON.stringify(run.perSecond)}), refused ${refused}\n`);

    // The load was above the limit (some calls were refused, and every complete window reached the limit), and the
    // windows together accepted no more than the documented overshoot allows.
    expect(refused).toBeGreaterThan(0);
    expect(run.total).toBeGreaterThanOrEqual(run.leastWindows * LIMIT * 0.9);
    expect(run.total).toBeLessThanOrEqual(run.mostWindows * documentedMaxPerWindow(LIMIT, 2));

    // Refused calls are not uses: the usage is the accepted calls plus the warm-up ones.
    for (const peer of peers) await peer.stop();
    peers.length = 0;
    const usage = await t.admin('serviceapikey/usage', { order_id: orderId });
    expect(usage.result.total).toBe(accepted.length + 2);
  }, 60_000);
});
