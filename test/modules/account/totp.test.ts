// Two-factor login (CONTRACT §10): TOTP set-up, enable and disable for clients and staff, the code at login (207
// without, 206 when wrong, reused, too old or a spent recovery code), the LOGIN limit, and API tokens unaffected.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { totpCode } from '../../../src/modules/account/two-factor.ts';
import { ADMIN_EMAIL, createTestApp, type Browser, type TestApp } from '../../helpers/app.ts';
import { expectError, expectInvalid } from '../../helpers/assertions.ts';

const PERIOD_MS = 30_000;

/** Waits out the last two seconds of a 30 s step, so a code computed here is judged in the same step by the server. */
async function awayFromStepEdge(): Promise<void> {
  const intoStep = Date.now() % PERIOD_MS;
  if (intoStep > PERIOD_MS - 2000) await new Promise((resolve) => setTimeout(resolve, PERIOD_MS - intoStep + 50));
}

const code = (secret: string, offset = 0): string => totpCode(secret, Date.now(), offset);
/** A six-digit code that is not `right`. */
const wrongCode = (right: string): string => String((Number(right) + 1) % 1_000_000).padStart(6, '0');

describe('two-factor login', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  /** A client with two-factor login on: its secret, recovery codes and a logged-in browser. */
  async function clientWithTotp() {
    const client = await t.createClient();
    const browser = await t.login('client', client.email, client.password);
    const setup = await t.call('/api/client/profile/totp_setup', {}, { browser, csrf: true });
    expect(setup.status).toBe(200);
    await awayFromStepEdge();
    const enabled = await t.call('/api/client/profile/totp_enable', { code: code(setup.result.secret) }, { browser, csrf: true });
    expect(enabled.status, JSON.stringify(enabled.body)).toBe(200);
    return { ...client, browser, secret: setup.result.secret as string, recovery: enabled.result.recovery_codes as string[] };
  }

  const login = (email: string, password: string, extra: Record<string, unknown> = {}, ip = '127.0.0.1') =>
    t.call('/api/guest/client/login', { email, password, ...extra }, { ip });

  describe('set-up', () => {
    it('totp_setup returns a base32 secret and an otpauth URL; totp_get says off until enabled', async () => {
      const client = await t.createClient();
      const browser = await t.login('client', client.email, client.password);
      expect((await t.call('/api/client/profile/totp_get', {}, { browser, csrf: true })).result).toEqual({ enabled: false, recovery_codes_left: 0 });
      const setup = await t.call('/api/client/profile/totp_setup', {}, { browser, csrf: true });
      expect(setup.status).toBe(200);
      expect(Object.keys(setup.result).toSorted()).toEqual(['otpauth_url', 'secret']);
      expect(setup.result.secret).toMatch(/^[A-Z2-7]{32}$/);
      const url = new URL(setup.result.otpauth_url as string);
      expect(url.protocol).toBe('otpauth:');
      expect(url.host).toBe('totp');
      expect(url.searchParams.get('secret')).toBe(setup.result.secret);
      // No company name set: the instance's host name, never "Tollgate" (issue 21; operator-brand tests cover the name).
      expect(url.searchParams.get('issuer')).toBe(new URL(t.services.config.publicUrl).hostname);
      expect(decodeURIComponent(url.pathname)).toContain(client.email);
      // Pending set-up does not change login.
      expect((await login(client.email, client.password)).status).toBe(200);
      expect((await t.call('/api/client/profile/totp_get', {}, { browser, csrf: true })).result.enabled).toBe(false);
    });

    it('the secret is stored sealed and recovery codes only as hashes', async () => {
      const client = await clientWithTotp();
      const row = await t.services.db.selectFrom('account_totp').selectAll().where('subject_type', '=', 'client').where('subject_id', '=', client.id).executeTakeFirstOrThrow();
      expect(row.secret_enc).not.toContain(client.secret);
      expect(t.services.secrets.decrypt(row.secret_enc)).toBe(client.secret);
      const codes = await t.services.db.selectFrom('account_recovery_codes').selectAll().where('subject_id', '=', client.id).where('subject_type', '=', 'client').execute();
      expect(codes).toHaveLength(10);
      for (const stored of codes) for (const plain of client.recovery) expect(stored.code_hash).not.toContain(plain.replace('-', ''));
    });

    it('totp_enable returns ten distinct recovery codes; set-up or enable again while on → 409', async () => {
      const client = await clientWithTotp();
      expect(client.recovery).toHaveLength(10);
      expect(new Set(client.recovery).size).toBe(10);
      for (const recovery of client.recovery) expect(recovery).toMatch(/^[a-z2-9]{5}-[a-z2-9]{5}$/);
      expect((await t.call('/api/client/profile/totp_get', {}, { browser: client.browser, csrf: true })).result).toEqual({ enabled: true, recovery_codes_left: 10 });
      expectError(await t.call('/api/client/profile/totp_setup', {}, { browser: client.browser, csrf: true }), 409);
      expectError(await t.call('/api/client/profile/totp_enable', { code: code(client.secret, 1) }, { browser: client.browser, csrf: true }), 409);
    });

    it('totp_enable: without set-up → 409; a wrong, missing or malformed code → 422', async () => {
      const client = await t.createClient();
      const browser = await t.login('client', client.email, client.password);
      expectError(await t.call('/api/client/profile/totp_enable', { code: '123456' }, { browser, csrf: true }), 409);
      const setup = await t.call('/api/client/profile/totp_setup', {}, { browser, csrf: true });
      await awayFromStepEdge();
      const right = code(setup.result.secret);
      const wrong = wrongCode(right);
      expectInvalid(await t.call('/api/client/profile/totp_enable', { code: wrong }, { browser, csrf: true }), 'code');
      expectInvalid(await t.call('/api/client/profile/totp_enable', { code: code(setup.result.secret, -2) }, { browser, csrf: true }), 'code');
      expectInvalid(await t.call('/api/client/profile/totp_enable', {}, { browser, csrf: true }), 'code');
      expectInvalid(await t.call('/api/client/profile/totp_enable', { code: 'abcdef' }, { browser, csrf: true }), 'code');
      expectInvalid(await t.call('/api/client/profile/totp_enable', { code: 123456 }, { browser, csrf: true }), 'code');
      expect((await t.call('/api/client/profile/totp_enable', { code: right }, { browser, csrf: true })).status).toBe(200);
    });

    it('concurrent set-ups of one account: each answers 200 or 409, and the stored secret is one that was returned', async () => {
      const client = await t.createClient();
      const browser = await t.login('client', client.email, client.password);
      const replies = await Promise.all(Array.from({ length: 5 }, () => t.call('/api/client/profile/totp_setup', {}, { browser, csrf: true })));
      for (const reply of replies) if (reply.status !== 200) expectError(reply, 409);
      const returned = replies.filter((reply) => reply.status === 200).map((reply) => reply.result.secret as string);
      expect(returned.length).toBeGreaterThan(0);
      const row = await t.services.db.selectFrom('account_totp').selectAll().where('subject_type', '=', 'client').where('subject_id', '=', client.id).executeTakeFirstOrThrow();
      expect(returned).toContain(t.services.secrets.decrypt(row.secret_enc));
    });

    it('deleting a client removes its second factor and recovery codes', async () => {
      const client = await clientWithTotp();
      expect((await t.admin('client/delete', { id: client.id })).status).toBe(200);
      expect(await t.services.db.selectFrom('account_totp').select('subject_id').where('subject_type', '=', 'client').where('subject_id', '=', client.id).execute()).toEqual([]);
      expect(await t.services.db.selectFrom('account_recovery_codes').select('id').where('subject_type', '=', 'client').where('subject_id', '=', client.id).execute()).toEqual([]);
    });

    it('TOTP actions take POST only, need a client session or token, and refuse the admin token', async () => {
      const client = await t.createClient();
      for (const action of ['totp_setup', 'totp_enable', 'totp_disable']) {
        expectError(await t.call(`/api/client/profile/${action}`, {}, { method: 'GET', basic: ['client', client.token] }), 405);
        expectError(await t.call(`/api/admin/profile/${action}`, {}, { method: 'GET', basic: ['admin', t.adminToken] }), 405);
        expectError(await t.call(`/api/client/profile/${action}`, {}), 201, 401);
        expectError(await t.call(`/api/client/profile/${action}`, {}, { basic: ['admin', t.adminToken] }), 203, 401);
      }
      // A session without its CSRF token → 403.
      const browser = await t.login('client', client.email, client.password);
      expectError(await t.call('/api/client/profile/totp_setup', {}, { browser }), 403);
    });
  });

  describe('client login', () => {
    it('without a code → 207; a wrong code → 206; the right code → 200 and a session', async () => {
      const client = await clientWithTotp();
      const missing = await login(client.email, client.password);
      expectError(missing, 207, 401);
      expect(missing.body.error!.message).toBe('Two-factor code required');
      expect(missing.cookies.tollgate_session).toBeUndefined();
      expectError(await login(client.email, client.password, { code: '' }), 207, 401);
      // A wrong password still answers 206, code or not: 207 only ever follows the right password.
      expectError(await login(client.email, `${client.password}x`), 206, 401);
      const wrong = wrongCode(code(client.secret, 1));
      expectError(await login(client.email, client.password, { code: wrong }), 206, 401);
      expectError(await login(client.email, client.password, { code: 'not-a-code' }), 206, 401);
      expectInvalid(await login(client.email, client.password, { code: 123456 }), 'code');
      const ok = await login(client.email, client.password, { code: code(client.secret, 1) });
      expect(ok.status, JSON.stringify(ok.body)).toBe(200);
      expect(ok.result).toMatchObject({ id: client.id, role: 'client' });
      expect(ok.cookies.tollgate_session).toBeDefined();
    });

    it('a code works once: reused → 206; a code two steps old → 206; one step old → 200', async () => {
      const client = await clientWithTotp();
      await awayFromStepEdge();
      const next = code(client.secret, 1);
      expect((await login(client.email, client.password, { code: next })).status).toBe(200);
      expectError(await login(client.email, client.password, { code: next }), 206, 401);
      // Forget the last used step so only the ±1 window judges the codes below.
      await t.services.db.updateTable('account_totp').set({ last_step: null }).where('subject_type', '=', 'client').where('subject_id', '=', client.id).execute();
      await awayFromStepEdge();
      expectError(await login(client.email, client.password, { code: code(client.secret, -2) }), 206, 401);
      expectError(await login(client.email, client.password, { code: code(client.secret, 2) }), 206, 401);
      expect((await login(client.email, client.password, { code: code(client.secret, -1) })).status).toBe(200);
      // …after which the current step's code still works once (it is later than the step just used).
      expect((await login(client.email, client.password, { code: code(client.secret) })).status).toBe(200);
      expectError(await login(client.email, client.password, { code: code(client.secret) }), 206, 401);
    });

    it('a recovery code works once, in any case and with or without its dash', async () => {
      const client = await clientWithTotp();
      const [first = '', second = ''] = client.recovery;
      expect((await login(client.email, client.password, { code: first })).status).toBe(200);
      expectError(await login(client.email, client.password, { code: first }), 206, 401);
      expect((await login(client.email, client.password, { code: ` ${second.replace('-', '').toUpperCase()} ` })).status).toBe(200);
      expectError(await login(client.email, client.password, { code: second }), 206, 401);
      expect((await t.call('/api/client/profile/totp_get', {}, { browser: client.browser, csrf: true })).result.recovery_codes_left).toBe(8);
      // Another account's recovery code is not this one's.
      const other = await clientWithTotp();
      expectError(await login(client.email, client.password, { code: other.recovery[0] }), 206, 401);
    });

    it('two logins racing with one code: exactly one wins', async () => {
      const client = await clientWithTotp();
      await awayFromStepEdge();
      const next = code(client.secret, 1);
      const replies = await Promise.all(Array.from({ length: 5 }, () => login(client.email, client.password, { code: next })));
      expect(replies.filter((reply) => reply.status === 200)).toHaveLength(1);
      for (const reply of replies.filter((r) => r.status !== 200)) expectError(reply, 206, 401);
      const recovery = client.recovery[0]!;
      const again = await Promise.all(Array.from({ length: 5 }, () => login(client.email, client.password, { code: recovery })));
      expect(again.filter((reply) => reply.status === 200)).toHaveLength(1);
    });

    it('API tokens are not affected by two-factor login', async () => {
      const client = await clientWithTotp();
      const reply = await t.call('/api/client/profile/get', {}, { basic: ['client', client.token] });
      expect(reply.status).toBe(200);
      expect(reply.result.id).toBe(client.id);
    });
  });

  describe('disable', () => {
    it('needs the password and a code; then login needs no code again', async () => {
      const client = await clientWithTotp();
      const { browser } = client;
      await awayFromStepEdge();
      expectInvalid(await t.call('/api/client/profile/totp_disable', { password: 'Wrong-Passw0rd', code: code(client.secret, 1) }, { browser, csrf: true }), 'password');
      expectInvalid(await t.call('/api/client/profile/totp_disable', { password: client.password, code: wrongCode(code(client.secret, 1)) }, { browser, csrf: true }), 'code');
      expectInvalid(await t.call('/api/client/profile/totp_disable', { code: code(client.secret, 1) }, { browser, csrf: true }), 'password');
      expectInvalid(await t.call('/api/client/profile/totp_disable', { password: client.password }, { browser, csrf: true }), 'code');
      expect((await t.call('/api/client/profile/totp_get', {}, { browser, csrf: true })).result.enabled).toBe(true);
      const off = await t.call('/api/client/profile/totp_disable', { password: client.password, code: code(client.secret, 1) }, { browser, csrf: true });
      expect(off.status, JSON.stringify(off.body)).toBe(200);
      expect(off.result).toBe(true);
      expect((await login(client.email, client.password)).status).toBe(200);
      expectError(await t.call('/api/client/profile/totp_disable', { password: client.password, code: code(client.secret) }, { browser, csrf: true }), 409);
      // The old recovery codes died with it.
      expect(await t.services.db.selectFrom('account_recovery_codes').select('id').where('subject_type', '=', 'client').where('subject_id', '=', client.id).execute()).toEqual([]);
    });

    it('a recovery code can turn it off (the phone is lost)', async () => {
      const client = await clientWithTotp();
      const off = await t.call('/api/client/profile/totp_disable', { password: client.password, code: client.recovery[3] }, { browser: client.browser, csrf: true });
      expect(off.status).toBe(200);
      expect((await login(client.email, client.password)).status).toBe(200);
    });
  });

  describe('staff', () => {
    it('admin/profile TOTP actions and guest/staff/login with 207, 206 and a code', async () => {
      const email = 'totp-staff@example.com';
      const password = 'Staff-Passw0rd';
      expect((await t.admin('staff/create', { email, password, name: 'TOTP staff', admin_group_id: 1 })).status).toBe(200);
      const browser: Browser = await t.login('staff', email, password);
      const setup = await t.call('/api/admin/profile/totp_setup', {}, { browser, csrf: true });
      expect(setup.status).toBe(200);
      expect(new URL(setup.result.otpauth_url as string).searchParams.get('secret')).toBe(setup.result.secret);
      await awayFromStepEdge();
      const enabled = await t.call('/api/admin/profile/totp_enable', { code: code(setup.result.secret) }, { browser, csrf: true });
      expect(enabled.result.recovery_codes).toHaveLength(10);
      expect((await t.call('/api/admin/profile/totp_get', {}, { browser, csrf: true })).result).toEqual({ enabled: true, recovery_codes_left: 10 });

      expectError(await t.call('/api/guest/staff/login', { email, password }), 207, 401);
      expectError(await t.call('/api/guest/staff/login', { email, password, code: 'zzzzz-zzzzz' }), 206, 401);
      const next = code(setup.result.secret, 1);
      expect((await t.call('/api/guest/staff/login', { email, password, code: next })).status).toBe(200);
      expectError(await t.call('/api/guest/staff/login', { email, password, code: next }), 206, 401);
      expect((await t.call('/api/guest/staff/login', { email, password, code: enabled.result.recovery_codes[9] })).status).toBe(200);
      // A client's two-factor state is not the staff member's with the same id, and the admin's API token still works.
      expect((await t.admin('profile/get', {})).result.email).toBe(ADMIN_EMAIL);

      expectInvalid(await t.call('/api/admin/profile/totp_disable', { password: 'Nope-Passw0rd', code: enabled.result.recovery_codes[1] }, { browser, csrf: true }), 'password');
      expect((await t.call('/api/admin/profile/totp_disable', { password, code: enabled.result.recovery_codes[1] }, { browser, csrf: true })).status).toBe(200);
      expect((await t.call('/api/guest/staff/login', { email, password })).status).toBe(200);
    });
  });
});

describe('two-factor login and the LOGIN limit', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_ENABLED: 'true' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('10 wrong codes from one IP → the 11th login attempt, even with the right code, → 429', async () => {
    const client = await t.createClient();
    const browser = await t.login('client', client.email, client.password);
    const setup = await t.call('/api/client/profile/totp_setup', {}, { browser, csrf: true });
    await awayFromStepEdge();
    expect((await t.call('/api/client/profile/totp_enable', { code: code(setup.result.secret) }, { browser, csrf: true })).status).toBe(200);
    const ip = '10.9.9.9';
    const right = code(setup.result.secret, 1);
    const wrong = wrongCode(right);
    for (let i = 1; i <= 10; i++) {
      expectError(await t.call('/api/guest/client/login', { email: client.email, password: client.password, code: wrong }, { ip }), 206, 401);
    }
    const limited = await t.call('/api/guest/client/login', { email: client.email, password: client.password, code: right }, { ip });
    expectError(limited, 429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    // Ten wrong codes also locked the account's second step (issue 20, M5), whatever the address: from another one
    // the right code is refused too, unchecked, until the lock ends.
    expectError(await t.call('/api/guest/client/login', { email: client.email, password: client.password, code: right }, { ip: '10.9.9.10' }), 429);
    await t.services.db.updateTable('account_second_factor_failures').set({ locked_until: '2000-01-01T00:00:00Z' }).where('subject_id', '=', client.id).execute();
    // The right code was not spent by the refused attempts: once the lock is over it still works.
    expect((await t.call('/api/guest/client/login', { email: client.email, password: client.password, code: right }, { ip: '10.9.9.10' })).status).toBe(200);
  });
});
