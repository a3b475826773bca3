// Key analytics across processes (issue 25, "Bad input and safety"): a load generator sends get_info calls with known
// outcomes — valid, rate limited (a per-key limit both processes share), disabled, unknown keys — to two Tollgate
// processes on one PostgreSQL database and one Redis, ten at a time, and records every answer it saw. Each process
// counts in its own memory and flushes on its own; the analytics must equal what the generator saw, outcome by
// outcome, key by key, and for unknown keys in total and per address. Runs only where TEST_DATABASE_URL and
// TEST_REDIS_URL are set, as in CI's PostgreSQL pass.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { buyKey, createPlan } from '../helpers/apikey.ts';
import { startPeer, type Peer } from '../helpers/peer.ts';

const PG = process.env.TEST_DATABASE_URL ?? '';
const REDIS = process.env.TEST_REDIS_URL ?? '';
const CALLS = 600;
const A_ADDRESS = '198.51.100.77';

type Seen = Record<string, Record<string, number>>;

describe.runIf(PG !== '' && REDIS !== '')('key analytics across two processes on PostgreSQL and Redis', () => {
  let t: TestApp;
  let peer: Peer | undefined;

  beforeAll(async () => {
    t = await createTestApp();
    peer = await startPeer(t, true);
  }, 120_000);
  afterAll(async () => {
    await peer?.stop();
    await t?.close();
  });

  it('counts what a load generator saw across both processes, outcome by outcome', async () => {
    const client = await t.createClient();
    const open = await buyKey(t, await createPlan(t, {}), client.id);
    const limited = await buyKey(t, await createPlan(t, { rate_limit: { limit: 100, window_seconds: 3600 } }), client.id);
    const switchedOff = await buyKey(t, await createPlan(t, {}), client.id);
    expect((await t.admin('serviceapikey/update', { order_id: switchedOff.orderId, valid: false })).result).toBe(true);
    const keys = [
      { name: 'open', key: open.key, id: open.keyId },
      { name: 'limited', key: limited.key, id: limited.keyId },
      { name: 'off', key: switchedOff.key, id: switchedOff.keyId },
      { name: 'unknown', key: 'FFFFFFFF-00000000-FFFFFFFF-00000000', id: 0 },
    ];
    const seen: Seen = {};
    const count = (name: string, reason: string): void => {
      seen[name] ??= {};
      seen[name][reason] = (seen[name][reason] ?? 0) + 1;
    };
    const unknownByProcess = { a: 0, b: 0 };
    // The load: call i goes to key i mod 4 (the unknown key at most 40 times through A, inside its failed-lookup
    // budget) and to process A (in-process) or B (a real socket) in turns of four calls, ten calls in flight at a time.
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < CALLS) {
        const i = next++;
        const target = keys[i % keys.length]!;
        const throughA = Math.floor(i / keys.length) % 2 === 0 && !(target.name === 'unknown' && unknownByProcess.a >= 40);
        const info = throughA
          ? (await t.call('/api/guest/serviceapikey/get_info', { key: target.key }, { ip: A_ADDRESS })).body.result
          : (await peer!.call('guest/serviceapikey/get_info', { key: target.key })).result;
        const reason = (info as { reason: string }).reason;
        if (target.name === 'unknown') unknownByProcess[throughA ? 'a' : 'b']++;
        count(target.name, reason);
      }
    };
    await Promise.all(Array.from({ length: 10 }, worker));
    // What the generator saw: each key's outcomes (the shared limit let about 100 through, whatever process).
    expect(seen.open).toEqual({ VALID: CALLS / 4 });
    expect(seen.off).toEqual({ DISABLED: CALLS / 4 });
    expect(seen.unknown).toEqual({ NOT_FOUND: CALLS / 4 });
    expect((seen.limited?.VALID ?? 0) + (seen.limited?.RATE_LIMITED ?? 0)).toBe(CALLS / 4);
    expect(unknownByProcess.a).toBeGreaterThan(0);
    expect(unknownByProcess.b).toBeGreaterThan(0);
    expect(seen.limited?.RATE_LIMITED ?? 0).toBeGreaterThan(0);

    // Each process writes its own counts: A now, B at its shutdown (its flush on close).
    await t.services.apikeys.flushUsage();
    await peer!.stop();
    peer = undefined;

    for (const { name, id } of keys.slice(0, 3)) {
      for (const granularity of ['minute', 'hour', 'day'] as const) {
        const reply = await t.admin('serviceapikey/analytics', { id, range: '24h', granularity });
        expect(reply.body.error).toBeNull();
        const totals: Record<string, number> = {};
        for (const point of reply.result.series as Array<Record<string, number | string>>) {
          for (const [outcome, value] of Object.entries(point)) if (outcome !== 'at' && value !== 0) totals[outcome] = (totals[outcome] ?? 0) + Number(value);
        }
        const expected = Object.fromEntries(Object.entries(seen[name]!).map(([reason, n]) => [reason.toLowerCase(), n]));
        expect(totals, `${name} by ${granularity}`).toEqual(expected);
      }
    }
    const order = await t.admin('serviceapikey/analytics', { order_id: limited.orderId, range: '30d' });
    expect(order.result.last_used_at).not.toBeNull();

    const unknown = (await t.admin('serviceapikey/analytics_not_found', { range: '24h', granularity: 'minute' })).result as {
      series: Array<{ not_found: number }>;
      top: Array<{ ip: string | null; not_found: number }>;
    };
    expect(unknown.series.reduce((sum, point) => sum + point.not_found, 0)).toBe(CALLS / 4);
    expect(unknown.top.find((row) => row.ip === A_ADDRESS)?.not_found).toBe(unknownByProcess.a);
    // B saw the generator's own address (the loopback), every one of its unknown lookups.
    expect(unknown.top.filter((row) => row.ip !== A_ADDRESS).reduce((sum, row) => sum + row.not_found, 0)).toBe(unknownByProcess.b);
  }, 120_000);
});
