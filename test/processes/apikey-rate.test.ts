// The per-key rate limit across processes (CONTRACT §12, issue 12): two real Tollgate processes sharing one
// PostgreSQL and one Redis, 10 keep-alive connections each, all checking one key whose plan allows 100 calls per
// second. The counters are local and meet in Redis in the background (src/modules/serviceapikey/check/key-rate.ts), so the
// processes may together accept a little more than the limit: docs/api-keys.md ("How far the per-key rate limit
// can be overshot") says how much (110 per window here while both processes run; 120 when one is frozen for a moment
// mid-window, which the second suite does with SIGSTOP). Refused calls are never counted as uses.
// Runs where TEST_DATABASE_URL and TEST_REDIS_URL are set (CI's PostgreSQL pass).
import { spawn } from 'node:child_process';
import { Agent, request } from 'node:http';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { buyKey, createPlan, documentedMaxPerWindow, rateLimitRun } from '../helpers/apikey.ts';
import { startPeer, type Peer } from '../helpers/peer.ts';

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

/**
 * Resolves once the window of the first `calls` calls of `counter` is over in Redis, and over in each process too: a
 * process learns the window's end from a sync's answer, a moment after Redis sent it.
 */
async function warmUpWindowOver(counter: string, calls: number): Promise<void> {
  const redis = new Redis(REDIS);
  try {
    const deadline = Date.now() + 10_000;
    while (Number(await redis.get(counter)) < calls) {
      if (Date.now() > deadline) throw new Error(`the warm-up calls did not reach Redis's ${counter} within 10 s`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const left = await redis.pttl(counter);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, left) + 250));
    expect(await redis.exists(counter)).toBe(0);
  } finally {
    await redis.quit();
  }
}

interface Measured {
  accepted: number[];
  refused: number;
  run: ReturnType<typeof rateLimitRun>;
  /** Syncs given up on (Redis silent for CONFIRM_WAIT_MS) or failed, over both processes. */
  alone: number;
  usage: number;
}

/**
 * Buys a key limited to LIMIT a second, warms both processes, hammers it from both for RUN_MS (while `during` runs, if
 * given), then stops the processes and reads the usage. Prints the figures under `title`.
 */
async function measure(t: TestApp, peers: Peer[], title: string, during?: () => Promise<void>): Promise<Measured> {
  const plan = await createPlan(t, { rate_limit: { limit: LIMIT, window_seconds: 1 } });
  const client = await t.createClient();
  const { orderId, key } = await buyKey(t, plan, client.id);
  // Warm both processes' caches. These calls count against the limit too, in a window of their own that must be
  // over before the run: else the run meets five windows, not four (CI once saw 149 in its first second: the
  // warm-up window's last 39 calls, then a full one). That window starts when the warm-up calls reach Redis, in the
  // processes' next sync, so it is waited out as Redis tells, not from the calls' time.
  for (const peer of peers) expect((await peer.call('guest/serviceapikey/check', { key })).result).toBe(true);
  await warmUpWindowOver(`${t.services.config.rateLimit.redisPrefix}KEY_RATE:${orderId}`, 2);

  const started = Date.now();
  const [runs] = await Promise.all([Promise.all(peers.map((peer) => hammer(peer.url, key, CONNECTIONS, started + RUN_MS))), during?.()]);
  const accepted = runs.flatMap((one) => one.accepted);
  const refused = runs.reduce((sum, one) => sum + one.refused, 0);
  const run = rateLimitRun(accepted, started, RUN_MS);
  const series = ['given_up', 'failed'].map((result) => `tollgate_rate_counter_syncs_total{result="${result}"}`);
  const alone = (await Promise.all(peers.flatMap((peer) => series.map((name) => peer.metric(name))))).reduce((sum, n) => sum + n, 0);
  const each = runs.map((one) => JSON.stringify(rateLimitRun(one.accepted, started, RUN_MS).perSecond)).join(' and ');
  process.stdout.write(
    `${title}: accepted ${run.total} in ${RUN_MS / 1000} s (per second ${JSON.stringify(run.perSecond)}: ${each}), refused ${refused}, syncs given up on or failed ${alone}\n`,
  );
  // Refused calls are not uses: the usage is the accepted calls plus the warm-up ones.
  for (const peer of peers) await peer.stop();
  const usage = (await t.admin('serviceapikey/usage', { order_id: orderId })).result.total as number;
  return { accepted, refused, run, alone, usage };
}

/** The checks every run must pass: the load was above the limit, no more than `perWindow` a window, usage = accepted. */
function expectWithin(measured: Measured, perWindow: number): void {
  const { run, refused, alone, usage, accepted } = measured;
  // Some calls were refused and every complete window reached the limit.
  expect(refused).toBeGreaterThan(0);
  expect(run.total).toBeGreaterThanOrEqual(run.leastWindows * LIMIT * 0.9);
  // A process that had to decide alone (Redis silent for CONFIRM_WAIT_MS, or unreachable) may take the whole limit.
  expect(run.total).toBeLessThanOrEqual(run.mostWindows * (alone === 0 ? perWindow : 2 * LIMIT));
  expect(usage).toBe(accepted.length + 2);
}

/** For the suite calling it: a test app and two more processes sharing its database and Redis. */
function twoProcesses(): { app: () => TestApp; peers: Peer[] } {
  let t: TestApp | undefined;
  const peers: Peer[] = [];
  beforeAll(async () => {
    t = await createTestApp();
    peers.push(await startPeer(t, true), await startPeer(t, true));
  }, 200_000);
  afterAll(async () => {
    for (const peer of peers) {
      // A process a failed test left frozen must run again to hear SIGTERM.
      if (peer.child.pid !== undefined && peer.child.exitCode === null) process.kill(peer.child.pid, 'SIGCONT');
      await peer.stop();
    }
    await t?.close();
  });
  return { app: () => t!, peers };
}

describe.skipIf(PG === '' || REDIS === '')('per-key rate limit: 2 processes × 10 connections, limit 100 / 1 s', () => {
  const { app, peers } = twoProcesses();

  it('accepts per window no more than the documented overshoot above the limit, and counts only accepted calls', async () => {
    const measured = await measure(app(), peers, `per-key rate limit, 2 processes × ${CONNECTIONS} connections, limit ${LIMIT}/1 s`);
    // 110 a window in most runs (one process's tenth falls inside the limit), 120 in a few.
    expectWithin(measured, documentedMaxPerWindow(LIMIT, 2));
  }, 60_000);
});

describe.skipIf(PG === '' || REDIS === '')('per-key rate limit: one of 2 processes frozen 650 ms at a time (SIGSTOP), limit 100 / 1 s', () => {
  const { app, peers } = twoProcesses();

  it('accepts per window no more than the limit and a tenth of it per process, and counts only accepted calls', async () => {
    const frozen = peers[0]!;
    // Frozen from another process (a busy loop here would stop the hammering too): 150 ms running, then 650 ms
    // stopped, four times, the run's first 3.2 s. The frozen process keeps its connections; its sync answers wait
    // unread in its socket.
    const freeze = () =>
      new Promise<void>((resolve, reject) => {
        const pid = String(frozen.child.pid);
        const script = `for i in 1 2 3 4; do sleep 0.15; kill -STOP ${pid}; sleep 0.65; kill -CONT ${pid}; done`;
        const child = spawn('bash', ['-c', script], { stdio: 'ignore' });
        child.once('error', reject);
        child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`the freezing loop exited with ${code}`))));
      });
    const measured = await measure(app(), peers, 'per-key rate limit, one of 2 processes frozen 650 ms every 800 ms, limit 100/1 s', freeze);
    expectWithin(measured, documentedMaxPerWindow(LIMIT, 2));
  }, 60_000);
});
