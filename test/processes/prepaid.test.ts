// Prepaid plans across processes (issue 24 item 2): usage drawn through one Tollgate process takes the client's
// balance to its floor; the other process, which holds the balance in memory, refuses the key with NO_CREDIT within a
// second (told by a `c<client id>` message on the key invalidation channel); a top-up lets both through again; and
// two processes × ten connections hammering one key never take the balance below −allow_negative further than the
// documented overshoot ((P − 1) × the credit above the floor at the last sync). Runs only where TEST_DATABASE_URL and
// TEST_REDIS_URL are set, as in CI's PostgreSQL pass.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CREDIT_REFRESH_MS } from '../../src/modules/serviceapikey/check/credit-state.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { expectLedgerConsistent } from '../helpers/credit-ledger.ts';
import { startPeer, type Peer } from '../helpers/peer.ts';

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

describe.runIf(PG !== '' && REDIS !== '')('prepaid plans across two processes on PostgreSQL and Redis', () => {
  let t: TestApp;
  let peer: Peer;
  let ids = 0;

  beforeAll(async () => {
    t = await createTestApp();
    peer = await startPeer(t, true);
  }, 120_000);
  afterAll(async () => {
    await peer?.stop();
    await t?.close();
  });

  async function plan(config: Record<string, unknown>): Promise<number> {
    const product = (await t.admin('product/prepare', { title: `Prepaid ${++ids}`, type: 'apikey' })).result as number;
    const meters = [{ code: 'tokens', name: 'Tokens', unit: 'token', aggregation: 'sum', included: 0, overage: { mode: 'per_unit', unit_price: '0.001' } }];
    const updated = await t.admin('product/update', {
      id: product,
      status: 'enabled',
      config: { usage_period: 'calendar_month', prepaid: true, included: 0, overage: { mode: 'per_unit', unit_price: '0.10' }, meters, ...config },
    });
    expect(updated.body.error).toBeNull();
    return product;
  }

  async function order(product: number, funds: string): Promise<{ orderId: number; key: string; clientId: number }> {
    const client = await t.createClient();
    expect((await t.admin('client/balance_add_funds', { id: client.id, amount: funds, description: 'Top-up' })).result).toBe(true);
    const orderId = (await t.admin('order/create', { client_id: client.id, product_id: product, activate: true })).result as number;
    return { orderId, key: (await t.admin('serviceapikey/get', { order_id: orderId })).result.api_key as string, clientId: client.id };
  }

  const there = async (key: string) => (await peer.call('guest/serviceapikey/check', { key })).result;
  const here = async (key: string) => (await t.call('/api/guest/serviceapikey/check', { key })).result;
  const balance = async (clientId: number) => Number((await t.admin('client/balance_get_total', { id: clientId })).result);

  it('uses drawn through A take the balance to zero: B refuses within a second, and a top-up lets both through', async () => {
    const { key, clientId } = await order(await plan({}), '1.00');
    // B holds the key and the balance; its use is drawn by its own flush, and A hears of it.
    expect(await there(key)).toBe(true);
    await within(() => balance(clientId), 0.9);
    expect(await here(key)).toBe(true);
    const answers: unknown[] = [];
    for (let i = 0; i < 9; i++) answers.push(await here(key));
    // B's use and A's nine spend the 1.00: A refuses its tenth from its own count, before any flush.
    expect(answers.filter((answer) => answer === true)).toHaveLength(8);
    expect(answers[8]).toBe(false);
    await t.services.apikeys.flushUsage();
    const ms = await within(() => there(key), false);
    expect(ms).toBeLessThan(1000);
    await within(async () => balance(clientId), 0);
    // A top-up through staff: both processes let the key through again within their re-read interval.
    expect((await t.admin('client/balance_add_funds', { id: clientId, amount: '0.50', description: 'More' })).result).toBe(true);
    expect(await within(() => here(key), true, CREDIT_REFRESH_MS + 1500)).toBeLessThan(CREDIT_REFRESH_MS + 1500);
    expect(await within(() => there(key), true, CREDIT_REFRESH_MS + 1500)).toBeLessThan(CREDIT_REFRESH_MS + 1500);
    await expectLedgerConsistent(t.services.db);
  });

  it('events ingested through B take the balance below zero: A refuses within a second', async () => {
    const { orderId, key, clientId } = await order(await plan({}), '1.00');
    expect(await here(key)).toBe(true);
    await t.services.apikeys.flushUsage();
    const events = [{ id: `t-${++ids}`, order_id: orderId, meter: 'tokens', value: 1000 }];
    expect((await peer.call('admin/usage/ingest', { events }, t.adminToken)).result).toMatchObject({ accepted: 1 });
    expect(await there(key)).toBe(false);
    expect(await within(() => here(key), false)).toBeLessThan(1000);
    expect(await balance(clientId)).toBeCloseTo(-0.1, 5);
    await expectLedgerConsistent(t.services.db);
  });

  it('2 processes × 10 connections never take the balance below −allow_negative beyond the documented overshoot', async () => {
    // 1.00 and allow_negative 0.50: 15 calls at 0.10 above the floor. Each process may spend what it saw above the
    // floor at its last sync, so the bound is the floor less (P − 1) × 1.50.
    const { key, clientId } = await order(await plan({ allow_negative: '0.50' }), '1.00');
    expect(await there(key)).toBe(true);
    expect(await here(key)).toBe(true);
    let admitted = 0;
    const hammer = async (probe: (key: string) => Promise<unknown>) => {
      let refusedInRow = 0;
      const started = Date.now();
      while (refusedInRow < 20 && Date.now() - started < 15_000) {
        if ((await probe(key)) === true) {
          admitted++;
          refusedInRow = 0;
        } else refusedInRow++;
      }
    };
    await Promise.all([...Array.from({ length: 10 }, () => hammer(there)), ...Array.from({ length: 10 }, () => hammer(here))]);
    await t.services.apikeys.flushUsage();
    // B flushes and draws within its second; then the ledger holds every admitted call.
    await within(async () => Math.round(-(await balance(clientId)) * 100 + 100), (admitted + 2) * 10, 5000);
    const final = await balance(clientId);
    const overshoot = -0.5 - final;
    process.stdout.write(`prepaid overshoot: ${admitted + 2} calls admitted of 15 above the floor; balance ${final.toFixed(2)} (floor −0.50, bound −2.00)\n`);
    expect(final).toBeGreaterThanOrEqual(-0.5 - 1 * 1.5 - 1e-9);
    expect(overshoot).toBeLessThanOrEqual(1.5 + 1e-9);
    // Both processes refuse now.
    expect(await within(() => there(key), false)).toBeLessThan(1000);
    expect(await here(key)).toBe(false);
    await expectLedgerConsistent(t.services.db);
  }, 60_000);

  it('under steady traffic from both processes the overshoot stays within the bound (and is measured)', async () => {
    // 3.00 at 0.01 a call, no allow_negative: 300 calls above the floor, spent by 2 × 10 connections pacing their calls.
    const { key, clientId } = await order(await plan({ overage: { mode: 'per_unit', unit_price: '0.01' } }), '3.00');
    expect(await there(key)).toBe(true);
    expect(await here(key)).toBe(true);
    let admitted = 2;
    const paced = async (probe: (key: string) => Promise<unknown>) => {
      let refusedInRow = 0;
      const started = Date.now();
      while (refusedInRow < 5 && Date.now() - started < 30_000) {
        if ((await probe(key)) === true) {
          admitted++;
          refusedInRow = 0;
        } else refusedInRow++;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    await Promise.all([...Array.from({ length: 10 }, () => paced(there)), ...Array.from({ length: 10 }, () => paced(here))]);
    await t.services.apikeys.flushUsage();
    await within(async () => Math.round(-(await balance(clientId)) * 100 + 300), admitted, 5000);
    const final = await balance(clientId);
    process.stdout.write(`prepaid steady overshoot: ${admitted} calls admitted of 300 above the floor; balance ${final.toFixed(2)} (floor 0.00, burst bound −3.00)\n`);
    // The documented bound holds; how far below it steady traffic stays depends on the machine's load (printed above,
    // recorded in docs/api-keys.md), so only the bound is required here.
    expect(final).toBeGreaterThanOrEqual(-3);
    await expectLedgerConsistent(t.services.db);
  }, 90_000);
});
