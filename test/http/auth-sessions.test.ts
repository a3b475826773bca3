// Authentication edges that a planted bug in src/http/auth.ts would slip past (issue 8): a session whose account
// stopped being active by any path, including one that forgot to end its sessions; the failed attempt that crosses
// API_AUTH_FAILED, one at a time and all at once; the CSRF token's sources when one of them is empty; Basic header
// spellings. Runs on SQLite, and on PostgreSQL (+ Redis) when TEST_* are set.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser, createTestApp, type Reply, type TestApp } from '../helpers/app.ts';
import { expectError } from '../helpers/assertions.ts';

const STAFF_PASSWORD = 'Staff-Passw0rd';

function expectLimited(reply: Reply, limit: number): void {
  expectError(reply, 429, 429);
  expect(Number(reply.headers['retry-after'])).toBeGreaterThan(0);
  expect(reply.headers['ratelimit-limit']).toBe(String(limit));
  expect(reply.headers['ratelimit-remaining']).toBe('0');
}

describe('sessions of accounts that stopped being active', () => {
  let t: TestApp;
  let counter = 0;

  async function staffSession(): Promise<{ id: number; browser: Browser }> {
    counter += 1;
    const email = `session-staff${counter}@example.com`;
    const created = await t.admin('staff/create', { email, password: STAFF_PASSWORD, name: `Staff ${counter}`, admin_group_id: 1 });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const browser = await t.login('staff', email, STAFF_PASSWORD);
    expect((await t.call('/api/admin/profile/get', {}, { browser, csrf: true })).status).toBe(200);
    return { id: created.result as number, browser };
  }

  async function clientSession(): Promise<{ id: number; browser: Browser }> {
    const client = await t.createClient();
    const browser = await t.login('client', client.email, client.password);
    expect((await t.call('/api/client/profile/get', {}, { browser, csrf: true })).status).toBe(200);
    return { id: client.id, browser };
  }

  const staffRefused = async (browser: Browser) => expectError(await t.call('/api/admin/profile/get', {}, { browser, csrf: true }), 201, 401);
  const clientRefused = async (browser: Browser) => expectError(await t.call('/api/client/profile/get', {}, { browser, csrf: true }), 201, 401);

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  describe('through the API (the session is ended with the account)', () => {
    it('a staff member deactivated, then reactivated: the old session stays refused', async () => {
      const { id, browser } = await staffSession();
      expect((await t.admin('staff/update', { id, status: 'inactive' })).result).toBe(true);
      await staffRefused(browser);
      expect((await t.admin('staff/update', { id, status: 'active' })).result).toBe(true);
      await staffRefused(browser);
    });

    it.each(['suspended', 'canceled'])('a client %s, then reactivated: the old session stays refused', async (status) => {
      const { id, browser } = await clientSession();
      expect((await t.admin('client/update', { id, status })).result).toBe(true);
      await clientRefused(browser);
      expect((await t.admin('client/update', { id, status: 'active' })).result).toBe(true);
      await clientRefused(browser);
    });

    it('a client deleted', async () => {
      const { id, browser } = await clientSession();
      expect((await t.admin('client/delete', { id })).result).toBe(true);
      await clientRefused(browser);
      expectError(await t.admin('client/get', { id }), 404, 404);
    });
  });

  // A path that changes the account without ending its sessions (a script on the database, a future action, a
  // deactivation racing a request that already loaded its session): authentication itself must still refuse.
  describe('behind the API (the session row survives)', () => {
    it('a staff member set inactive or deleted', async () => {
      const inactive = await staffSession();
      await t.services.db.updateTable('staff').set({ status: 'inactive' }).where('id', '=', inactive.id).execute();
      await staffRefused(inactive.browser);
      await t.services.db.updateTable('staff').set({ status: 'active' }).where('id', '=', inactive.id).execute();
      expect((await t.call('/api/admin/profile/get', {}, { browser: inactive.browser, csrf: true })).status).toBe(200);

      const deleted = await staffSession();
      await t.services.db.deleteFrom('staff').where('id', '=', deleted.id).execute();
      await staffRefused(deleted.browser);
    });

    it.each(['suspended', 'canceled'] as const)('a client set %s', async (status) => {
      const { id, browser } = await clientSession();
      await t.services.db.updateTable('clients').set({ status }).where('id', '=', id).execute();
      await clientRefused(browser);
      await t.services.db.updateTable('clients').set({ status: 'active' }).where('id', '=', id).execute();
      expect((await t.call('/api/client/profile/get', {}, { browser, csrf: true })).status).toBe(200);
    });

    it('a client deleted', async () => {
      const { id, browser } = await clientSession();
      await t.services.db.deleteFrom('clients').where('id', '=', id).execute();
      await clientRefused(browser);
    });

    it('the CSRF check still comes first (403) for a valid session of an inactive account', async () => {
      const { id, browser } = await clientSession();
      await t.services.db.updateTable('clients').set({ status: 'suspended' }).where('id', '=', id).execute();
      expectError(await t.call('/api/client/profile/get', {}, { browser }), 403, 403);
    });
  });
});

describe('what authentication tells the action about the caller', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it("holds a staff member of a limited group to its group's permissions, by token and by session", async () => {
    const group = (await t.admin('staff/group_create', { name: 'Client desk', permissions: ['client.view'] })).result as number;
    const email = 'client-desk@example.com';
    const created = await t.admin('staff/create', { email, password: STAFF_PASSWORD, name: 'Desk', admin_group_id: group });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const browser = await t.login('staff', email, STAFF_PASSWORD);
    const token = (await t.call('/api/admin/profile/get', {}, { browser, csrf: true })).result.api_token as string;
    for (const options of [{ basic: ['admin', token] as [string, string] }, { browser, csrf: true }]) {
      expect((await t.call('/api/admin/client/get_list', {}, options)).status).toBe(200);
      expectError(await t.call('/api/admin/order/get_list', {}, options), 403, 403);
    }
  });

  it("a client's token call carrying a guest session cookie takes the guest cart over; a session call is the client's own cart", async () => {
    const product = (await t.admin('product/prepare', { title: 'Widget', type: 'custom' })).result as number;
    expect((await t.admin('product/update', { id: product, status: 'enabled' })).result).toBe(true);
    const client = await t.createClient();
    const guest = new Browser();
    expect((await t.call('/api/guest/cart/add_item', { id: product }, { browser: guest })).result).toBe(true);
    const viaToken = await t.call('/api/client/cart/get', {}, { basic: ['client', client.token], headers: { cookie: guest.cookieHeader() } });
    expect(viaToken.status).toBe(200);
    expect(viaToken.result.items.map((item: { product_id: number }) => item.product_id)).toEqual([product]);

    const other = await t.createClient();
    const session = await t.login('client', other.email, other.password);
    expect((await t.call('/api/client/cart/get', {}, { browser: session, csrf: true })).result.items).toEqual([]);
  });
});

describe('the CSRF token when one of its sources is empty', () => {
  let t: TestApp;
  let browser: Browser;
  let clientId: number;

  beforeAll(async () => {
    t = await createTestApp();
    const client = await t.createClient();
    clientId = client.id;
    browser = await t.login('client', client.email, client.password);
  });
  afterAll(async () => {
    await t.close();
  });

  it('an empty CSRFToken parameter next to a valid X-CSRF-Token header is accepted (the header is used)', async () => {
    const header = { 'x-csrf-token': browser.csrfToken };
    const json = await t.call('/api/client/profile/get', { CSRFToken: '' }, { browser, headers: header });
    expect(json.status).toBe(200);
    expect(json.result.id).toBe(clientId);
    const query = await t.call('/api/client/profile/get?CSRFToken=', {}, { browser, headers: header });
    expect(query.status).toBe(200);
    const form = await t.call('/api/client/profile/get', {}, { browser, headers: header, raw: { body: 'CSRFToken=', contentType: 'application/x-www-form-urlencoded' } });
    expect(form.status).toBe(200);
  });

  it('a non-string CSRFToken parameter next to a valid header: the header is used', async () => {
    const reply = await t.call('/api/client/profile/get', { CSRFToken: 12345 }, { browser, headers: { 'x-csrf-token': browser.csrfToken } });
    expect(reply.status).toBe(200);
  });

  it('an empty header next to a valid parameter is accepted; both empty is refused', async () => {
    expect((await t.call('/api/client/profile/get', { CSRFToken: browser.csrfToken }, { browser, headers: { 'x-csrf-token': '' } })).status).toBe(200);
    expectError(await t.call('/api/client/profile/get', { CSRFToken: '' }, { browser, headers: { 'x-csrf-token': '' } }), 403, 403);
  });

  it('a wrong non-empty parameter wins over a valid header and is refused', async () => {
    expectError(await t.call('/api/client/profile/get', { CSRFToken: 'not-the-token' }, { browser, headers: { 'x-csrf-token': browser.csrfToken } }), 403, 403);
  });

  it('the csrf_token cookie must agree with the token sent, whichever source it came from', async () => {
    const mismatched = new Browser();
    mismatched.cookies = { ...browser.cookies, csrf_token: 'something-else' };
    expectError(await t.call('/api/client/profile/get', { CSRFToken: '' }, { browser: mismatched, headers: { 'x-csrf-token': browser.csrfToken } }), 403, 403);
    // Without the cookie, the session's token alone decides.
    const cookieless = new Browser();
    cookieless.cookies = { tollgate_session: browser.cookies.tollgate_session! };
    expect((await t.call('/api/client/profile/get', {}, { browser: cookieless, headers: { 'x-csrf-token': browser.csrfToken } })).status).toBe(200);
  });
});

describe('Basic credentials as clients spell them', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  const basic = (value: string, scheme = 'Basic') => ({ authorization: `${scheme} ${Buffer.from(value).toString('base64')}` });

  it('accepts the scheme in any case and surrounding spaces', async () => {
    for (const scheme of ['basic', 'BASIC', 'bAsIc']) {
      expect((await t.call('/api/admin/profile/get', {}, { headers: basic(`admin:${t.adminToken}`, scheme) })).status, scheme).toBe(200);
    }
    const spaced = { authorization: `Basic   ${Buffer.from(`admin:${t.adminToken}`).toString('base64')}  ` };
    expect((await t.call('/api/admin/profile/get', {}, { headers: spaced })).status).toBe(200);
  });

  it('a password containing colons is kept whole', async () => {
    expectError(await t.call('/api/admin/profile/get', {}, { headers: basic(`admin:${t.adminToken}:extra`) }), 205, 401);
  });

  it('a user name without a colon is a user with an empty password (202)', async () => {
    expectError(await t.call('/api/admin/profile/get', {}, { headers: basic('admin') }), 202, 401);
    expectError(await t.call('/api/admin/profile/get', {}, { headers: basic('admin:') }), 202, 401);
  });

  it('another scheme, or a Basic user other than admin and client, is no credentials (201)', async () => {
    expectError(await t.call('/api/admin/profile/get', {}, { headers: { authorization: `Bearer ${t.adminToken}` } }), 201, 401);
    expectError(await t.call('/api/admin/profile/get', {}, { headers: { authorization: `Basicx ${Buffer.from(`admin:${t.adminToken}`).toString('base64')}` } }), 201, 401);
    expectError(await t.call('/api/admin/profile/get', {}, { headers: basic(`root:${t.adminToken}`) }), 201, 401);
    expectError(await t.call('/api/admin/profile/get', {}, { headers: basic(`Admin:${t.adminToken}`) }), 201, 401);
  });
});

describe('API_AUTH_FAILED: the failure that crosses the limit', () => {
  const LIMIT = 4;
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_WHITELIST: '127.0.0.1', RATE_LIMIT_API_AUTH_FAILED: `${LIMIT}/300` });
  });
  afterAll(async () => {
    await t.close();
  });

  it('answers each failure up to the limit with its own code, and the one past it with 429', async () => {
    const ip = '10.9.0.1';
    const attempts: Array<[Record<string, string>, number]> = [
      [{ authorization: `Basic ${Buffer.from('admin:wrong-token').toString('base64')}` }, 205],
      [{ authorization: `Basic ${Buffer.from('admin:').toString('base64')}` }, 202],
      [{ authorization: `Basic ${Buffer.from('client:x').toString('base64')}` }, 203],
      [{ authorization: `Basic ${Buffer.from('admin:wrong-again').toString('base64')}` }, 205],
    ];
    expect(attempts).toHaveLength(LIMIT);
    for (const [headers, code] of attempts) expectError(await t.call('/api/admin/profile/get', {}, { ip, headers }), code, 401);
    // The failure that crosses the limit.
    expectLimited(await t.call('/api/admin/profile/get', {}, { ip, basic: ['admin', 'wrong-token'] }), LIMIT);
    expectLimited(await t.call('/api/client/profile/get', {}, { ip, basic: ['client', 'wrong-token'] }), LIMIT);
    // Another address is not affected by this one's failures.
    expectError(await t.call('/api/admin/profile/get', {}, { ip: '10.9.0.2', basic: ['admin', 'wrong-token'] }), 205, 401);
  });

  it('counts failed client tokens the same way', async () => {
    const ip = '10.9.0.3';
    for (let i = 0; i < LIMIT; i++) expectError(await t.call('/api/client/profile/get', {}, { ip, basic: ['client', `wrong-${i}`] }), 204, 401);
    expectLimited(await t.call('/api/client/profile/get', {}, { ip, basic: ['client', 'wrong-more'] }), LIMIT);
  });

  it('lets exactly LIMIT of many simultaneous failures through with 401; every other one gets 429', async () => {
    const ip = '10.9.0.4';
    const replies = await Promise.all(
      Array.from({ length: 3 * LIMIT }, (_, i) => t.call('/api/admin/profile/get', {}, { ip, basic: ['admin', `wrong-${i}`] })),
    );
    const unauthorized = replies.filter((reply) => reply.status === 401);
    const limited = replies.filter((reply) => reply.status === 429);
    expect(unauthorized).toHaveLength(LIMIT);
    expect(limited).toHaveLength(2 * LIMIT);
    for (const reply of unauthorized) expectError(reply, 205, 401);
    for (const reply of limited) expectLimited(reply, LIMIT);
  });

  it('answers 429 for a failure counted past the limit after its own check passed (a concurrent failure got in between)', async () => {
    const ip = '10.9.0.6';
    for (let i = 0; i < LIMIT; i++) expectError(await t.call('/api/admin/profile/get', {}, { ip, basic: ['admin', 'wrong'] }), 205, 401);
    // The interleaving, made deterministic: this request's "is the address blocked?" check ran before another
    // request's failure was counted, so it saw the address below the limit.
    const limiter = t.services.limiter;
    const isBlocked = limiter.isBlocked.bind(limiter);
    limiter.isBlocked = () => Promise.resolve(null);
    try {
      expectLimited(await t.call('/api/admin/profile/get', {}, { ip, basic: ['admin', 'wrong'] }), LIMIT);
    } finally {
      limiter.isBlocked = isBlocked;
    }
  });

  it('never counts or limits a whitelisted address', async () => {
    for (let i = 0; i < 3 * LIMIT; i++) {
      expectError(await t.call('/api/admin/profile/get', {}, { ip: '127.0.0.1', basic: ['admin', 'wrong'] }), 205, 401);
    }
    expect((await t.call('/api/admin/profile/get', {}, { ip: '127.0.0.1', basic: ['admin', t.adminToken] })).status).toBe(200);
  });

  it('does not count successes, nor session calls refused for a missing session', async () => {
    const ip = '10.9.0.5';
    for (let i = 0; i < 3 * LIMIT; i++) {
      expect((await t.call('/api/admin/profile/get', {}, { ip, basic: ['admin', t.adminToken] })).status).toBe(200);
      expectError(await t.call('/api/admin/profile/get', {}, { ip }), 201, 401);
    }
    for (let i = 0; i < LIMIT; i++) expectError(await t.call('/api/admin/profile/get', {}, { ip, basic: ['admin', 'wrong'] }), 205, 401);
    expectLimited(await t.call('/api/admin/profile/get', {}, { ip, basic: ['admin', 'wrong'] }), LIMIT);
  });
});
