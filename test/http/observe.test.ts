// Logging and metrics (CONTRACT §13): no line per request at the default level, slow requests always logged, the
// opt-in access log and /metrics never carrying a key, token, cookie, query string, body, e-mail or address.
import { Writable } from 'node:stream';
import { randomBytes } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { bootstrap } from '../../src/bootstrap.ts';
import { loadConfig } from '../../src/config.ts';
import type { ModuleApi } from '../../src/platform/action.ts';
import { modules } from '../../src/modules/index.ts';
import type { Services } from '../../src/services.ts';
import type { FastifyInstance } from 'fastify';
import { createTestApp, type TestApp } from '../helpers/app.ts';

class Lines extends Writable {
  readonly lines: Array<Record<string, unknown> & { raw: string }> = [];
  override _write(chunk: Buffer, _encoding: string, done: () => void): void {
    for (const raw of chunk.toString('utf8').split('\n')) if (raw !== '') this.lines.push({ ...(JSON.parse(raw) as Record<string, unknown>), raw });
    done();
  }
}

// A module with one deliberately slow action, to see the slow-request warning.
const slowModule = {
  name: 'slowtest',
  guest: {
    wait: { params: Type.Object({}), handler: () => new Promise((resolve) => setTimeout(() => resolve(true), 320)) },
  },
} as unknown as ModuleApi;

async function createPlanAndKey(t: TestApp): Promise<{ key: string; email: string; token: string }> {
  const prepared = await t.admin('product/prepare', { title: 'API plan', type: 'apikey' });
  await t.admin('product/update', { id: prepared.result, status: 'enabled', config: {} });
  const client = await t.createClient();
  const order = await t.admin('order/create', { client_id: client.id, product_id: prepared.result, activate: true });
  const got = await t.admin('serviceapikey/get', { order_id: order.result });
  return { key: got.result.api_key as string, email: client.email, token: client.token };
}

describe('logging', () => {
  let services: Services;
  let app: FastifyInstance;
  const log = new Lines();
  const access = new Lines();

  beforeAll(async () => {
    services = await bootstrap(
      loadConfig({ DATABASE_URL: 'sqlite::memory:', TOLLGATE_SECRET: randomBytes(32).toString('hex'), DATA_DIR: '/tmp/tollgate-test', SCHEDULER: 'off', SLOW_REQUEST_MS: '300' }),
    );
    app = buildApp(services, { logger: { level: 'info', stream: log }, modules: [...modules, slowModule], accessLogStream: access });
    await app.ready();
  });
  afterAll(async () => {
    await app.close();
    await services.close();
  });

  it('writes no line per successful request at the default level', async () => {
    const before = log.lines.length;
    for (let i = 0; i < 5; i++) expect((await app.inject({ method: 'POST', url: '/api/guest/system/version', payload: {} })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/api/guest/nope/nope' })).statusCode).toBe(404);
    expect(log.lines.slice(before)).toEqual([]);
    // ACCESS_LOG is off here: nothing went to the access stream either.
    expect(access.lines).toEqual([]);
  });

  it('logs a request slower than SLOW_REQUEST_MS as a warning, by its route and without its query string', async () => {
    const before = log.lines.length;
    expect((await app.inject({ method: 'GET', url: '/api/guest/slowtest/wait?secret=hunter2' })).statusCode).toBe(200);
    const lines = log.lines.slice(before);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 40, msg: 'slow request', route: '/api/guest/slowtest/wait', status: 200, reqId: expect.any(String) });
    expect(lines[0]!.ms).toBeGreaterThanOrEqual(300);
    expect(lines[0]!.raw).not.toContain('hunter2');
  });
});

describe('ACCESS_LOG=true', () => {
  let t: TestApp;
  let app: FastifyInstance;
  const access = new Lines();

  beforeAll(async () => {
    t = await createTestApp({ ACCESS_LOG: 'true' });
    app = buildApp(t.services, { accessLogStream: access });
    await app.ready();
  });
  afterAll(async () => {
    await app.close();
    await t.close();
  });

  it('writes one line per request, with no key, token, cookie, query string or body in it', async () => {
    const { key, token, email } = await createPlanAndKey(t);
    const cookie = `tollgate_session=${randomBytes(12).toString('hex')}; csrf_token=${randomBytes(12).toString('hex')}`;
    const basic = `Basic ${Buffer.from(`client:${token}`).toString('base64')}`;
    const requests = [
      { method: 'POST' as const, url: '/api/guest/serviceapikey/check', payload: { key } },
      { method: 'GET' as const, url: `/api/guest/serviceapikey/check?key=${encodeURIComponent(key)}` },
      { method: 'GET' as const, url: `/api/client/profile/get?token=${token}`, headers: { authorization: basic, cookie } },
      { method: 'POST' as const, url: '/api/guest/client/login', payload: { email, password: 'Wrong-Passw0rd-xyz' } },
      { method: 'GET' as const, url: `/api/guest/serviceapikey/${key}` },
    ];
    for (const request of requests) await app.inject(request);
    await app.close();
    expect(access.lines).toHaveLength(requests.length);
    expect(access.lines.map((line) => [line.method, line.route, line.status])).toEqual([
      ['POST', '/api/guest/serviceapikey/check', 200],
      ['GET', '/api/guest/serviceapikey/check', 200],
      ['GET', '/api/client/profile/get', 200],
      ['POST', '/api/guest/client/login', 401],
      ['GET', '-', 404],
    ]);
    const all = access.lines.map((line) => line.raw).join('\n');
    for (const secret of [key, token, email, 'Wrong-Passw0rd', cookie.split('=')[1]!.split(';')[0]!, basic.slice(6), '?']) {
      expect(all).not.toContain(secret);
    }
  });
});

describe('/metrics', () => {
  let t: TestApp;
  const metricsToken = randomBytes(16).toString('hex');

  beforeAll(async () => {
    t = await createTestApp({ METRICS_TOKEN: metricsToken });
  });
  afterAll(async () => {
    await t.close();
  });

  it('answers 401 without the Bearer token or with a wrong one', async () => {
    for (const authorization of [undefined, `Bearer ${metricsToken}x`, `Bearer ${randomBytes(16).toString('hex')}`, `Basic ${metricsToken}`, metricsToken]) {
      const reply = await t.app.inject({ method: 'GET', url: '/metrics', ...(authorization !== undefined && { headers: { authorization } }) });
      expect(reply.statusCode).toBe(401);
      expect(reply.json()).toMatchObject({ result: null, error: { code: 201 } });
      expect(reply.body).not.toContain('tollgate_');
    }
  });

  it('reports requests by action and status, check reasons, the key cache and the flush lag; never a secret or address', async () => {
    const { key, token, email } = await createPlanAndKey(t);
    for (let i = 0; i < 3; i++) expect((await t.call('/api/guest/serviceapikey/check', { key }, { ip: '203.0.113.77' })).result).toBe(true);
    expect((await t.call('/api/guest/serviceapikey/check', { key: 'AAAAAAAA-BBBBBBBB-CCCCCCCC-DDDDDDDD' }, { ip: '203.0.113.77' })).result).toBe(false);
    await t.services.apikeys.flushUsage();
    const reply = await t.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${metricsToken}` }, remoteAddress: '203.0.113.78' });
    expect(reply.statusCode).toBe(200);
    expect(reply.headers['content-type']).toContain('text/plain');
    const text = reply.body;
    expect(text).toMatch(/tollgate_http_request_duration_seconds_count\{action="\/api\/guest\/serviceapikey\/check",status="200"\} 4/);
    expect(text).toMatch(/tollgate_apikey_checks_total\{reason="VALID"\} 3/);
    expect(text).toMatch(/tollgate_apikey_checks_total\{reason="NOT_FOUND"\} 1/);
    expect(text).toMatch(/tollgate_apikey_cache_size \d+\n/);
    expect(text).toMatch(/tollgate_apikey_cache_hit_ratio (0|1|0\.\d+)\n/);
    expect(text).toMatch(/tollgate_usage_flush_lag_seconds 0(\.\d+)?\n/);
    // The counters' batches exist where they are shared (Redis here; the cluster primary with WORKERS).
    if ((process.env.TEST_REDIS_URL ?? '') !== '') expect(text).toMatch(/tollgate_rate_counter_syncs_total\{result="given_up"\} 0\n/);
    for (const secret of [key, token, email, metricsToken, '203.0.113', '127.0.0.1', 'AAAAAAAA']) expect(text).not.toContain(secret);
  });

  it('does not exist when METRICS_TOKEN is unset', async () => {
    const plain = await createTestApp();
    try {
      const reply = await plain.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${metricsToken}` } });
      expect(reply.statusCode).toBe(404);
    } finally {
      await plain.close();
    }
  });
});
