// Browser sessions and CSRF (CONTRACT §3): login cookies and results, session id regeneration, the four places a
// CSRF token may travel, the csrf_token cookie check, logout, expiry and role separation.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ADMIN_EMAIL, ADMIN_PASSWORD, Browser, createTestApp, type Reply, type TestApp } from '../helpers/app.ts';
import { expectError } from '../helpers/assertions.ts';

function setCookies(reply: Reply): string[] {
  const header = reply.headers['set-cookie'];
  return Array.isArray(header) ? header : typeof header === 'string' ? [header] : [];
}

function cookieLine(reply: Reply, name: string): string {
  const line = setCookies(reply).find((entry) => entry.startsWith(`${name}=`));
  expect(line, `Set-Cookie ${name}`).toBeDefined();
  return line!;
}

describe('sessions and CSRF', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  describe('login', () => {
    it('guest/client/login sets both cookies and returns {id, email, name, role}', async () => {
      const client = await t.createClient({ first_name: 'Ada', last_name: 'Lovelace' });
      const reply = await t.call('/api/guest/client/login', { email: client.email, password: client.password });
      expect(reply.status).toBe(200);
      expect(reply.body).toEqual({ result: { id: client.id, email: client.email, name: 'Ada Lovelace', role: 'client' }, error: null });

      const session = cookieLine(reply, 'tollgate_session');
      expect(session).toMatch(/; HttpOnly/i);
      expect(session).toMatch(/; SameSite=Lax/i);
      expect(session).toMatch(/; Path=\//i);
      expect(session).not.toMatch(/; Secure/i);
      const csrf = cookieLine(reply, 'csrf_token');
      expect(csrf).not.toMatch(/HttpOnly/i);
      expect(csrf).toMatch(/; SameSite=Lax/i);
      expect(reply.cookies.tollgate_session!.length).toBeGreaterThanOrEqual(32);
      expect(reply.cookies.csrf_token!.length).toBeGreaterThanOrEqual(32);
      expect(reply.cookies.csrf_token).not.toBe(reply.cookies.tollgate_session);
    });

    it('guest/staff/login sets both cookies and returns role admin', async () => {
      const reply = await t.call('/api/guest/staff/login', { email: ADMIN_EMAIL, password: ADMIN_PASSWORD });
      expect(reply.status).toBe(200);
      expect(reply.body).toEqual({ result: { id: 1, email: ADMIN_EMAIL, name: 'Administrator', role: 'admin' }, error: null });
      expect(cookieLine(reply, 'tollgate_session')).toMatch(/HttpOnly/i);
      expect(cookieLine(reply, 'csrf_token')).not.toMatch(/HttpOnly/i);
    });

    it('login regenerates the session id; the old one stops working', async () => {
      const client = await t.createClient();
      const browser = await t.login('client', client.email, client.password);
      const first = { ...browser.cookies };
      await t.login('client', client.email, client.password, browser);
      expect(browser.cookies.tollgate_session).not.toBe(first.tollgate_session);
      expect(browser.cookies.csrf_token).not.toBe(first.csrf_token);
      expect((await t.call('/api/client/profile/get', {}, { browser, csrf: true })).status).toBe(200);

      const old = new Browser();
      old.cookies = first;
      expectError(await t.call('/api/client/profile/get', {}, { browser: old, csrf: true }), 201, 401);
    });

    it('the session cookie is Secure when the request came over HTTPS (behind a trusted proxy)', async () => {
      const proxied = await createTestApp({ TRUST_PROXY: 'true' });
      try {
        const reply = await proxied.call('/api/guest/staff/login', { email: ADMIN_EMAIL, password: ADMIN_PASSWORD }, { headers: { 'x-forwarded-proto': 'https' } });
        expect(reply.status).toBe(200);
        expect(cookieLine(reply, 'tollgate_session')).toMatch(/; Secure/i);
        expect(cookieLine(reply, 'csrf_token')).toMatch(/; Secure/i);
        expect(reply.headers['strict-transport-security']).toBeDefined();
      } finally {
        await proxied.close();
      }
    });
  });

  describe('CSRF token', () => {
    let client: Awaited<ReturnType<TestApp['createClient']>>;
    let browser: Browser;

    beforeAll(async () => {
      client = await t.createClient();
      browser = await t.login('client', client.email, client.password);
    });

    it('missing, wrong, or from another session → 403', async () => {
      expectError(await t.call('/api/client/profile/get', {}, { browser }), 403, 403);
      expectError(await t.call('/api/client/profile/get', {}, { browser, headers: { 'x-csrf-token': 'wrong' } }), 403, 403);
      expectError(await t.call('/api/client/profile/get', { CSRFToken: 'wrong' }, { browser }), 403, 403);

      const other = await t.createClient();
      const otherBrowser = await t.login('client', other.email, other.password);
      // The other session's token, without any csrf_token cookie, so only the session comparison can refuse it.
      const sessionOnly = new Browser();
      sessionOnly.cookies = { tollgate_session: browser.cookies.tollgate_session! };
      expectError(await t.call('/api/client/profile/get', {}, { browser: sessionOnly, headers: { 'x-csrf-token': otherBrowser.csrfToken } }), 403, 403);
      expectError(await t.call('/api/client/profile/get', { CSRFToken: otherBrowser.csrfToken }, { browser: sessionOnly }), 403, 403);
    });

    it('accepted from the JSON body CSRFToken', async () => {
      const reply = await t.call('/api/client/profile/get', { CSRFToken: browser.csrfToken }, { browser });
      expect(reply.status).toBe(200);
      expect(reply.result.id).toBe(client.id);
    });

    it('accepted from a urlencoded form field CSRFToken', async () => {
      const reply = await t.call('/api/client/profile/get', {}, {
        browser,
        raw: { body: `CSRFToken=${encodeURIComponent(browser.csrfToken)}`, contentType: 'application/x-www-form-urlencoded' },
      });
      expect(reply.status).toBe(200);
      expect(reply.result.id).toBe(client.id);
    });

    it('accepted from the query parameter CSRFToken (GET and POST)', async () => {
      const byGet = await t.call('/api/client/profile/get', { CSRFToken: browser.csrfToken }, { browser, method: 'GET' });
      expect(byGet.status).toBe(200);
      const byPost = await t.call(`/api/client/profile/get?CSRFToken=${encodeURIComponent(browser.csrfToken)}`, {}, { browser });
      expect(byPost.status).toBe(200);
    });

    it('accepted from the X-CSRF-Token header', async () => {
      const reply = await t.call('/api/client/profile/get', {}, { browser, csrf: true });
      expect(reply.status).toBe(200);
      expect(reply.result.id).toBe(client.id);
    });

    it('applies to GET too', async () => {
      expectError(await t.call('/api/client/profile/get', {}, { browser, method: 'GET' }), 403, 403);
      expect((await t.call('/api/client/profile/get', {}, { browser, method: 'GET', csrf: true })).status).toBe(200);
    });

    it('a csrf_token cookie that differs from the sent token → 403', async () => {
      const mismatched = new Browser();
      mismatched.cookies = { tollgate_session: browser.cookies.tollgate_session!, csrf_token: 'something-else' };
      expectError(await t.call('/api/client/profile/get', {}, { browser: mismatched, headers: { 'x-csrf-token': browser.csrfToken } }), 403, 403);
      // Without the cookie, the right token alone passes.
      const sessionOnly = new Browser();
      sessionOnly.cookies = { tollgate_session: browser.cookies.tollgate_session! };
      expect((await t.call('/api/client/profile/get', {}, { browser: sessionOnly, headers: { 'x-csrf-token': browser.csrfToken } })).status).toBe(200);
    });

    it('a refused CSRF token changes nothing', async () => {
      expectError(await t.call('/api/client/profile/update', { first_name: 'Mallory' }, { browser }), 403, 403);
      expect((await t.admin('client/get', { id: client.id })).result.first_name).toBe('Test');
    });

    it('API token calls need no CSRF token', async () => {
      const reply = await t.call('/api/client/profile/update', { city: 'Basel' }, { basic: ['client', client.token] });
      expect(reply.body).toEqual({ result: true, error: null });
      expect((await t.admin('client/get', { id: client.id })).result.city).toBe('Basel');
    });

    it('guest calls need no CSRF token even with a session cookie', async () => {
      expect((await t.call('/api/guest/system/version', {}, { browser })).status).toBe(200);
    });

    it('admin sessions need the token too', async () => {
      const staff = await t.login('staff', ADMIN_EMAIL, ADMIN_PASSWORD);
      expectError(await t.call('/api/admin/profile/get', {}, { browser: staff }), 403, 403);
      expect((await t.call('/api/admin/profile/get', {}, { browser: staff, csrf: true })).status).toBe(200);
    });
  });

  describe('roles', () => {
    it('an admin session on a client path → 201, a client session on an admin path → 201', async () => {
      const staff = await t.login('staff', ADMIN_EMAIL, ADMIN_PASSWORD);
      expectError(await t.call('/api/client/profile/get', {}, { browser: staff, csrf: true }), 201, 401);
      const client = await t.createClient();
      const browser = await t.login('client', client.email, client.password);
      expectError(await t.call('/api/admin/client/get_list', {}, { browser, csrf: true }), 201, 401);
    });

    it('a client login in an admin browser replaces the admin session', async () => {
      const browser = await t.login('staff', ADMIN_EMAIL, ADMIN_PASSWORD);
      const adminCookie = browser.cookies.tollgate_session!;
      const client = await t.createClient();
      await t.login('client', client.email, client.password, browser);
      expect((await t.call('/api/client/profile/get', {}, { browser, csrf: true })).status).toBe(200);
      const old = new Browser();
      old.cookies = { tollgate_session: adminCookie };
      expectError(await t.call('/api/admin/profile/get', {}, { browser: old, csrf: true }), 201, 401);
    });

    it('a garbage session cookie → 201', async () => {
      const browser = new Browser();
      browser.cookies = { tollgate_session: 'garbage', csrf_token: 'garbage' };
      expectError(await t.call('/api/client/profile/get', {}, { browser, csrf: true }), 201, 401);
      browser.cookies = { tollgate_session: 'x'.repeat(4000) };
      expectError(await t.call('/api/client/profile/get', {}, { browser }), 201, 401);
    });
  });

  describe('logout', () => {
    it('client/profile/logout ends the session and clears both cookies', async () => {
      const client = await t.createClient();
      const browser = await t.login('client', client.email, client.password);
      const before = { ...browser.cookies };
      const reply = await t.call('/api/client/profile/logout', {}, { browser, csrf: true });
      expect(reply.body).toEqual({ result: true, error: null });
      expect(cookieLine(reply, 'tollgate_session')).toMatch(/Max-Age=0/i);
      expect(cookieLine(reply, 'csrf_token')).toMatch(/Max-Age=0/i);
      expect(browser.cookies).toEqual({});

      const replay = new Browser();
      replay.cookies = before;
      expectError(await t.call('/api/client/profile/get', {}, { browser: replay, csrf: true }), 201, 401);
      // The API token still works after a logout.
      expect((await t.call('/api/client/profile/get', {}, { basic: ['client', client.token] })).status).toBe(200);
    });

    it('admin/profile/logout ends the session and clears both cookies', async () => {
      const browser = await t.login('staff', ADMIN_EMAIL, ADMIN_PASSWORD);
      const before = { ...browser.cookies };
      const reply = await t.call('/api/admin/profile/logout', {}, { browser, csrf: true });
      expect(reply.body).toEqual({ result: true, error: null });
      expect(cookieLine(reply, 'tollgate_session')).toMatch(/Max-Age=0/i);
      expect(cookieLine(reply, 'csrf_token')).toMatch(/Max-Age=0/i);
      const replay = new Browser();
      replay.cookies = before;
      expectError(await t.call('/api/admin/profile/get', {}, { browser: replay, csrf: true }), 201, 401);
    });

    it('logout without the CSRF token is refused and the session survives', async () => {
      const client = await t.createClient();
      const browser = await t.login('client', client.email, client.password);
      expectError(await t.call('/api/client/profile/logout', {}, { browser }), 403, 403);
      expect((await t.call('/api/client/profile/get', {}, { browser, csrf: true })).status).toBe(200);
    });
  });

  describe('expiry', () => {
    it('an expired session row → 201 and the row is removed', async () => {
      const client = await t.createClient();
      const browser = await t.login('client', client.email, client.password);
      const idHash = t.services.secrets.hash(browser.cookies.tollgate_session!);
      await t.services.db.updateTable('sessions').set({ expires_at: '2000-01-01T00:00:00Z' }).where('id_hash', '=', idHash).execute();
      expectError(await t.call('/api/client/profile/get', {}, { browser, csrf: true }), 201, 401);
      const row = await t.services.db.selectFrom('sessions').select('id_hash').where('id_hash', '=', idHash).executeTakeFirst();
      expect(row).toBeUndefined();
    });
  });

  describe('SESSION_TTL_SECONDS', () => {
    let short: TestApp;
    beforeAll(async () => {
      short = await createTestApp({ SESSION_TTL_SECONDS: '2' });
    });
    afterAll(async () => {
      await short.close();
    });
    afterEach(() => {
      vi.useRealTimers();
    });

    it('a session expires after the TTL of inactivity', async () => {
      const client = await short.createClient();
      const browser = await short.login('client', client.email, client.password);
      vi.useFakeTimers({ toFake: ['Date'] });
      vi.setSystemTime(Date.now() + 1000);
      expect((await short.call('/api/client/profile/get', {}, { browser, csrf: true })).status).toBe(200);
      vi.setSystemTime(Date.now() + 3500);
      expectError(await short.call('/api/client/profile/get', {}, { browser, csrf: true }), 201, 401);
    });

    it('activity keeps a session alive beyond the TTL', async () => {
      const client = await short.createClient();
      const browser = await short.login('client', client.email, client.password);
      vi.useFakeTimers({ toFake: ['Date'] });
      // Eight calls 0.7 s apart: 5.6 s in all, each gap well inside the 2 s TTL.
      for (let i = 0; i < 8; i++) {
        vi.setSystemTime(Date.now() + 700);
        const reply = await short.call('/api/client/profile/get', {}, { browser, csrf: true });
        expect(reply.status, `call ${i}`).toBe(200);
      }
      vi.setSystemTime(Date.now() + 3000);
      expectError(await short.call('/api/client/profile/get', {}, { browser, csrf: true }), 201, 401);
    });
  });
});
