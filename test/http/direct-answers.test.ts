// The key check and get_info answered directly (src/http/direct.ts) must be the gateway's answers to the byte. Two
// servers share one Tollgate (services): one answers directly, one has direct answers off. Each request of a corpus
// goes to both, one after the other, and status, headers (but Date) and body must match. A Fastify onRequest hook on
// the direct server proves which road each request took: the plain JSON POSTs never reach Fastify, everything else
// does. Over real sockets, because inject() always takes Fastify's road.
import { Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type BuildOptions } from '../../src/app.ts';
import { createDirectAnswers, directRoutesOf } from '../../src/http/direct.ts';
import { modules } from '../../src/modules/index.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { buyKey, createPlan } from '../helpers/apikey.ts';

interface Sent {
  method?: string;
  path: string;
  headers?: Record<string, string>;
  /** A string body sent with its Content-Length; an array is sent chunked, piece by piece. */
  body?: string | string[];
}

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

// Keep-alive, as the operator's app calls: an answer that closes the connection says so (connection: close).
const agent = new Agent({ keepAlive: true, maxSockets: 1 });

function send(base: string, sent: Sent): Promise<Answer> {
  const url = new URL(sent.path, base);
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...sent.headers };
    if (typeof sent.body === 'string') headers['content-length'] = String(Buffer.byteLength(sent.body));
    const request = httpRequest(url, { method: sent.method ?? 'POST', headers, agent }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body }));
    });
    request.on('error', reject);
    if (Array.isArray(sent.body)) for (const piece of sent.body) request.write(piece);
    else if (sent.body !== undefined) request.write(sent.body);
    request.end();
  });
}

/** Headers to compare: Date differs by the second, RateLimit-Remaining by the call the other road counted. */
function comparable(answer: Answer): Record<string, unknown> {
  const { date: _date, 'ratelimit-remaining': remaining, ...rest } = answer.headers;
  return { ...rest, 'ratelimit-remaining': remaining === undefined ? 'absent' : 'present' };
}

/** The body to compare: get_info's usage count differs by the one call the other road counted. */
function comparableBody(answer: Answer): unknown {
  const parsed = JSON.parse(answer.body) as { result?: { usage?: { used?: unknown } } | null };
  if (parsed.result?.usage?.used !== undefined) parsed.result.usage.used = 'counted';
  return parsed;
}

const json = { 'content-type': 'application/json' };

interface Roads {
  t: TestApp;
  directBase: string;
  gatewayBase: string;
  /** Paths (with query) of the requests that reached Fastify on the direct server. */
  seenByFastify: string[];
  close(): Promise<void>;
}

async function twoRoads(env: Record<string, string>, options: BuildOptions = {}): Promise<Roads> {
  const t = await createTestApp({ RATE_LIMIT_ENABLED: 'true', ...env });
  const seenByFastify: string[] = [];
  const direct: FastifyInstance = buildApp(t.services, options);
  direct.addHook('onRequest', (request, _reply, done) => {
    seenByFastify.push(request.url);
    done();
  });
  const gateway: FastifyInstance = buildApp(t.services, { ...options, directAnswers: false });
  const directBase = await direct.listen({ port: 0, host: '127.0.0.1' });
  const gatewayBase = await gateway.listen({ port: 0, host: '127.0.0.1' });
  return {
    t,
    directBase,
    gatewayBase,
    seenByFastify,
    async close() {
      await direct.close();
      await gateway.close();
      await t.close();
    },
  };
}

/** Sends `sent` to both servers and expects the same answer; returns the direct one and whether Fastify saw it. */
async function sameBothWays(roads: Roads, sent: Sent): Promise<{ answer: Answer; viaFastify: boolean }> {
  const seenBefore = roads.seenByFastify.length;
  const direct = await send(roads.directBase, sent);
  const viaFastify = roads.seenByFastify.length > seenBefore;
  const gateway = await send(roads.gatewayBase, sent);
  expect({ status: direct.status, body: comparableBody(direct), headers: comparable(direct) }, JSON.stringify(sent)).toEqual({
    status: gateway.status,
    body: comparableBody(gateway),
    headers: comparable(gateway),
  });
  return { answer: direct, viaFastify };
}

afterAll(() => agent.destroy());

describe('direct answers: the gateway answer, without Fastify', () => {
  let roads: Roads;
  let key: string;
  let limitedKey: string;
  let offKey: string;
  let offOrder: number;

  beforeAll(async () => {
    roads = await twoRoads({ RATE_LIMIT_API_KEY_CHECK: '100000/60', RATE_LIMIT_API_KEY_CHECK_FAILED: '100000/60' });
    const { t } = roads;
    const client = await t.createClient();
    key = (await buyKey(t, await createPlan(t, {}), client.id)).key;
    limitedKey = (await buyKey(t, await createPlan(t, { rate_limit: { limit: 1000, window_seconds: 60 } }), client.id)).key;
    const off = await buyKey(t, await createPlan(t, {}), client.id);
    offKey = off.key;
    offOrder = off.orderId;
    expect((await t.admin('serviceapikey/update', { order_id: offOrder, valid: false })).result).toBe(true);
  });
  afterAll(async () => {
    await roads?.close();
  });

  const check = '/api/guest/serviceapikey/check';
  const info = '/api/guest/serviceapikey/get_info';

  it('answers the plain JSON POSTs of check and get_info directly, as the gateway does', async () => {
    const direct: Sent[] = [
      { path: check, headers: json, body: JSON.stringify({ key }) },
      { path: info, headers: json, body: JSON.stringify({ key }) },
      { path: check, headers: json, body: JSON.stringify({ key: limitedKey }) },
      { path: info, headers: json, body: JSON.stringify({ key: limitedKey }) },
      { path: check, headers: json, body: JSON.stringify({ key: offKey }) },
      { path: info, headers: json, body: JSON.stringify({ key: offKey }) },
      // Unknown and malformed keys: false, counted under API_KEY_CHECK_FAILED.
      { path: check, headers: json, body: JSON.stringify({ key: `${key.slice(0, -4)}zzzz` }) },
      { path: check, headers: json, body: JSON.stringify({ key: 'x' }) },
      { path: check, headers: json, body: JSON.stringify({ key: 'ключ-ü-€' }) },
      { path: info, headers: json, body: JSON.stringify({ key: 'nope' }) },
      // Parameters the action's schema refuses: 422 naming "key".
      { path: check, headers: json, body: JSON.stringify({ key: 'k'.repeat(300) }) },
      { path: check, headers: json, body: JSON.stringify({ key: 5 }) },
      { path: check, headers: json, body: JSON.stringify({ key: '' }) },
      { path: check, headers: json, body: '{}' },
      { path: check, headers: json, body: '' },
      { path: check, headers: json, body: JSON.stringify({ key, extra: [1, 2] }) },
      // Bodies that are not a JSON object: 400, and the connection is closed.
      { path: check, headers: json, body: '{"key":' },
      { path: check, headers: json, body: '[1]' },
      { path: check, headers: json, body: 'null' },
      { path: check, headers: json, body: `${'{"a":'.repeat(40)}1${'}'.repeat(40)}` },
      // Content types Fastify reads the same way.
      { path: check, headers: { 'content-type': 'application/json; charset=utf-8' }, body: JSON.stringify({ key }) },
      { path: check, headers: { 'content-type': 'APPLICATION/JSON' }, body: JSON.stringify({ key }) },
    ];
    for (const sent of direct) {
      const { viaFastify } = await sameBothWays(roads, sent);
      expect(viaFastify, JSON.stringify(sent)).toBe(false);
    }
  });

  it('leaves every other shape of request to Fastify, with the same answers', async () => {
    const viaFastify: Sent[] = [
      { method: 'GET', path: `${check}?key=${encodeURIComponent(key)}` },
      { method: 'GET', path: check },
      { path: `${check}?key=${encodeURIComponent(key)}`, headers: json, body: '' },
      { path: `${check}?x=1`, headers: json, body: JSON.stringify({ key }) },
      { path: check, headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `key=${encodeURIComponent(key)}` },
      { path: check, headers: { 'content-type': 'text/plain' }, body: JSON.stringify({ key }) },
      { path: check, headers: { 'content-type': 'application/json; charset=latin1' }, body: JSON.stringify({ key }) },
      { path: check, body: JSON.stringify({ key }) },
      // Chunked: no declared length.
      { path: check, headers: json, body: ['{"key":', JSON.stringify(key), '}'] },
      // Larger than a direct answer reads (4096 bytes): Fastify and BODY_LIMIT_BYTES decide.
      { path: check, headers: json, body: JSON.stringify({ key, pad: 'p'.repeat(5000) }) },
      { method: 'PUT', path: check, headers: json, body: JSON.stringify({ key }) },
      { path: `${check}/`, headers: json, body: JSON.stringify({ key }) },
      { path: '/api/guest/serviceapikey/Check', headers: json, body: JSON.stringify({ key }) },
    ];
    for (const sent of viaFastify) {
      const result = await sameBothWays(roads, sent);
      expect(result.viaFastify, JSON.stringify(sent)).toBe(true);
    }
  });

  it('counts every direct answer once: usage and the address limit move by one a call, on either road', async () => {
    const before = await sameBothWays(roads, { path: info, headers: json, body: JSON.stringify({ key }) });
    const used = (answer: Answer) => (JSON.parse(answer.body) as { result: { usage: { used: number } } }).result.usage.used;
    const remaining = (answer: Answer) => Number(answer.headers['ratelimit-remaining']);
    const direct = await send(roads.directBase, { path: check, headers: json, body: JSON.stringify({ key }) });
    const gateway = await send(roads.gatewayBase, { path: check, headers: json, body: JSON.stringify({ key }) });
    expect(remaining(gateway)).toBe(remaining(direct) - 1);
    const after = await send(roads.directBase, { path: info, headers: json, body: JSON.stringify({ key }) });
    // before's own two calls (direct, then gateway), the two checks, and this get_info itself.
    expect(used(after)).toBe(used(before.answer) + 4);
  });

  it('a client that goes away mid-body gets no answer and the server keeps serving', async () => {
    const url = new URL(roads.directBase);
    await new Promise<void>((resolve) => {
      const socket = connect(Number(url.port), url.hostname, () => {
        socket.write(`POST ${check} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 60\r\n\r\n{"key":"abc`);
        setTimeout(() => socket.destroy(), 50);
      });
      socket.on('close', () => resolve());
      socket.on('error', () => undefined);
    });
    const after = await send(roads.directBase, { path: check, headers: json, body: JSON.stringify({ key }) });
    expect(JSON.parse(after.body)).toEqual({ result: true, error: null });
  });

  it('answers directly the guest actions the registry declares direct, through their own declarations', () => {
    const routes = directRoutesOf(modules);
    expect(routes.map((route) => route.url)).toEqual(['/api/guest/serviceapikey/check', '/api/guest/serviceapikey/get_info']);
    // The same declaration the gateway's route is built from: one handler, one schema, one policy.
    const guest = modules.find((module) => module.name === 'serviceapikey')?.guest;
    expect(routes.map((route) => route.def)).toEqual([guest?.check, guest?.get_info]);
  });

  it('a closing server leaves its requests to Fastify (which answers 503 and closes the connection)', () => {
    const answer = createDirectAnswers({
      services: roads.t.services,
      limiter: roads.t.services.limiter,
      bodyLimitBytes: roads.t.services.config.bodyLimitBytes,
      observer: { answered: () => undefined },
      routes: directRoutesOf(modules),
      trust: false,
      httpsPossible: false,
      log: () => roads.t.app.log,
      closing: () => true,
    });
    const request = { method: 'POST', url: check, headers: { 'content-type': 'application/json', 'content-length': '10' } };
    expect(answer(request as never, {} as never)).toBe(false);
  });
});

describe('direct answers: the address limit refusing', () => {
  let roads: Roads;
  let key: string;

  beforeAll(async () => {
    roads = await twoRoads({ RATE_LIMIT_API_KEY_CHECK: '4/60' });
    const client = await roads.t.createClient();
    key = (await buyKey(roads.t, await createPlan(roads.t, {}), client.id)).key;
  });
  afterAll(async () => {
    await roads?.close();
  });

  it('refuses with the same 429, Retry-After and RateLimit-* on both roads', async () => {
    const sent: Sent = { path: '/api/guest/serviceapikey/check', headers: json, body: JSON.stringify({ key }) };
    const first = await sameBothWays(roads, sent);
    expect(first.answer.status).toBe(200);
    await sameBothWays(roads, sent);
    const refused = await sameBothWays(roads, sent);
    expect(refused.answer.status).toBe(429);
    expect(refused.viaFastify).toBe(false);
    expect(refused.answer.headers['retry-after']).toMatch(/^\d+$/);
    expect(JSON.parse(refused.answer.body).error.code).toBe(429);
  });
});

describe('direct answers behind a trusted proxy', () => {
  let roads: Roads;
  let key: string;

  beforeAll(async () => {
    roads = await twoRoads({ TRUST_PROXY: '127.0.0.1', RATE_LIMIT_API_KEY_CHECK: '100/60' });
    const client = await roads.t.createClient();
    key = (await buyKey(roads.t, await createPlan(roads.t, {}), client.id)).key;
  });
  afterAll(async () => {
    await roads?.close();
  });

  it('takes the address and protocol from X-Forwarded-* as Fastify does: HSTS over HTTPS, limits per end user', async () => {
    const body = JSON.stringify({ key });
    const https = await sameBothWays(roads, { path: '/api/guest/serviceapikey/check', headers: { ...json, 'x-forwarded-for': '203.0.113.7', 'x-forwarded-proto': 'https' }, body });
    expect(https.viaFastify).toBe(false);
    expect(https.answer.headers['strict-transport-security']).toBe('max-age=31536000');
    const plain = await sameBothWays(roads, { path: '/api/guest/serviceapikey/check', headers: { ...json, 'x-forwarded-for': '198.51.100.9', 'x-forwarded-proto': 'http' }, body });
    expect(plain.answer.headers['strict-transport-security']).toBeUndefined();
    // Each end user has a limit of their own: the second address starts where the first one started.
    expect(Number(plain.answer.headers['ratelimit-remaining'])).toBe(Number(https.answer.headers['ratelimit-remaining']));
    const chain = await sameBothWays(roads, { path: '/api/guest/serviceapikey/check', headers: { ...json, 'x-forwarded-for': '192.0.2.1, 203.0.113.7', 'x-forwarded-proto': 'http, https' }, body });
    expect(chain.answer.headers['strict-transport-security']).toBe('max-age=31536000');
  });
});

describe('direct answers: the failed-lookup budget refusing', () => {
  let roads: Roads;

  beforeAll(async () => {
    roads = await twoRoads({ TRUST_PROXY: '127.0.0.1', RATE_LIMIT_API_KEY_CHECK: '100/60', RATE_LIMIT_API_KEY_CHECK_FAILED: '2/60' });
  });
  afterAll(async () => {
    await roads?.close();
  });

  // The check is handed no reply: its own refusal is an error that carries the budget's RateLimit-* headers, and
  // each road writes an error's headers. One end user per road, so each spends a budget of its own.
  it("refuses the third unknown key with the budget's RateLimit-* and Retry-After, the same on both roads", async () => {
    const spend = async (base: string, address: string): Promise<Answer> => {
      const sent: Sent = { path: '/api/guest/serviceapikey/check', headers: { ...json, 'x-forwarded-for': address }, body: JSON.stringify({ key: '0123456789abcdef0123456789abcdef' }) };
      for (let i = 0; i < 2; i++) expect(JSON.parse((await send(base, sent)).body)).toEqual({ result: false, error: null });
      return send(base, sent);
    };
    const direct = await spend(roads.directBase, '203.0.113.20');
    const gateway = await spend(roads.gatewayBase, '203.0.113.21');
    for (const refused of [direct, gateway]) {
      expect(refused.status).toBe(429);
      expect(refused.headers['ratelimit-limit']).toBe('2');
      expect(refused.headers['ratelimit-remaining']).toBe('0');
      expect(refused.headers['retry-after']).toBe(refused.headers['ratelimit-reset']);
    }
    expect(roads.seenByFastify).toEqual([]);
    expect({ status: direct.status, body: comparableBody(direct), headers: comparable(direct) }).toEqual({ status: gateway.status, body: comparableBody(gateway), headers: comparable(gateway) });
  });
});

class Lines extends Writable {
  readonly lines: Array<Record<string, unknown>> = [];
  override _write(chunk: Buffer, _encoding: string, done: () => void): void {
    for (const raw of chunk.toString('utf8').split('\n')) if (raw !== '') this.lines.push(JSON.parse(raw) as Record<string, unknown>);
    done();
  }
}

describe('direct answers in the logs and metrics', () => {
  let roads: Roads;
  const log = new Lines();
  const access = new Lines();

  beforeAll(async () => {
    roads = await twoRoads(
      { ACCESS_LOG: 'true', SLOW_REQUEST_MS: '5', METRICS_TOKEN: 'metrics-token-for-the-test' },
      { logger: { level: 'warn', stream: log }, accessLogStream: access },
    );
  });
  afterAll(async () => {
    await roads?.close();
  });

  it('writes the access line, the slow-request warning and the metrics a gateway answer gets', async () => {
    // Checks made slow (both roads call the same service), so each answer earns a slow-request warning.
    const { apikeys } = roads.t.services;
    const check = apikeys.check.bind(apikeys);
    apikeys.check = (...args) => new Promise((resolve) => setTimeout(() => resolve(check(...args)), 20));
    const sent: Sent = { path: '/api/guest/serviceapikey/check', headers: json, body: JSON.stringify({ key: 'not-a-key-at-all' }) };
    const { viaFastify } = await sameBothWays(roads, sent);
    expect(viaFastify).toBe(false);
    const route = '/api/guest/serviceapikey/check';
    // One line each from the direct and the gateway server: same fields, the route template, never the key.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const lines = access.lines.filter((line) => line.route === route);
    expect(lines).toHaveLength(2);
    for (const line of lines) expect(line).toMatchObject({ method: 'POST', route, status: 200, ip: '127.0.0.1' });
    const slow = log.lines.filter((line) => line.msg === 'slow request' && line.route === route);
    expect(slow).toHaveLength(2);
    expect(slow.some((line) => String(line.reqId).startsWith('direct-'))).toBe(true);
    expect(JSON.stringify([...access.lines, ...log.lines])).not.toContain('not-a-key-at-all');
    const metrics = await fetch(`${roads.directBase}/metrics`, { headers: { authorization: 'Bearer metrics-token-for-the-test' } });
    const text = await metrics.text();
    const counted = text.split('\n').find((line) => line.startsWith('tollgate_http_request_duration_seconds_count') && line.includes(route) && line.includes('status="200"'));
    expect(counted, text).toMatch(/ 2$/);
  });
});

describe('DIRECT_ANSWERS=false', () => {
  it('sends the plain JSON POSTs of the check through Fastify like every other request', async () => {
    const roads = await twoRoads({ DIRECT_ANSWERS: 'false' }, {});
    try {
      const client = await roads.t.createClient();
      const { key } = await buyKey(roads.t, await createPlan(roads.t, {}), client.id);
      // twoRoads' "direct" server follows the configuration here; it is the one Fastify's hook watches.
      const { answer, viaFastify } = await sameBothWays(roads, { path: '/api/guest/serviceapikey/check', headers: json, body: JSON.stringify({ key }) });
      expect(JSON.parse(answer.body)).toEqual({ result: true, error: null });
      expect(viaFastify).toBe(true);
    } finally {
      await roads.close();
    }
  });
});
