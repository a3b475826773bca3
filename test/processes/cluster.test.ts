// WORKERS=2 (CONTRACT §13), as `npm start` runs it: a real primary and two workers on one real socket, on SQLite
// (and on PostgreSQL when TEST_DATABASE_URL is set). A key change reaches every worker within a second, a rate limit
// is shared and exact, and a worker killed under load is replaced while the other keeps serving, with no usage lost
// beyond that worker's last second of counts.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import SqliteDatabase from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { documentedMaxPerWindow, rateLimitRun } from '../helpers/apikey.ts';
import { freshPostgresDatabase } from '../helpers/test-database.ts';

const ADMIN_TOKEN = randomBytes(16).toString('hex');
const PG = process.env.TEST_DATABASE_URL ?? '';

interface Answer {
  status: number;
  result: unknown;
}

/** One request on a connection of its own, so node:cluster's round-robin spreads the requests over the workers. */
function call(port: number, path: string, params: Record<string, unknown>, asAdmin = false): Promise<Answer> {
  const body = JSON.stringify(params);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: `/api/${path}`,
        method: 'POST',
        agent: false,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          ...(asAdmin && { authorization: `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64')}` }),
        },
      },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () => {
          try {
            resolve({ status: res.statusCode ?? 0, result: (JSON.parse(text) as { result: unknown }).result });
          } catch (error) {
            reject(error);
          }
        });
      },
    );
    req.on('error', reject);
    // A connection handed to a worker as it died may never be answered: give up on it rather than wait forever.
    req.setTimeout(5000, () => req.destroy(new Error('timed out')));
    req.end(body);
  });
}

async function admin(port: number, path: string, params: Record<string, unknown>): Promise<unknown> {
  const answer = await call(port, `admin/${path}`, params, true);
  if (answer.status !== 200) throw new Error(`${path}: ${answer.status}`);
  return answer.result;
}

describe('WORKERS=2', () => {
  let dir: string;
  let child: ChildProcess;
  let port = 0;
  let databaseUrl: string;
  let dropDatabase = async (): Promise<void> => {};
  /** pid → listening, from the workers' "Server listening" lines. */
  const workers: number[] = [];
  let primaryPid = 0;
  const output: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tollgate-cluster-'));
    databaseUrl = `sqlite:${join(dir, 'tollgate.db')}`;
    if (PG !== '') {
      const fresh = await freshPostgresDatabase(PG);
      databaseUrl = fresh.url;
      dropDatabase = fresh.drop;
    }
    child = spawn(process.execPath, ['scripts/start.mjs'], {
      env: {
        PATH: process.env.PATH,
        WORKERS: '2',
        PORT: '0',
        HOST: '127.0.0.1',
        DATA_DIR: dir,
        DATABASE_URL: databaseUrl,
        TOLLGATE_SECRET: randomBytes(32).toString('hex'),
        TOLLGATE_ADMIN_EMAIL: 'admin@example.com',
        TOLLGATE_ADMIN_PASSWORD: 'Admin-Passw0rd',
        TOLLGATE_ADMIN_API_TOKEN: ADMIN_TOKEN,
        RATE_LIMIT_API_GUEST: '5/60',
        SCHEDULER: 'off',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stderr!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      output.push(line);
      const primary = /"msg":"primary (\d+) started/.exec(line);
      if (primary !== null) primaryPid = Number(primary[1]);
      const listening = /"pid":(\d+).*Server listening at http:\/\/127\.0\.0\.1:(\d+)/.exec(line);
      if (listening !== null) {
        workers.push(Number(listening[1]));
        port = Number(listening[2]);
      }
    });
    await waitFor(() => workers.length >= 2, 90_000, 'two workers listening');
  }, 120_000);

  afterAll(async () => {
    if (child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    await dropDatabase();
    rmSync(dir, { recursive: true, force: true });
  });

  async function waitFor(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!condition()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${output.join('\n')}`);
      if (child.exitCode !== null) throw new Error(`the server exited (${child.exitCode})\n${output.join('\n')}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  let orderId = 0;
  let key = '';

  it('shares one exact rate limit between the workers', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await call(port, 'guest/system/version', {})).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429]);
  });

  it('a key disabled through one worker fails on every worker, and passes on every worker once enabled again', async () => {
    const product = await admin(port, 'product/prepare', { title: 'API plan', type: 'apikey' });
    await admin(port, 'product/update', { id: product, status: 'enabled', config: {} });
    const client = await admin(port, 'client/create', { email: 'c@example.com', first_name: 'C' });
    orderId = (await admin(port, 'order/create', { client_id: client, product_id: product, activate: true })) as number;
    key = ((await admin(port, 'serviceapikey/get', { order_id: orderId })) as { api_key: string }).api_key;
    // Warm both workers' caches: with connections of their own, consecutive calls alternate between the workers.
    for (let i = 0; i < 6; i++) expect((await call(port, 'guest/serviceapikey/check', { key })).result).toBe(true);
    // The key record stays in each worker's cache until invalidated (no expiry), so a worker that missed the change
    // would answer the old state for ever: waiting for the new state on every worker, with a deadline far beyond the
    // second the change takes, proves it reached them (rather than racing a fixed sleep on a busy machine).
    const everyWorkerAnswers = (expected: boolean) =>
      vi.waitFor(
        async () => {
          const answers = await Promise.all(Array.from({ length: 8 }, () => call(port, 'guest/serviceapikey/check', { key })));
          expect(answers.map((a) => a.result)).toEqual(Array.from({ length: 8 }, () => expected));
        },
        { timeout: 15_000, interval: 100 },
      );
    await admin(port, 'serviceapikey/update', { order_id: orderId, valid: false });
    await everyWorkerAnswers(false);
    await admin(port, 'serviceapikey/update', { order_id: orderId, valid: true });
    await everyWorkerAnswers(true);
  }, 60_000);

  it("events ingested through one worker push an order over a meter's hard limit: every worker refuses within a second", async () => {
    const meters = [{ code: 'requests', name: 'Requests', unit: 'request', aggregation: 'count', hard_limit: 3 }];
    const product = await admin(port, 'product/prepare', { title: 'Metered plan', type: 'apikey' });
    await admin(port, 'product/update', { id: product, status: 'enabled', config: { usage_period: 'calendar_month', meters } });
    const client = await admin(port, 'client/create', { email: 'meters@example.com', first_name: 'M' });
    const order = (await admin(port, 'order/create', { client_id: client, product_id: product, activate: true })) as number;
    const metered = ((await admin(port, 'serviceapikey/get', { order_id: order })) as { api_key: string }).api_key;
    // Both workers hold the order's quantities (consecutive connections alternate between the workers).
    for (let i = 0; i < 6; i++) expect((await call(port, 'guest/serviceapikey/check', { key: metered })).result).toBe(true);
    const events = Array.from({ length: 3 }, (_, i) => ({ id: `cluster-${i}`, order_id: order, meter: 'requests' }));
    expect(await admin(port, 'usage/ingest', { events })).toMatchObject({ accepted: 3 });
    // Told through the primary's relay: well before the two-second re-read that would catch a lost message.
    const started = Date.now();
    await vi.waitFor(
      async () => {
        const answers = await Promise.all(Array.from({ length: 8 }, () => call(port, 'guest/serviceapikey/check', { key: metered })));
        expect(answers.map((a) => a.result)).toEqual(Array.from({ length: 8 }, () => false));
      },
      { timeout: 5000, interval: 50 },
    );
    expect(Date.now() - started).toBeLessThan(1000);
  }, 60_000);

  it('shares a per-key rate limit between the workers within the documented overshoot', async () => {
    // Low, so that even a busy machine sends several times the limit.
    const limit = 10;
    const product = await admin(port, 'product/prepare', { title: 'Rate-limited plan', type: 'apikey' });
    await admin(port, 'product/update', { id: product, status: 'enabled', config: { rate_limit: { limit, window_seconds: 1 } } });
    const client = await admin(port, 'client/create', { email: 'rate@example.com', first_name: 'R' });
    const order = (await admin(port, 'order/create', { client_id: client, product_id: product, activate: true })) as number;
    const limitedKey = ((await admin(port, 'serviceapikey/get', { order_id: order })) as { api_key: string }).api_key;
    for (let i = 0; i < 4; i++) await call(port, 'guest/serviceapikey/check', { key: limitedKey });
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
          if ((await call(port, 'guest/serviceapikey/check', { key: limitedKey })).result === true) accepted.push(Date.now());
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
    const before = ((await admin(port, 'serviceapikey/usage', { order_id: orderId })) as { total: number }).total;
    const victim = workers[0]!;
    const successes: number[] = [];
    const statuses = new Map<number, number>();
    let networkErrors = 0;
    const stop = { at: Date.now() + 4000 };
    let killedAt = 0;
    const load = Promise.all(
      Array.from({ length: 6 }, async () => {
        while (Date.now() < stop.at) {
          try {
            const answer = await call(port, 'guest/serviceapikey/check', { key });
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
    await waitFor(() => workers.length >= 3, 60_000, 'the replacement worker');
    expect(workers.at(-1)).not.toBe(victim);
    expect((await call(port, 'guest/serviceapikey/check', { key })).result).toBe(true);
    successes.push(Date.now());

    // Stop the cluster (every live worker flushes its counts) and read what reached the database for this order.
    const exited = new Promise((resolve) => child.once('exit', resolve));
    process.kill(primaryPid, 'SIGTERM');
    await exited;
    let stored: number;
    if (PG !== '') {
      const db = new pg.Client({ connectionString: databaseUrl });
      await db.connect();
      stored = Number((await db.query<{ n: string }>(`select coalesce(sum(count), 0) as n from api_key_usage where api_key_id in (select id from api_keys where order_id = $1)`, [orderId])).rows[0]!.n);
      await db.end();
    } else {
      const db = new SqliteDatabase(join(dir, 'tollgate.db'), { readonly: true });
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
