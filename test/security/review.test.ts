// Independent security and contract review: secrets at rest and in logs, literal LIKE search, envelopes for requests
// the router or Node's HTTP parser refuse, the CSRF token order, rate-limit coverage (CONTRACT §2–§4, §7).
import { connect } from 'node:net';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD, createTestApp, type TestApp } from '../helpers/app.ts';
import { expectError } from '../helpers/assertions.ts';

async function issueKey(t: TestApp, clientId: number): Promise<{ orderId: number; key: string }> {
  const prepared = await t.admin('product/prepare', { title: `Review plan ${clientId}`, type: 'apikey' });
  const productId = prepared.result as number;
  expect((await t.admin('product/update', { id: productId, status: 'enabled' })).result).toBe(true);
  const created = await t.admin('order/create', { client_id: clientId, product_id: productId, activate: true });
  expect(created.status).toBe(200);
  const orderId = created.result as number;
  const got = await t.admin('serviceapikey/get', { order_id: orderId });
  return { orderId, key: got.result.api_key as string };
}

/** Sends raw bytes to a listening server and returns everything it answers before closing. */
function rawRequest(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(bytes));
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      answer += chunk;
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(answer));
  });
}

function envelopeOfRaw(answer: string): { status: number; body: unknown } {
  const [head = '', body = ''] = answer.split('\r\n\r\n');
  return { status: Number(head.split(' ')[1]), body: JSON.parse(body) };
}

describe('review: secrets', () => {
  let t: TestApp;
  let logged = '';
  let loggingApp: FastifyInstance;

  beforeAll(async () => {
    t = await createTestApp();
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        logged += chunk.toString('utf8');
        done();
      },
    });
    // A second app over the same services, logging everything (trace) into `logged`.
    // No line per request is written by default (CONTRACT §13): switch on both per-request writers, the access log and
    // the slow-request warning (every request counts as slow at 0 ms), into the same stream.
    const services = { ...t.services, config: { ...t.services.config, accessLog: true, slowRequestMs: 0 } };
    loggingApp = buildApp(services, { logger: { level: 'trace', stream }, accessLogStream: stream });
    await loggingApp.ready();
  });
  afterAll(async () => {
    await loggingApp.close();
    await t.close();
  });

  it('no table holds an API token, API key, password, session id or CSRF token in plain text', async () => {
    const client = await t.createClient();
    const { key } = await issueKey(t, client.id);
    const browser = await t.login('client', client.email, client.password);
    const staffBrowser = await t.login('staff', ADMIN_EMAIL, ADMIN_PASSWORD);
    const guestCart = await t.call('/api/guest/cart/get', {});
    expect(guestCart.status).toBe(200);
    const secrets = [
      client.token,
      client.password,
      key,
      key.replaceAll('-', ''),
      t.adminToken,
      ADMIN_PASSWORD,
      browser.cookies.tollgate_session!,
      browser.cookies.csrf_token!,
      staffBrowser.cookies.tollgate_session!,
      staffBrowser.cookies.csrf_token!,
      guestCart.cookies.tollgate_session!,
    ];
    for (const secret of secrets) expect(secret.length).toBeGreaterThanOrEqual(14);

    const tables = await t.services.db.introspection.getTables();
    expect(tables.map((table) => table.name)).toEqual(expect.arrayContaining(['clients', 'staff', 'sessions', 'api_keys']));
    for (const table of tables) {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- every table, whatever its columns
      const rows = await (t.services.db as any).selectFrom(table.name).selectAll().execute();
      const text = JSON.stringify(rows);
      for (const secret of secrets) expect(text.includes(secret), `${table.name} holds a secret in plain text`).toBe(false);
    }
    // Passwords are argon2id hashes.
    const stored = await t.services.db.selectFrom('clients').select('password_hash').where('id', '=', client.id).executeTakeFirstOrThrow();
    expect(stored.password_hash).toMatch(/^\$argon2id\$/);
  });

  it('no log line carries a key, token, password or CSRF token, even sent in the query string', async () => {
    const client = await t.createClient();
    const { key } = await issueKey(t, client.id);
    const inject = (url: string, headers: Record<string, string> = {}, payload?: string) =>
      loggingApp.inject({ method: payload === undefined ? 'GET' : 'POST', url, headers, ...(payload !== undefined && { payload }) });
    const basic = `Basic ${Buffer.from(`client:${client.token}`).toString('base64')}`;

    expect((await inject(`/api/guest/serviceapikey/check?key=${key}`)).json()).toEqual({ result: true, error: null });
    expect((await inject(`/api/guest/serviceapikey/get_info?key=${key}`)).statusCode).toBe(200);
    expect((await inject('/api/client/profile/get', { authorization: basic })).statusCode).toBe(200);
    expect((await inject(`/api/client/profile/get?CSRFToken=${client.token}`, { authorization: basic })).statusCode).toBe(200);
    const login = await inject('/api/guest/client/login', { 'content-type': 'application/json' }, JSON.stringify({ email: client.email, password: client.password }));
    expect(login.statusCode).toBe(200);
    const csrf = login.cookies.find((cookie) => cookie.name === 'csrf_token')!.value;
    const session = login.cookies.find((cookie) => cookie.name === 'tollgate_session')!.value;
    const withSession = await inject(`/api/client/profile/get?CSRFToken=${csrf}`, { cookie: `tollgate_session=${session}; csrf_token=${csrf}` });
    expect(withSession.statusCode).toBe(200);
    // A failed login and a failed Basic call are logged too, without the password or token tried.
    const wrongLogin = JSON.stringify({ email: client.email, password: `Wrong-${client.password}` });
    expect((await inject('/api/guest/client/login', { 'content-type': 'application/json' }, wrongLogin)).statusCode).toBe(401);
    // Credentials over GET are refused before anything reads them (CONTRACT §10 "POST only").
    expect((await inject(`/api/guest/client/login?email=${client.email}&password=Wrong-${client.password}`)).statusCode).toBe(405);
    expect((await inject('/api/admin/client/get_list', { authorization: `Basic ${Buffer.from('admin:Guessed-Token-123').toString('base64')}` })).statusCode).toBe(401);

    expect(logged).toContain('/api/guest/serviceapikey/check');
    for (const secret of [key, client.token, client.password, csrf, session, 'Guessed-Token-123', basic.slice(6)]) {
      expect(logged.includes(secret), `a log line holds ${secret.slice(0, 4)}…`).toBe(false);
    }
  });
});

describe('review: literal search (LIKE wildcards typed by staff)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
    await t.createClient({ first_name: 'Plain', last_name: 'Person', company: 'Acme' });
    await t.createClient({ first_name: 'Fifty', last_name: '50% Off', company: 'Shop_Co' });
    await t.createClient({ first_name: 'Back', last_name: 'Slash\\Name', company: 'AcmeXCo' });
  });
  afterAll(async () => {
    await t.close();
  });

  const names = async (params: Record<string, unknown>): Promise<string[]> => {
    const reply = await t.admin('client/get_list', params);
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    return (reply.result.list as Array<{ first_name: string }>).map((client) => client.first_name).toSorted();
  };

  it('client search: % and _ match only themselves', async () => {
    // One or two characters match the start of a field (docs/lists-and-search.md): nothing starts with % or _.
    expect(await names({ search: '%' })).toEqual([]);
    expect(await names({ search: '_' })).toEqual([]);
    expect(await names({ search: '5%' })).toEqual([]);
    expect(await names({ search: 's_' })).toEqual([]);
    expect(await names({ search: 'sh' })).toEqual(['Fifty']);
    expect(await names({ search: '50%' })).toEqual(['Fifty']);
    expect(await names({ search: 'shop_co' })).toEqual(['Fifty']);
    expect(await names({ search: 'h\\n' })).toEqual(['Back']);
    expect(await names({ search: 'acme' })).toEqual(['Back', 'Plain']);
  });

  it('client name, company and email filters: % and _ match only themselves', async () => {
    expect(await names({ name: '%' })).toEqual([]);
    expect(await names({ name: '50%' })).toEqual(['Fifty']);
    expect(await names({ name: '0% o' })).toEqual(['Fifty']);
    expect(await names({ company: '_' })).toEqual([]);
    expect(await names({ company: 'p_c' })).toEqual(['Fifty']);
    expect(await names({ company: 'acme_co' })).toEqual([]);
    expect(await names({ email: '%' })).toEqual([]);
    expect(await names({ email: '_' })).toEqual([]);
    expect((await names({ email: '@example.com' })).length).toBe(3);
  });

  it('staff search: % and _ match only themselves', async () => {
    const created = await t.admin('staff/create', { email: 'under_score@example.com', password: 'Staff-Passw0rd', name: '100% Staff', admin_group_id: 2 });
    expect(created.status).toBe(200);
    const staff = async (search: string): Promise<string[]> =>
      ((await t.admin('staff/get_list', { search })).result.list as Array<{ email: string }>).map((member) => member.email);
    expect(await staff('%')).toEqual(['under_score@example.com']);
    expect(await staff('_')).toEqual(['under_score@example.com']);
    expect(await staff('100%')).toEqual(['under_score@example.com']);
    expect((await staff('admin')).length).toBe(1);
  });
});

describe('review: envelopes for requests refused before any route runs', () => {
  let t: TestApp;
  let port: number;
  beforeAll(async () => {
    t = await createTestApp();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as { port: number }).port;
  });
  afterAll(async () => {
    await t.close();
  });

  it('a path with invalid percent-encoding → 879 in the envelope, with the common headers', async () => {
    for (const url of ['/api/guest/system/vers%ZZion', '/api/guest/%C0%AF/version', '/%ZZ']) {
      const response = await t.app.inject({ method: 'GET', url });
      expect(response.statusCode, url).toBe(404);
      expect(response.json()).toEqual({ result: null, error: { message: expect.any(String), code: 879 } });
      expect(response.headers['cache-control']).toBe('no-store');
    }
  });

  it('invalid percent-encoding in the query is not an error', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/api/guest/serviceapikey/check?key=%ZZ' });
    expect(response.json()).toEqual({ result: false, error: null });
  });

  it('a URL or headers too large for the HTTP parser → 400 in the envelope', async () => {
    const answer = await rawRequest(port, `GET /api/guest/system/version?x=${'a'.repeat(70_000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    const { status, body } = envelopeOfRaw(answer);
    expect(status).toBe(400);
    expect(body).toEqual({ result: null, error: { message: expect.any(String), code: 400 } });
  });

  it('a malformed request line or Content-Length → 400 in the envelope', async () => {
    for (const bytes of ['GARBAGE\r\n\r\n', 'POST /api/guest/system/version HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n']) {
      const { status, body } = envelopeOfRaw(await rawRequest(port, bytes));
      expect(status).toBe(400);
      expect(body).toEqual({ result: null, error: { message: expect.any(String), code: 400 } });
    }
  });

  it('odd JSON bodies: __proto__, duplicate keys, charset, deep nesting — never a 500', async () => {
    const post = (payload: string, contentType = 'application/json') =>
      t.app.inject({ method: 'POST', url: '/api/guest/serviceapikey/check', headers: { 'content-type': contentType }, payload });
    expect((await post('{"__proto__": {"key": "ABC"}}')).statusCode).toBe(422);
    expect(({} as Record<string, unknown>).key).toBeUndefined();
    expect((await post('{"key": "A", "key": 5}')).statusCode).toBe(422);
    expect((await post('{"key": "ABCDEF12"}', 'application/json; charset=utf-8')).json()).toEqual({ result: false, error: null });
    expect((await post(`${'['.repeat(50_000)}${']'.repeat(50_000)}`)).statusCode).toBe(400);
    // Nesting past 32 levels is refused before parsing (issue 8), with the 400 envelope.
    const deep = await post(`${'{"a":'.repeat(20_000)}1${'}'.repeat(20_000)}`);
    expect(deep.statusCode).toBe(400);
    expect(deep.json()).toEqual({ result: null, error: { message: expect.stringMatching(/deeper than 32/), code: 400 } });
    expect((await post('')).statusCode).toBe(422);
  });

  it('odd Authorization headers answer 401 codes, never a 500', async () => {
    const get = (authorization: string) => t.call('/api/admin/client/get_list', {}, { method: 'GET', headers: { authorization } });
    expectError(await get('Basic %%%%'), 201, 401);
    expectError(await get(`Basic ${Buffer.from('admin').toString('base64')}`), 202, 401);
    expectError(await get('Basic'), 201, 401);
    expectError(await get(`Basic ${Buffer.from('admin:\u00ff\u00fe').toString('base64')}`), 205, 401);
    expectError(await get(`Basic ${Buffer.from('someone:secret').toString('base64')}`), 201, 401);
  });
});

describe('review: CSRF token sources are read in the contract order', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('the first source present decides: body, then form field, then query, then header', async () => {
    const client = await t.createClient();
    const browser = await t.login('client', client.email, client.password);
    const good = browser.csrfToken;
    const headers = { 'x-csrf-token': good };
    // A wrong body token is not rescued by a right header or query token.
    expectError(await t.call('/api/client/profile/get?CSRFToken=' + good, { CSRFToken: 'wrong' }, { browser, headers }), 403, 403);
    expectError(
      await t.call('/api/client/profile/get', {}, { browser, headers, raw: { body: 'CSRFToken=wrong', contentType: 'application/x-www-form-urlencoded' } }),
      403,
      403,
    );
    // A wrong query token is not rescued by a right header.
    expectError(await t.call('/api/client/profile/get', { CSRFToken: 'wrong' }, { browser, headers, method: 'GET' }), 403, 403);
    // A right body token wins over a wrong query token and a wrong header.
    const ok = await t.call('/api/client/profile/get?CSRFToken=wrong', { CSRFToken: good }, { browser, headers: { 'x-csrf-token': 'wrong' } });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
  });
});

describe('review: rate-limit coverage', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_API_GUEST: '4/60', RATE_LIMIT_API_AUTHENTICATED: '3/60' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('guest/cart/*, guest/invoice/*, guest/product/* and guest/system/* share the API_GUEST budget', async () => {
    const ip = '10.9.0.1';
    const paths = ['/api/guest/cart/get', '/api/guest/invoice/gateways', '/api/guest/product/get_list', '/api/guest/system/version'];
    for (const [index, path] of paths.entries()) {
      const reply = await t.call(path, {}, { ip });
      expect(reply.status, path).toBe(200);
      expect(reply.headers['ratelimit-limit'], path).toBe('4');
      expect(reply.headers['ratelimit-remaining'], path).toBe(String(3 - index));
    }
    const limited = await t.call('/api/guest/invoice/get', { hash: 'nope' }, { ip });
    expectError(limited, 429, 429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // The key check has its own, much larger budget.
    const check = await t.call('/api/guest/serviceapikey/check', { key: 'ABCDEF12' }, { ip });
    expect(check.status).toBe(200);
    expect(check.headers['ratelimit-limit']).toBe('100000');
  });

  it('a call refused for a missing permission still counts against API_AUTHENTICATED and carries its headers', async () => {
    const group = await t.admin('staff/group_create', { name: 'Viewers', permissions: ['client.view'] });
    const created = await t.admin('staff/create', { email: 'viewer@example.com', password: 'Viewer-Passw0rd', name: 'Viewer', admin_group_id: group.result });
    expect(created.status).toBe(200);
    const token = (await t.services.staff.profile(created.result as number)).api_token;
    const basic: [string, string] = ['admin', token];
    const ip = '10.9.0.2';
    const refused = await t.call('/api/admin/order/get_list', {}, { basic, ip });
    expectError(refused, 403, 403);
    expect(refused.headers['ratelimit-limit']).toBe('3');
    expect(refused.headers['ratelimit-remaining']).toBe('2');
    expect((await t.call('/api/admin/client/get_list', {}, { basic, ip })).status).toBe(200);
    expectError(await t.call('/api/admin/order/get_list', {}, { basic, ip }), 403, 403);
    expectError(await t.call('/api/admin/client/get_list', {}, { basic, ip }), 429, 429);
  });
});
