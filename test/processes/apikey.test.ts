// Revocation across processes: two real Tollgate processes (this test's app and a child process started with tsx,
// talked to over a real socket) share one PostgreSQL database, and in the second suite one Redis too. A change made
// through either must make `check` answer false on the other within one second. Runs only where TEST_DATABASE_URL
// (and TEST_REDIS_URL) are set, as in CI's PostgreSQL pass.
import { Redis } from 'ioredis';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { startPeer, type Peer } from '../helpers/peer.ts';

const PG = process.env.TEST_DATABASE_URL ?? '';
const REDIS = process.env.TEST_REDIS_URL ?? '';

/** Polls `probe` until it returns `expected`; returns the milliseconds that took (fails after 3 s). */
async function within(probe: () => Promise<unknown>, expected: unknown): Promise<number> {
  const started = Date.now();
  for (;;) {
    if ((await probe()) === expected) return Date.now() - started;
    if (Date.now() - started > 3000) throw new Error(`still not ${String(expected)} after 3 s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function suite(redis: boolean) {
  let t: TestApp;
  let peer: Peer;
  let orderId: number;
  let clientId: number;
  let key: string;

  beforeAll(async () => {
    t = await createTestApp(redis ? {} : { REDIS_URL: '' });
    peer = await startPeer(t, redis);
    const product = (await t.admin('product/prepare', { title: 'API', type: 'apikey' })).result as number;
    await t.admin('product/update', { id: product, status: 'enabled', config: { custom: { tier: 'pro' } } });
    const client = await t.createClient();
    clientId = client.id;
    orderId = (await t.admin('order/create', { client_id: client.id, product_id: product, activate: true })).result as number;
    key = (await t.admin('serviceapikey/get', { order_id: orderId })).result.api_key as string;
  }, 120_000);
  afterAll(async () => {
    await peer?.stop();
    await t?.close();
  });

  const here = async (k: string) => (await t.call('/api/guest/serviceapikey/check', { key: k })).result;
  const there = async (k: string) => (await peer.call('guest/serviceapikey/check', { key: k })).result;

  it('expects the channel this configuration calls for', () => {
    expect(t.services.apikeys.internals.channel.kind).toBe(redis ? 'redis' : 'postgres');
  });

  it('revokes through one process and the other answers false within a second', async () => {
    // Warm both caches.
    for (let i = 0; i < 3; i++) {
      expect(await there(key)).toBe(true);
      expect(await here(key)).toBe(true);
    }
    const changes: Array<[() => Promise<unknown>, boolean]> = [
      [() => t.admin('order/suspend', { id: orderId }), false],
      [() => t.admin('order/unsuspend', { id: orderId }), true],
      [() => t.admin('serviceapikey/update', { order_id: orderId, valid: 0 }), false],
      [() => t.admin('serviceapikey/update', { order_id: orderId, valid: 1 }), true],
      [() => t.admin('order/cancel', { id: orderId }), false],
      [() => t.admin('order/uncancel', { id: orderId }), true],
      // The client's account (issue 8, item 10): suspended or canceled → its keys are invalid everywhere.
      [() => t.admin('client/update', { id: clientId, status: 'suspended' }), false],
      [() => t.admin('client/update', { id: clientId, status: 'active' }), true],
      [() => t.admin('client/update', { id: clientId, status: 'canceled' }), false],
      [() => t.admin('client/update', { id: clientId, status: 'active' }), true],
    ];
    for (const [change, valid] of changes) {
      await change();
      expect(await here(key)).toBe(valid);
      expect(await within(() => there(key), valid)).toBeLessThan(1000);
    }
    // The other way round: staff revoke through the second process.
    const viaPeer = await peer.call('admin/order/suspend', { id: orderId }, t.adminToken);
    expect(viaPeer.status).toBe(200);
    expect(await within(() => here(key), false)).toBeLessThan(1000);
    await peer.call('admin/order/unsuspend', { id: orderId }, t.adminToken);
    expect(await within(() => here(key), true)).toBeLessThan(1000);
    expect(await there(key)).toBe(true);
    // A client suspended and reactivated through the second process.
    expect((await peer.call('admin/client/update', { id: clientId, status: 'suspended' }, t.adminToken)).result).toBe(true);
    expect(await there(key)).toBe(false);
    expect(await within(() => here(key), false)).toBeLessThan(1000);
    expect((await t.call('/api/guest/serviceapikey/get_info', { key })).result.reason).toBe('CLIENT_INACTIVE');
    expect((await peer.call('admin/client/update', { id: clientId, status: 'active' }, t.adminToken)).result).toBe(true);
    expect(await within(() => here(key), true)).toBeLessThan(1000);
    expect(await there(key)).toBe(true);
  });

  it('makes a reset key fail everywhere and the new key work everywhere', async () => {
    expect(await there(key)).toBe(true);
    const reset = await t.admin('serviceapikey/reset', { order_id: orderId });
    const fresh = reset.result as string;
    expect(await here(key)).toBe(false);
    expect(await within(() => there(key), false)).toBeLessThan(1000);
    expect(await there(fresh)).toBe(true);
    key = fresh;
  });

  it('a deleted key stops on the other process within a second; a replaced key stops there at its grace end', async () => {
    const team = (await t.admin('product/prepare', { title: 'Team', type: 'apikey' })).result as number;
    await t.admin('product/update', { id: team, status: 'enabled', config: { max_keys: 2 } });
    const teamOrder = (await t.admin('order/create', { client_id: clientId, product_id: team, activate: true })).result as number;
    const first = (await t.admin('serviceapikey/get', { order_id: teamOrder })).result as { id: number; api_key: string };
    const second = (await t.admin('serviceapikey/create', { order_id: teamOrder, name: 'second' })).result as { id: number; api_key: string };
    expect(await there(second.api_key)).toBe(true);
    expect(await here(second.api_key)).toBe(true);
    // Deleted through the other process: refused here within a second.
    expect((await peer.call('admin/serviceapikey/delete', { id: second.id }, t.adminToken)).result).toBe(true);
    expect(await within(() => here(second.api_key), false)).toBeLessThan(1000);
    expect(await there(second.api_key)).toBe(false);

    // Rotated here with a grace of 2 s: the old key keeps working on both processes, then stops on both.
    expect(await there(first.api_key)).toBe(true);
    const rotated = (await t.admin('serviceapikey/reset', { id: first.id, grace_seconds: 2 })).result as string;
    // The other process hears of the reset within a second; from then on it shows the grace's end.
    const rotatingUntil = async () => ((await peer.call('guest/serviceapikey/get_info', { key: first.api_key })).result as { valid: number; rotating_until: string | null }).rotating_until;
    expect(await within(async () => (await rotatingUntil()) !== null, true)).toBeLessThan(1000);
    const end = Date.parse((await rotatingUntil())!);
    expect(end).toBeGreaterThan(Date.now());
    expect(await there(rotated)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, end - Date.now() - 300)));
    expect(await there(first.api_key)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, end - Date.now()) + 20));
    expect(await there(first.api_key)).toBe(false);
    expect(await here(first.api_key)).toBe(false);
    expect(await there(rotated)).toBe(true);
  });

  it('stays consistent after the listener loses its connection', async () => {
    expect(await there(key)).toBe(true);
    if (redis) {
      // Drop every pub/sub connection (both processes'); ioredis reconnects and subscribes again.
      const admin = new Redis(REDIS);
      await admin.client('KILL', 'TYPE', 'pubsub');
      await admin.quit();
    } else {
      // Kill every LISTEN connection (both processes'); they reconnect, and meanwhile records live at most a second.
      await sql`select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and query like 'LISTEN%'`.execute(t.services.db);
    }
    await t.admin('order/suspend', { id: orderId });
    expect(await within(() => there(key), false)).toBeLessThan(1500);
    await t.admin('order/unsuspend', { id: orderId });
    expect(await within(() => there(key), true)).toBeLessThan(1500);
  });

  it('deletes the key everywhere with its order', async () => {
    expect(await there(key)).toBe(true);
    await t.admin('order/cancel', { id: orderId });
    await t.admin('order/delete', { id: orderId });
    expect(await within(() => there(key), false)).toBeLessThan(1000);
    const info = await peer.call('guest/serviceapikey/get_info', { key });
    expect(info.result).toEqual({ valid: 0, config: null, reason: 'NOT_FOUND', usage: null, retry_after: null, rotating_until: null });
  });
}

describe.runIf(PG !== '')('API key revocation across two processes on PostgreSQL (LISTEN/NOTIFY)', () => suite(false));
describe.runIf(PG !== '' && REDIS !== '')('API key revocation across two processes on PostgreSQL and Redis (pub/sub)', () => suite(true));
