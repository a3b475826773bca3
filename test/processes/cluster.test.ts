// WORKERS=2 (CONTRACT §13), as `npm start` runs it: a real primary and two workers on one real socket, on SQLite
// (and on PostgreSQL when TEST_DATABASE_URL is set). A key change reaches every worker within a second, a rate limit
// is shared and exact, and a worker killed under load is replaced while the other keeps serving, with no usage lost
// beyond that worker's last second of counts.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { documentedMaxPerWindow, rateLimitRun } from '../helpers/apikey.ts';
import { clusterCall, startCluster, type Cluster } from '../helpers/cluster.ts';

const ADMIN_TOKEN = randomBytes(16).toString('hex');
const PG = process.env.TEST_DATABASE_URL ?? '';

/** One request on a connection of its own (the workers' round-robin spreads them), as staff when `asAdmin`. */
const call = (port: number, path: string, params: Record<string, unknown>, asAdmin = false) => clusterCall(port, path, params, asAdmin ? ADMIN_TOKEN : undefined);

async function admin(port: number, path: string, params: Record<string, unknown>): Promise<unknown> {
  const answer = await call(port, `admin/${path}`, params, true);
  if (answer.status !== 200) throw new Error(`${path}: ${answer.status}`);
  return answer.result;
}

describe('WORKERS=2', () => {
  let cluster: Cluster;

  beforeAll(async () => {
    cluster = await startCluster('cluster', ADMIN_TOKEN, { RATE_LIMIT_API_GUEST: '5/60' });
  }, 120_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  let orderId = 0;
  let key = '';

  it('shares one exact rate limit between the workers', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await call(cluster.port, 'guest/system/version', {})).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429]);
  });

  it('a key disabled through one worker fails on every worker, and passes on every worker once enabled again', async () => {
    const product = await admin(cluster.port, 'product/prepare', { title: 'API plan', type: 'apikey' });
    await admin(cluster.port, 'product/update', { id: product, status: 'enabled', config: {} });
    const client = await admin(cluster.port, 'client/create', { email: 'c@example.com', first_name: 'C' });
    orderId = (await admin(cluster.port, 'order/create', { client_id: client, product_id: product, activate: true })) as number;
    key = ((await admin(cluster.port, 'serviceapikey/get', { order_id: orderId })) as { api_key: string }).api_key;
    // Warm both workers' caches: with connections of their own, consecutive calls alternate between the workers.
    for (let i = 0; i < 6; i++) expect((await call(cluster.port, 'guest/serviceapikey/check', { key })).result).toBe(true);
    // The key record stays in each worker's cache until invalidated (no expiry), so a worker that missed the change
    // would answer the old state for ever: waiting for the new state on every worker, with a deadline far beyond the
    // second the change takes, proves it reached them (rather than racing a fixed sleep on a busy machine).
    const everyWorkerAnswers = (expected: boolean) =>
      vi.waitFor(
        async () => {
          const answers = await Promise.all(Array.from({ length: 8 }, () => call(cluster.port, 'guest/serviceapikey/check', { key })));
          expect(answers.map((a) => a.result)).toEqual(Array.from({ length: 8 }, () => expected));
        },
        { timeout: 15_000, interval: 100 },
      );
    await admin(cluster.port, 'serviceapikey/update', { order_id: orderId, valid: false });
    await everyWorkerAnswers(false);
    await admin(cluster.port, 'serviceapikey/update', { order_id: orderId, valid: true });
    await everyWorkerAnswers(true);
  }, 60_000);

  it("events ingested through one worker push an order over a meter's hard limit: every worker refuses within a second", async () => {
    const meters = [{ code: 'requests', name: 'Requests', unit: 'request', aggregation: 'count', hard_limit: 3 }];
    const product = await admin(cluster.port, 'product/prepare', { title: 'Metered plan', type: 'apikey' });
    await admin(cluster.port, 'product/update', { id: product, status: 'enabled', config: { usage_period: 'calendar_month', meters } });
    const client = await admin(cluster.port, 'client/create', { email: 'meters@example.com', first_name: 'M' });
    const order = (await admin(cluster.port, 'order/create', { client_id: client, product_id: product, activate: true })) as number;
    const metered = ((await admin(cluster.port, 'serviceapikey/get', { order_id: order })) as { api_key: string }).api_key;
    // Both workers hold the order's quantities (consecutive connections alternate between the workers).
    for (let i = 0; i < 6; i++) expect((await call(cluster.port, 'guest/serviceapikey/check', { key: metered })).result).toBe(true);
    const events = Array.from({ length: 3 }, (_, i) => ({ id: `cluster-${i}`, order_id: order, meter: 'requests' }));
    expect(await admin(cluster.port, 'usage/ingest', { events })).toMatchObject({ accepted: 3 });
    // Told through the primary's relay: well before the two-second re-read that would catch a lost message.
    const started = Date.now();
    await vi.waitFor(
      async () => {
        const answers = await Promise.all(Array.from({ length: 8 }, () => call(cluster.port, 'guest/serviceapikey/check', { key: metered })));
        expect(answers.map((a) => a.result)).toEqual(Array.from({ length: 8 }, () => false));
      },
      { timeout: 5000, interval: 50 },
    );
    expect(Date.now() - started).toBeLessThan(1000);
  }, 60_000);

  it('shares a per-key rate limit between the workers within the documented overshoot', async () => {
    // Low, so that even a busy machine sends several times the limit.
    const limit = 10;
    const product = await admin(cluster.port, 'product/prepare', { title: 'Rate-limited plan', type: 'apikey' });
    await admin(cluster.port, 'product/update', { id: product, status: 'enabled', config: { rate_limit: { limit, window_seconds: 1 } } });
    const client = await admin(cluster.port, 'client/create', { email: 'rate@example.com', first_name: 'R' });
    const order = (await admin(cluster.port, 'order/create', { client_id: client, product_id: product, activate: true })) as number;
    const limitedKey = ((await admin(cluster.port, 'serviceapikey/get', { order_id: order })) as { api_key: string }).api_key;
    for (let i = 0; i < 4; i++) await call(cluster.port, 'guest/serviceapikey/check', { key: limitedKey });
    // The warm-up calls' window starts when they reach the primary, in the workers' next sync (SYNC_MS, later on a
    // busy machine), and must be over before the run, or the run meets one window more than it allows for.
    await new Promise((resolve) => setTimeout(resolve, 1000 + 1000));
    const started = Date.now();
    const until = started + 3000;
    const accepted: number[] = [];
    let refused = 0;
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        while (Date.now() < until) {
          if ((await call(cluster.port, 'guest/serviceapikey/check', { key: limitedKey })).result === true) accepted.push(Date.now());
          else refused++;
        }
      }),
    );
    const run = rateLimitRun(accepted, started, until - started);
    process.stdout.write(`per-key rate limit, WORKERS=2, 10 connections, limit ${limit}/1 s: accepted ${run.total} (per second ${JSON.stringify(run.perSecond)}), refused ${refused}\n`);
    // The load was above the limit; every complete window reached it; no more over it than documented (a tenth of
    // the limit per worker: 12 per window here; 11 measured while neither worker is held up).
    expect(refused).toBeGreaterThan(0);
    expect(run.total).toBeGreaterThanOrEqual(run.leastWindows * limit * 0.9);
    expect(run.total).toBeLessThanOrEqual(run.mostWindows * documentedMaxPerWindow(limit, 2));
  });

  it('a worker killed under load is replaced; the other keeps serving; usage loses at most its last second', async () => {
    const before = ((await admin(cluster.port, 'serviceapikey/usage', { order_id: orderId })) as { total: number }).total;
    const victim = cluster.workers[0]!;
    const successes: number[] = [];
    const statuses = new Map<number, number>();
    let networkErrors = 0;
    const stop = { at: Date.now() + 4000 };
    let killedAt = 0;
    const load = Promise.all(
      Array.from({ length: 6 }, async () => {
        while (Date.now() < stop.at) {
          try {
            const answer = await call(cluster.port, 'guest/serviceapikey/check', { key });
            statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
            if (answer.result === true) successes.push(Date.now());
          } catch {
            networkErrors++;
          }
        }
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, 1500));
    killedAt = Date.now();
    process.kill(victim, 'SIGKILL');
    await load;
    const afterKill = successes.filter((at) => at > killedAt + 50).length;
    expect(afterKill).toBeGreaterThan(0);
    expect([...statuses.keys()]).toEqual([200]);
    // Only requests in flight on the killed worker's connections can fail.
    expect(networkErrors).toBeLessThanOrEqual(6);
    await cluster.waitFor(() => cluster.workers.length >= 3, 60_000, 'the replacement worker');
    expect(cluster.workers.at(-1)).not.toBe(victim);
    expect((await call(cluster.port, 'guest/serviceapikey/check', { key })).result).toBe(true);
    successes.push(Date.now());

    // Stop the cluster (every live worker flushes its counts) and read what reached the database for this order.
    const exited = new Promise((resolve) => cluster.child.once('exit', resolve));
    process.kill(cluster.primaryPid, 'SIGTERM');
    await exited;
    let stored: number;
    if (PG !== '') {
      const db = new pg.Client({ connectionString: cluster.databaseUrl });
      await db.connect();
      stored = Number((await db.query<{ n: string }>(`select coalesce(sum(count), 0) as n from api_key_usage where api_key_id in (select id from api_keys where order_id = $1)`, [orderId])).rows[0]!.n);
      await db.end();
    } else {
      const db = new SqliteDatabase(join(cluster.dir, 'tollgate.db'), { readonly: true });
      stored = (db.prepare('select coalesce(sum(count), 0) as n from api_key_usage where api_key_id in (select id from api_keys where order_id = ?)').get(orderId) as { n: number }).n;
      db.close();
    }
    const counted = stored - before;
    const lost = successes.length - counted;
    // The killed worker's unflushed counts: at most what it answered in the last flush interval (1 s) before its death.
    const lastSecond = successes.filter((at) => at > killedAt - 1100 && at <= killedAt + 50).length;
    expect(lost).toBeGreaterThanOrEqual(0);
    expect(lost).toBeLessThanOrEqual(lastSecond);
  }, 120_000);
});
