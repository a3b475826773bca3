// @tollgate/sdk against a real Tollgate server process: cache, coalescing, pushed revocation, usage reports exactly
// once, the local quota countdown, and failures (down, slow, 5xx, stream dropped) under failOpen.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Tollgate, type TollgateOptions } from '../src/index.ts';
import { refusalOf } from '../src/guard.ts';
import { sellKey, startTollgate, type TollgateProcess } from './server.ts';

let server: TollgateProcess;
const clients: Tollgate[] = [];
const realFetch = globalThis.fetch;

/** Counts the SDK's calls per action; `fail` may throw after (or instead of) the real call. */
const calls = new Map<string, number>();
let intercept: ((action: string, send: () => Promise<Response>) => Promise<Response>) | null = null;
globalThis.fetch = async (input: string | URL | Request, init?: RequestInit) => {
  const url = String(input instanceof Request ? input.url : input);
  const action = /serviceapikey\/(\w+)/.exec(url)?.[1] ?? 'other';
  calls.set(action, (calls.get(action) ?? 0) + 1);
  const send = () => realFetch(input, init);
  return intercept === null ? send() : intercept(action, send);
};

function sdk(options: Partial<TollgateOptions> = {}): Tollgate {
  const tollgate = new Tollgate({ baseUrl: server.baseUrl, token: server.adminToken, ...options });
  clients.push(tollgate);
  return tollgate;
}

async function usageTotal(orderId: number): Promise<number> {
  return ((await server.admin('serviceapikey/usage', { order_id: orderId })).result as { total: number }).total;
}

async function untilConnected(tollgate: Tollgate): Promise<void> {
  await expect.poll(() => tollgate.connected, { timeout: 5000, interval: 20 }).toBe(true);
}

/** ms until verify refuses the key (polling every 10 ms), or Infinity after `limitMs`. */
async function msUntilRefused(tollgate: Tollgate, key: string, from: number, limitMs = 3000): Promise<number> {
  while (Date.now() - from < limitMs) {
    if (!(await tollgate.verify(key)).valid) return Date.now() - from;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return Infinity;
}

beforeAll(async () => {
  server = await startTollgate();
}, 180_000);
afterEach(async () => {
  intercept = null;
  await Promise.all(clients.splice(0).map((client) => client.close()));
});
afterAll(async () => {
  globalThis.fetch = realFetch;
  await server?.stop();
});

describe('Tollgate.verify', () => {
  it('answers valid keys with their order, key id, config and usage, and refuses unknown or empty keys', async () => {
    const { key, orderId } = await sellKey(server, { custom: { tier: 'pro', monthlyLimit: 100 } });
    const tollgate = sdk();
    const result = await tollgate.verify(key, { ip: '203.0.113.9' });
    expect(result).toMatchObject({ valid: true, reason: 'VALID', orderId, keyId: expect.any(Number), config: { tier: 'pro', monthlyLimit: 100 } });
    expect(result.usage).toMatchObject({ used: 1, limit: 100, remaining: 99 });
    // An address Tollgate would refuse (a zone id) is left out, not turned into a failure.
    const fresh = sdk();
    expect(await fresh.verify(key, { ip: 'fe80::1%eth0' })).toMatchObject({ valid: true, reason: 'VALID' });
    expect(await tollgate.verify('FFFFFFFF-FFFFFFFF-FFFFFFFF-FFFFFFFF')).toMatchObject({ valid: false, reason: 'NOT_FOUND', keyId: null });
    const before = calls.get('get_info') ?? 0;
    expect(await tollgate.verify('')).toMatchObject({ valid: false, reason: 'NOT_FOUND' });
    expect(await tollgate.verify(undefined as unknown as string)).toMatchObject({ valid: false, reason: 'NOT_FOUND' });
    expect(calls.get('get_info') ?? 0).toBe(before);
  });

  it('100 concurrent verifies of one uncached key make one request; later ones come from the cache', async () => {
    const { key, orderId } = await sellKey(server);
    const tollgate = sdk();
    // A stream that connects mid-request would (rightly) keep that answer out of the cache: wait for it first.
    await untilConnected(tollgate);
    const before = calls.get('get_info') ?? 0;
    const results = await Promise.all(Array.from({ length: 100 }, () => tollgate.verify(key)));
    expect(results.every((result) => result.valid)).toBe(true);
    expect((calls.get('get_info') ?? 0) - before).toBe(1);
    for (let i = 0; i < 50; i++) await tollgate.verify(key);
    expect((calls.get('get_info') ?? 0) - before).toBe(1);
    // Unknown keys are remembered too (negative cache).
    await Promise.all(Array.from({ length: 20 }, () => tollgate.verify('AAAAAAAA-AAAAAAAA-AAAAAAAA-AAAAAAAA')));
    await tollgate.verify('AAAAAAAA-AAAAAAAA-AAAAAAAA-AAAAAAAA');
    expect((calls.get('get_info') ?? 0) - before).toBe(2);
    // Every one of the 150 answers is a use: one counted by the server, 99 that shared its request, 50 cache hits.
    await tollgate.close();
    expect(await usageTotal(orderId)).toBe(150);
  });

  it('refuses the use after the last one (limit 1, the first answer from the server)', async () => {
    const { key } = await sellKey(server, { enforce_limit: true, custom: { monthlyLimit: 1 } });
    const tollgate = sdk();
    await untilConnected(tollgate);
    expect((await tollgate.verify(key)).valid).toBe(true);
    expect(await tollgate.verify(key)).toMatchObject({ valid: false, reason: 'LIMIT_EXCEEDED' });
  });

  it('keeps answering past a limit the plan does not enforce, without asking the server each time', async () => {
    const { key, orderId } = await sellKey(server, { custom: { monthlyLimit: 2 } });
    const tollgate = sdk({ reportIntervalMs: 60_000 });
    await untilConnected(tollgate);
    const before = calls.get('get_info') ?? 0;
    for (let i = 0; i < 10; i++) expect((await tollgate.verify(key)).valid).toBe(true);
    expect((calls.get('get_info') ?? 0) - before).toBeLessThanOrEqual(3);
    await tollgate.close();
    expect(await usageTotal(orderId)).toBe(10);
  });

  it('counts down the quota for callers that shared one request too', async () => {
    const { key, orderId } = await sellKey(server, { enforce_limit: true, custom: { monthlyLimit: 30 } });
    const tollgate = sdk({ reportIntervalMs: 60_000 });
    await untilConnected(tollgate);
    const results = await Promise.all(Array.from({ length: 50 }, () => tollgate.verify(key)));
    expect(results.filter((result) => result.valid)).toHaveLength(30);
    await tollgate.close();
    expect(await usageTotal(orderId)).toBe(30);
  });

  it('reports every use answered exactly once, also when a report is retried after its answer was lost', async () => {
    const { key, orderId } = await sellKey(server);
    const tollgate = sdk({ reportIntervalMs: 60_000 });
    for (let i = 0; i < 30; i++) expect((await tollgate.verify(key)).valid).toBe(true);
    // The first report reaches the server but its answer is lost: the retry carries the same batch id.
    let lost = 0;
    intercept = async (action, send) => {
      const response = await send();
      if (action === 'report_usage' && lost++ === 0) throw new Error('connection reset');
      return response;
    };
    await tollgate.flush();
    expect(lost).toBe(1);
    await tollgate.flush();
    expect(lost).toBe(2);
    for (let i = 0; i < 20; i++) await tollgate.verify(key);
    await tollgate.close();
    expect(await usageTotal(orderId)).toBe(50);
  });

  it('counts usage.remaining down locally so a hard limit holds', async () => {
    const { key, orderId } = await sellKey(server, { enforce_limit: true, custom: { monthlyLimit: 7 } });
    const tollgate = sdk({ reportIntervalMs: 60_000 });
    const results = [];
    for (let i = 0; i < 15; i++) results.push(await tollgate.verify(key));
    expect(results.filter((result) => result.valid)).toHaveLength(7);
    expect(results.at(-1)).toMatchObject({ valid: false, reason: 'LIMIT_EXCEEDED', retryAfter: expect.any(Number) });
    await tollgate.close();
    expect(await usageTotal(orderId)).toBe(7);
  });

  it('passes on a per-key RATE_LIMITED with its retryAfter, does not cache it as invalid, and the adapters answer 429', async () => {
    const { key } = await sellKey(server, { rate_limit: { limit: 1, window_seconds: 1 } });
    // Valid answers not cached, so every verify asks the server (whose rate limit decides); refusals would be cached
    // for negativeTtlMs (3 s) if RATE_LIMITED were treated as an invalid key.
    const tollgate = sdk({ cacheTtlMs: 0 });
    expect(await tollgate.verify(key)).toMatchObject({ valid: true, reason: 'VALID' });
    const limited = await tollgate.verify(key);
    expect(limited).toMatchObject({ valid: false, reason: 'RATE_LIMITED' });
    expect(limited.retryAfter).toBeGreaterThanOrEqual(1);
    expect(refusalOf(limited)).toEqual({ status: 429, body: { error: { code: 'RATE_LIMITED', message: expect.any(String) } }, retryAfter: limited.retryAfter });
    const asked = calls.get('get_info') ?? 0;
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect(await tollgate.verify(key)).toMatchObject({ valid: true, reason: 'VALID' });
    expect(calls.get('get_info')).toBe(asked + 1);
  });

  it('refuses a key revoked through the admin API within 1 s (pushed over the events stream)', async () => {
    const tollgate = sdk({ cacheTtlMs: 60_000 });
    await untilConnected(tollgate);
    for (let i = 0; i < 5; i++) {
      const { key, orderId } = await sellKey(server);
      expect((await tollgate.verify(key)).valid).toBe(true);
      const from = Date.now();
      await server.admin('serviceapikey/update', { order_id: orderId, valid: false });
      expect(await msUntilRefused(tollgate, key, from)).toBeLessThan(1000);
      // Re-enabled: valid again (the refusal was not cached past the change).
      await server.admin('serviceapikey/update', { order_id: orderId, valid: true });
      await expect.poll(async () => (await tollgate.verify(key)).valid, { timeout: 1000, interval: 10 }).toBe(true);
    }
  });
});

describe('failures follow failOpen', () => {
  let stub: Server;
  let stubUrl: string;
  let mode: 'slow' | '500' = '500';
  beforeAll(async () => {
    stub = createServer((request, response) => {
      if (request.url?.includes('/events')) {
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.write(': connected\n\n');
        return;
      }
      if (mode === 'slow') setTimeout(() => response.end('{"result":true,"error":null}'), 1500).unref();
      else response.writeHead(500).end('{"result":null,"error":{"message":"boom","code":500}}');
    });
    await new Promise<void>((resolve) => stub.listen(0, '127.0.0.1', resolve));
    stubUrl = `http://127.0.0.1:${(stub.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    stub.closeAllConnections();
    await new Promise((resolve) => stub.close(resolve));
  });

  it('a key Tollgate refuses as input (a NUL, 10,000 characters) is NOT_FOUND even with failOpen, never UNAVAILABLE', async () => {
    const open = sdk({ failOpen: true });
    for (const key of ['ABCD\u0000EFGH', 'K'.repeat(10_000)]) expect(await open.verify(key)).toMatchObject({ valid: false, reason: 'NOT_FOUND' });
  });

  it('server down: refused unless failOpen', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise((resolve) => closed.close(resolve));
    const closedSdk = new Tollgate({ baseUrl: url, token: 't' });
    const openSdk = new Tollgate({ baseUrl: url, token: 't', failOpen: true });
    clients.push(closedSdk, openSdk);
    expect(await closedSdk.verify('KEY')).toMatchObject({ valid: false, reason: 'UNAVAILABLE' });
    expect(await openSdk.verify('KEY')).toMatchObject({ valid: true, reason: 'UNAVAILABLE' });
  });

  it('slow past timeoutMs, and 5xx: refused unless failOpen, within the timeout', async () => {
    for (const current of ['slow', '500'] as const) {
      mode = current;
      for (const failOpen of [false, true]) {
        const tollgate = new Tollgate({ baseUrl: stubUrl, token: 't', timeoutMs: 200, failOpen });
        clients.push(tollgate);
        const started = Date.now();
        expect(await tollgate.verify('KEY'), `${current} ${failOpen}`).toMatchObject({ valid: failOpen, reason: 'UNAVAILABLE' });
        expect(Date.now() - started).toBeLessThan(1000);
        // Failures are not cached: the next call asks again.
        const before = calls.get('get_info') ?? 0;
        await tollgate.verify('KEY');
        expect(calls.get('get_info')).toBe(before + 1);
      }
    }
  });
});

describe('the events stream dropped', () => {
  it('stops serving old cached answers, lets failOpen decide while the server is down, and after reconnection refuses revoked keys within 1 s', async () => {
    const { key, orderId } = await sellKey(server);
    const closedSdk = sdk({ cacheTtlMs: 60_000, timeoutMs: 300 });
    const openSdk = sdk({ cacheTtlMs: 60_000, timeoutMs: 300, failOpen: true });
    await untilConnected(closedSdk);
    await untilConnected(openSdk);
    expect((await closedSdk.verify(key)).valid).toBe(true);
    expect((await openSdk.verify(key)).valid).toBe(true);

    await server.kill();
    await expect.poll(() => closedSdk.connected, { timeout: 3000, interval: 20 }).toBe(false);
    // Cached answers are trusted at most a second without the stream; then the (down) server is asked.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect(await closedSdk.verify(key)).toMatchObject({ valid: false, reason: 'UNAVAILABLE' });
    expect(await openSdk.verify(key)).toMatchObject({ valid: true, reason: 'UNAVAILABLE' });

    await server.restart();
    await untilConnected(closedSdk);
    expect((await closedSdk.verify(key)).valid).toBe(true);
    const from = Date.now();
    await server.admin('serviceapikey/update', { order_id: orderId, valid: false });
    expect(await msUntilRefused(closedSdk, key, from)).toBeLessThan(1000);
    expect(await msUntilRefused(openSdk, key, from)).toBeLessThan(1000);
  }, 60_000);
});
