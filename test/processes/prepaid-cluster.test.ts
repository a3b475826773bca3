// A prepaid plan run dry under WORKERS=2 (issue 24: "NO_CREDIT on every process within a second"), as `npm start` runs
// it: a real primary and two workers on one socket, on SQLite — where separately started processes sharing the file
// are not supported and the workers tell each other through the primary — and on PostgreSQL when TEST_DATABASE_URL is
// set (LISTEN/NOTIFY). Tokens ingested through one worker take the balance below zero: every worker refuses the key
// within a second; a top-up lets it through on every worker again. Twenty connections hammering a key over both
// workers never take the balance below −allow_negative beyond the documented overshoot.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CREDIT_REFRESH_MS } from '../../src/modules/serviceapikey/check/credit-state.ts';
import { clusterCall, startCluster, type Cluster } from '../helpers/cluster.ts';

const ADMIN_TOKEN = randomBytes(16).toString('hex');
const PG = process.env.TEST_DATABASE_URL ?? '';

const call = (port: number, path: string, params: Record<string, unknown>, asAdmin = false) => clusterCall(port, path, params, asAdmin ? ADMIN_TOKEN : undefined);

describe('a prepaid plan run dry under WORKERS=2', () => {
  let cluster: Cluster;

  async function admin(path: string, params: Record<string, unknown>): Promise<unknown> {
    const answer = await call(cluster.port, `admin/${path}`, params, true);
    if (answer.status !== 200) throw new Error(`${path}: ${answer.status} ${JSON.stringify(answer.result)}`);
    return answer.result;
  }

  beforeAll(async () => {
    cluster = await startCluster('prepaid-cluster', ADMIN_TOKEN, { RATE_LIMIT_ENABLED: 'false' });
  }, 120_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  /** Eight checks at once on connections of their own (both workers answer some): the time until all are `expected`. */
  async function everyWorker(key: string, expected: boolean, limitMs: number): Promise<number> {
    const started = Date.now();
    for (;;) {
      const answers = await Promise.all(Array.from({ length: 8 }, () => call(cluster.port, 'guest/serviceapikey/check', { key })));
      if (answers.every((answer) => answer.result === expected)) return Date.now() - started;
      if (Date.now() - started > limitMs) throw new Error(`not every worker answered ${expected} within ${limitMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  it('tokens ingested through one worker take the balance below zero: every worker refuses within a second', async () => {
    const meters = [{ code: 'tokens', name: 'Tokens', unit: 'token', aggregation: 'sum', included: 0, overage: { mode: 'per_unit', unit_price: '0.0001' } }];
    const product = await admin('product/prepare', { title: 'AI API', type: 'apikey' });
    await admin('product/update', { id: product, status: 'enabled', config: { usage_period: 'calendar_month', prepaid: true, meters } });
    const client = await admin('client/create', { email: 'prepaid@example.com', first_name: 'P' });
    await admin('client/balance_add_funds', { id: client, amount: '1.00', description: 'Top-up' });
    const order = (await admin('order/create', { client_id: client, product_id: product, activate: true })) as number;
    const key = ((await admin('serviceapikey/get', { order_id: order })) as { api_key: string }).api_key;
    // Both workers hold the key and the balance.
    expect(await everyWorker(key, true, 5000)).toBeLessThan(5000);
    await admin('usage/ingest', { events: [{ id: 'dry-1', order_id: order, meter: 'tokens', value: 15_000 }] });
    const heardIn = await everyWorker(key, false, 5000);
    process.stdout.write(`prepaid, WORKERS=2 on ${PG === '' ? 'SQLite' : 'PostgreSQL'}: every worker refused NO_CREDIT ${heardIn} ms after the draw\n`);
    expect(heardIn).toBeLessThan(1000);
    expect(await admin('client/balance_get_total', { id: client })).toBe('-0.50');
    // A top-up by staff: every worker lets the key through within its re-read interval.
    await admin('client/balance_add_funds', { id: client, amount: '2.00', description: 'Top-up' });
    expect(await everyWorker(key, true, CREDIT_REFRESH_MS + 2000)).toBeLessThan(CREDIT_REFRESH_MS + 2000);
  }, 60_000);

  it('20 connections over both workers never take the balance below −allow_negative beyond the documented overshoot', async () => {
    // 1.00 and allow_negative 0.50 at 0.10 a call: 15 calls above the floor. Each of the P = 2 workers may spend what
    // it saw above the floor at its last sync, so the bound is the floor less (P − 1) × 1.50 (docs/api-keys.md).
    const product = await admin('product/prepare', { title: 'Calls', type: 'apikey' });
    await admin('product/update', { id: product, status: 'enabled', config: { usage_period: 'calendar_month', prepaid: true, allow_negative: '0.50', included: 0, overage: { mode: 'per_unit', unit_price: '0.10' } } });
    const client = await admin('client/create', { email: 'hammer@example.com', first_name: 'H' });
    await admin('client/balance_add_funds', { id: client, amount: '1.00', description: 'Top-up' });
    const order = (await admin('order/create', { client_id: client, product_id: product, activate: true })) as number;
    const key = ((await admin('serviceapikey/get', { order_id: order })) as { api_key: string }).api_key;
    let admitted = 0;
    const hammer = async () => {
      let refusedInRow = 0;
      const started = Date.now();
      while (refusedInRow < 20 && Date.now() - started < 15_000) {
        if ((await call(cluster.port, 'guest/serviceapikey/check', { key })).result === true) {
          admitted++;
          refusedInRow = 0;
        } else refusedInRow++;
      }
    };
    await Promise.all(Array.from({ length: 20 }, hammer));
    // Every admitted call is drawn within the workers' next flushes.
    const balance = async () => Math.round(Number(await admin('client/balance_get_total', { id: client })) * 100);
    const deadline = Date.now() + 5000;
    while ((await balance()) !== 100 - admitted * 10) {
      if (Date.now() > deadline) throw new Error(`the balance is ${await balance()}, not ${100 - admitted * 10}, after ${admitted} calls`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const final = (await balance()) / 100;
    process.stdout.write(`prepaid, WORKERS=2, 20 connections: ${admitted} calls admitted of 15 above the floor; balance ${final.toFixed(2)} (floor −0.50, bound −2.00)\n`);
    expect(admitted).toBeGreaterThanOrEqual(15);
    expect(final).toBeGreaterThanOrEqual(-0.5 - 1.5 - 1e-9);
    expect(await everyWorker(key, false, 3000)).toBeLessThan(3000);
  }, 60_000);
});
