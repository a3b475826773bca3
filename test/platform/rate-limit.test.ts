// Rate limits (CONTRACT §4): the default LOGIN limit, overrides from the environment, the whitelist, failed
// authentication, per-account limits, sign-up, X-Forwarded-For behind TRUST_PROXY, and counters shared in Redis.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_EMAIL, ADMIN_PASSWORD, createTestApp, type Reply, type TestApp } from '../helpers/app.ts';
import { expectError } from '../helpers/assertions.ts';

function expectLimited(reply: Reply, limit: number, windowSeconds: number): void {
  expectError(reply, 429, 429);
  const retryAfter = Number(reply.headers['retry-after']);
  expect(Number.isInteger(retryAfter)).toBe(true);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(windowSeconds);
  expect(reply.headers['ratelimit-limit']).toBe(String(limit));
  expect(reply.headers['ratelimit-remaining']).toBe('0');
  expect(Number(reply.headers['ratelimit-reset'])).toBeGreaterThanOrEqual(1);
  expect(Number(reply.headers['ratelimit-reset'])).toBeLessThanOrEqual(windowSeconds);
}

function expectHeaders(reply: Reply, limit: number, remaining: number): void {
  expect(reply.headers['ratelimit-limit']).toBe(String(limit));
  expect(reply.headers['ratelimit-remaining']).toBe(String(remaining));
  expect(Number(reply.headers['ratelimit-reset'])).toBeGreaterThanOrEqual(1);
}

describe('rate limits with the default policies', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_ENABLED: 'true' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('the 11th login for one e-mail from one IP within the hour → 429 with Retry-After and RateLimit-* headers', async () => {
    const client = await t.createClient();
    const ip = '10.0.0.11';
    for (let i = 1; i <= 10; i++) {
      const reply = await t.call('/api/guest/client/login', { email: client.email, password: client.password }, { ip });
      expect(reply.status, `login ${i}`).toBe(200);
      expectHeaders(reply, 10, 10 - i);
      expect(Number(reply.headers['ratelimit-reset'])).toBeLessThanOrEqual(3600);
    }
    expectLimited(await t.call('/api/guest/client/login', { email: client.email, password: client.password }, { ip }), 10, 3600);
    // LOGIN counts per (address, e-mail): the same e-mail in another case is the same subject; another account behind
    // the same address, or the same account from another address, is unaffected.
    expectLimited(await t.call('/api/guest/client/login', { email: client.email.toUpperCase(), password: client.password }, { ip }), 10, 3600);
    expect((await t.call('/api/guest/staff/login', { email: ADMIN_EMAIL, password: ADMIN_PASSWORD }, { ip })).status).toBe(200);
    expect((await t.call('/api/guest/client/login', { email: client.email, password: client.password }, { ip: '10.0.0.12' })).status).toBe(200);
  });

  it('guest calls carry the API_GUEST headers', async () => {
    const reply = await t.call('/api/guest/system/version', {}, { ip: '10.0.0.13' });
    expect(reply.status).toBe(200);
    expectHeaders(reply, 600, 599);
  });

  it('authenticated calls carry the API_AUTHENTICATED headers', async () => {
    const client = await t.createClient();
    const reply = await t.call('/api/client/profile/get', {}, { basic: ['client', client.token], ip: '10.0.0.14' });
    expect(reply.status).toBe(200);
    expectHeaders(reply, 3000, 2999);
  });
});

describe('rate limits with overrides', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({
      RATE_LIMIT_ENABLED: 'true',
      // 127.0.0.1 is where the helpers' setup calls come from.
      RATE_LIMIT_WHITELIST: '127.0.0.1, 10.200.0.0/16',
      RATE_LIMIT_LOGIN: '3/60',
      RATE_LIMIT_API_AUTH_FAILED: '4/300',
      RATE_LIMIT_API_AUTHENTICATED: '4/3600',
      RATE_LIMIT_SIGNUP: '2/3600',
      RATE_LIMIT_API_GUEST: '5/60',
    });
  });
  afterAll(async () => {
    await t.close();
  });

  it('RATE_LIMIT_LOGIN=3/60: the 4th login → 429', async () => {
    const client = await t.createClient();
    const ip = '10.1.0.1';
    for (let i = 1; i <= 3; i++) {
      const reply = await t.call('/api/guest/client/login', { email: client.email, password: client.password }, { ip });
      expect(reply.status).toBe(200);
      expectHeaders(reply, 3, 3 - i);
    }
    expectLimited(await t.call('/api/guest/client/login', { email: client.email, password: client.password }, { ip }), 3, 60);
  });

  it('whitelisted addresses are never limited', async () => {
    const client = await t.createClient();
    for (const ip of ['10.200.3.4', '::ffff:10.200.9.9', '127.0.0.1']) {
      for (let i = 0; i < 8; i++) {
        const reply = await t.call('/api/guest/client/login', { email: client.email, password: client.password }, { ip });
        expect(reply.status, `${ip} login ${i}`).toBe(200);
      }
      for (let i = 0; i < 8; i++) {
        expect((await t.call('/api/guest/system/version', {}, { ip })).status).toBe(200);
        expect((await t.call('/api/client/profile/get', {}, { ip, basic: ['client', client.token] })).status).toBe(200);
        expectError(await t.call('/api/client/profile/get', {}, { ip, basic: ['client', 'wrong'] }), 204, 401);
      }
    }
  });

  it('API_AUTH_FAILED: after 4 failed Basic or login attempts failures and logins are refused; a valid token still works', async () => {
    const ip = '10.1.0.2';
    expectError(await t.call('/api/admin/profile/get', {}, { ip, basic: ['admin', 'wrong-token'] }), 205, 401);
    expectError(await t.call('/api/admin/profile/get', {}, { ip, basic: ['admin', ''] }), 202, 401);
    expectError(await t.call('/api/admin/profile/get', {}, { ip, basic: ['client', 'x'] }), 203, 401);
    expectError(await t.call('/api/guest/staff/login', { email: ADMIN_EMAIL, password: 'Wrong-Passw0rd' }, { ip }), 206, 401);
    expectLimited(await t.call('/api/admin/profile/get', {}, { ip, basic: ['admin', 'wrong-token'] }), 4, 300);
    expect((await t.call('/api/admin/profile/get', {}, { ip, basic: ['admin', t.adminToken] })).status).toBe(200);
    expectLimited(await t.call('/api/guest/staff/login', { email: ADMIN_EMAIL, password: ADMIN_PASSWORD }, { ip }), 4, 300);
    // Another address is not affected.
    expect((await t.call('/api/admin/profile/get', {}, { ip: '10.1.0.3', basic: ['admin', t.adminToken] })).status).toBe(200);
  });

  it('API_AUTH_FAILED counts failed logins: the 5th attempt is refused before the password is checked', async () => {
    const client = await t.createClient();
    const ip = '10.1.0.4';
    for (let i = 0; i < 2; i++) {
      expectError(await t.call('/api/guest/client/login', { email: client.email, password: 'Wrong-Passw0rd' }, { ip }), 206, 401);
    }
    for (let i = 0; i < 2; i++) {
      expectError(await t.call('/api/client/profile/get', {}, { ip, basic: ['client', 'wrong'] }), 204, 401);
    }
    expectLimited(await t.call('/api/guest/client/login', { email: client.email, password: client.password }, { ip }), 4, 300);
  });

  it('API_AUTHENTICATED counts per account, across addresses and sessions', async () => {
    const a = await t.createClient();
    const b = await t.createClient();
    for (let i = 1; i <= 3; i++) {
      const reply = await t.call('/api/client/profile/get', {}, { ip: '10.2.0.1', basic: ['client', a.token] });
      expect(reply.status).toBe(200);
      expectHeaders(reply, 4, 4 - i);
    }
    // The 4th call comes through a browser session from another address: same account.
    const browser = await t.login('client', a.email, a.password);
    expect((await t.call('/api/client/profile/get', {}, { ip: '10.2.0.2', browser, csrf: true })).status).toBe(200);
    expectLimited(await t.call('/api/client/profile/get', {}, { ip: '10.2.0.3', basic: ['client', a.token] }), 4, 3600);
    expectLimited(await t.call('/api/client/profile/get', {}, { ip: '10.2.0.2', browser, csrf: true }), 4, 3600);
    // Another account from the same address is not affected.
    expect((await t.call('/api/client/profile/get', {}, { ip: '10.2.0.1', basic: ['client', b.token] })).status).toBe(200);
  });

  it('SIGNUP=2/3600: the 3rd sign-up from one IP → 429 and creates nothing', async () => {
    const ip = '10.3.0.1';
    const tag = randomBytes(4).toString('hex');
    for (let i = 1; i <= 2; i++) {
      const reply = await t.call(
        '/api/guest/client/create',
        { email: `signup-${tag}-${i}@example.com`, first_name: 'Sign', password: 'Signup-Passw0rd', password_confirm: 'Signup-Passw0rd' },
        { ip },
      );
      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      expectHeaders(reply, 2, 2 - i);
    }
    const refused = await t.call(
      '/api/guest/client/create',
      { email: `signup-${tag}-3@example.com`, first_name: 'Sign', password: 'Signup-Passw0rd', password_confirm: 'Signup-Passw0rd' },
      { ip },
    );
    expectLimited(refused, 2, 3600);
    expect((await t.admin('client/get_list', { email: `signup-${tag}-3@` })).result.total).toBe(0);
    expect((await t.admin('client/get_list', { email: `signup-${tag}-` })).result.total).toBe(2);
  });

  it('API_GUEST=5/60 for guest calls, login calls included (LOGIN counts per address and e-mail on top)', async () => {
    const ip = '10.4.0.1';
    for (let i = 1; i <= 5; i++) expect((await t.call('/api/guest/system/periods', {}, { ip })).status).toBe(200);
    expectLimited(await t.call('/api/guest/system/version', {}, { ip }), 5, 60);
    expectLimited(await t.call('/api/guest/staff/login', { email: ADMIN_EMAIL, password: ADMIN_PASSWORD }, { ip }), 5, 60);
  });

  it('without TRUST_PROXY, X-Forwarded-For is ignored', async () => {
    const ip = '10.5.0.1';
    for (let i = 1; i <= 5; i++) {
      const reply = await t.call('/api/guest/system/version', {}, { ip, headers: { 'x-forwarded-for': `192.0.2.${i}` } });
      expect(reply.status).toBe(200);
    }
    expectLimited(await t.call('/api/guest/system/version', {}, { ip, headers: { 'x-forwarded-for': '192.0.2.99' } }), 5, 60);
    // A forged whitelisted address does not exempt either.
    expectLimited(await t.call('/api/guest/system/version', {}, { ip, headers: { 'x-forwarded-for': '10.200.0.1' } }), 5, 60);
  });
});

describe('rate limits behind a trusted proxy', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_ENABLED: 'true', TRUST_PROXY: '10.6.0.0/16', RATE_LIMIT_API_GUEST: '2/60', RATE_LIMIT_WHITELIST: '198.51.100.7' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('X-Forwarded-For from the trusted proxy names the client', async () => {
    const proxy = '10.6.0.1';
    for (let i = 1; i <= 6; i++) {
      const reply = await t.call('/api/guest/system/version', {}, { ip: proxy, headers: { 'x-forwarded-for': `192.0.2.${i}` } });
      expect(reply.status, `client ${i}`).toBe(200);
    }
    const same = { ip: proxy, headers: { 'x-forwarded-for': '192.0.2.50' } };
    expect((await t.call('/api/guest/system/version', {}, same)).status).toBe(200);
    expect((await t.call('/api/guest/system/version', {}, same)).status).toBe(200);
    expectLimited(await t.call('/api/guest/system/version', {}, same), 2, 60);
    // A whitelisted client behind the proxy is exempt.
    for (let i = 0; i < 4; i++) {
      expect((await t.call('/api/guest/system/version', {}, { ip: proxy, headers: { 'x-forwarded-for': '198.51.100.7' } })).status).toBe(200);
    }
  });

  it('X-Forwarded-For from an untrusted address is ignored', async () => {
    const ip = '10.7.0.1';
    expect((await t.call('/api/guest/system/version', {}, { ip, headers: { 'x-forwarded-for': '192.0.2.101' } })).status).toBe(200);
    expect((await t.call('/api/guest/system/version', {}, { ip, headers: { 'x-forwarded-for': '192.0.2.102' } })).status).toBe(200);
    expectLimited(await t.call('/api/guest/system/version', {}, { ip, headers: { 'x-forwarded-for': '198.51.100.7' } }), 2, 60);
  });
});

describe.runIf(process.env.TEST_REDIS_URL)('rate limits shared through Redis', () => {
  let first: TestApp;
  let second: TestApp;
  beforeAll(async () => {
    const env = { RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_API_GUEST: '4/60', RATE_LIMIT_REDIS_PREFIX: `test:shared:${randomBytes(6).toString('hex')}:` };
    first = await createTestApp(env);
    second = await createTestApp(env);
  });
  afterAll(async () => {
    await first.close();
    await second.close();
  });

  it('two processes with the same Redis and prefix share one limit', async () => {
    const ip = '10.8.0.1';
    expect((await first.call('/api/guest/system/version', {}, { ip })).status).toBe(200);
    expect((await second.call('/api/guest/system/version', {}, { ip })).status).toBe(200);
    expect((await first.call('/api/guest/system/version', {}, { ip })).status).toBe(200);
    const fourth = await second.call('/api/guest/system/version', {}, { ip });
    expect(fourth.status).toBe(200);
    expectHeaders(fourth, 4, 0);
    expectLimited(await first.call('/api/guest/system/version', {}, { ip }), 4, 60);
    expectLimited(await second.call('/api/guest/system/version', {}, { ip }), 4, 60);
    expect((await second.call('/api/guest/system/version', {}, { ip: '10.8.0.2' })).status).toBe(200);
  });
});
