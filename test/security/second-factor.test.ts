// Issue 20, M5 and L5: a per-account ceiling on second-factor guesses, counted in the database. Ten wrong codes in
// 15 minutes — from any number of addresses, processes, or through totp_disable — lock the account's second step for
// 15 minutes: login answers 429 with Retry-After (no code checked, not even a right one), totp_disable answers 422 on
// `code` (never 429), and the owner is mailed once per lock.
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventBus } from '../../src/platform/events.ts';
import { createSecondFactorLimit, SECOND_FACTOR_MAX_FAILURES, SECOND_FACTOR_WINDOW_SECONDS } from '../../src/modules/account/second-factor-limit.ts';
import { totpCode } from '../../src/modules/account/two-factor.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD, createTestApp, type Browser, type TestApp } from '../helpers/app.ts';
import { expectError, expectInvalid } from '../helpers/assertions.ts';

const PERIOD_MS = 30_000;

/** Waits out the last three seconds of a 30 s step, so a code computed here is judged in the same step by the server. */
async function awayFromStepEdge(): Promise<void> {
  const intoStep = Date.now() % PERIOD_MS;
  if (intoStep > PERIOD_MS - 3000) await new Promise((resolve) => setTimeout(resolve, PERIOD_MS - intoStep + 50));
}
const code = (secret: string, offset = 0): string => totpCode(secret, Date.now(), offset);
const wrongCode = (right: string, n = 1): string => String((Number(right) + n) % 1_000_000).padStart(6, '0');

interface Account {
  id: number;
  email: string;
  password: string;
  secret: string;
  recovery: string[];
  browser: Browser;
  kind: 'client' | 'staff';
}

describe('second-factor lockout', () => {
  let t: TestApp;
  let staffCounter = 0;

  beforeAll(async () => {
    // Rate limits on, at their defaults: the ceiling must hold although every address stays under its own limits.
    t = await createTestApp({ RATE_LIMIT_ENABLED: 'true' });
  });
  afterAll(async () => {
    await t.close();
  });

  async function withTotp(kind: 'client' | 'staff'): Promise<Account> {
    let email: string;
    let password: string;
    let id: number;
    if (kind === 'client') {
      const client = await t.createClient();
      ({ email, password, id } = client);
    } else {
      staffCounter += 1;
      email = `second-factor-${staffCounter}@example.com`;
      password = 'Staff-Passw0rd-2';
      id = (await t.admin('staff/create', { email, password, name: 'Second Factor', admin_group_id: 1 })).result as number;
    }
    const browser = await t.login(kind, email, password, undefined);
    const area = kind === 'client' ? 'client' : 'admin';
    const setup = await t.call(`/api/${area}/profile/totp_setup`, {}, { browser, csrf: true });
    await awayFromStepEdge();
    const enabled = await t.call(`/api/${area}/profile/totp_enable`, { code: code(setup.result.secret) }, { browser, csrf: true });
    expect(enabled.status, JSON.stringify(enabled.body)).toBe(200);
    return { id, email, password, secret: setup.result.secret as string, recovery: enabled.result.recovery_codes as string[], browser, kind };
  }

  const login = (a: Account, codeValue: string | undefined, ip: string) =>
    t.call(`/api/guest/${a.kind}/login`, { email: a.email, password: a.password, ...(codeValue !== undefined && { code: codeValue }) }, { ip });
  const disable = (a: Account, codeValue: string) =>
    t.call(`/api/${a.kind === 'client' ? 'client' : 'admin'}/profile/totp_disable`, { password: a.password, code: codeValue }, { browser: a.browser, csrf: true });
  const lockMails = (a: Account) =>
    t.services.db.selectFrom('emails').select(['to_email', 'text']).where('template', '=', 'second_factor_locked').where('to_email', '=', a.email).execute();
  const failuresOf = async (a: Account): Promise<number> =>
    (
      await t.services.db
        .selectFrom('account_second_factor_failures')
        .select('failures')
        .where('subject_type', '=', a.kind === 'client' ? 'client' : 'admin')
        .where('subject_id', '=', a.id)
        .executeTakeFirst()
    )?.failures ?? 0;
  /** Ends the account's lock as if 15 minutes had passed. */
  const endLock = (a: Account) =>
    t.services.db
      .updateTable('account_second_factor_failures')
      .set({ locked_until: '2000-01-01T00:00:00Z', window_started_at: '2000-01-01T00:00:00Z' })
      .where('subject_type', '=', a.kind === 'client' ? 'client' : 'admin')
      .where('subject_id', '=', a.id)
      .execute();

  for (const kind of ['client', 'staff'] as const) {
    it(`${kind}: ten wrong codes from ten addresses lock the second step everywhere (429, Retry-After), the owner is mailed once`, async () => {
      const a = await withTotp(kind);
      await awayFromStepEdge();
      const right = code(a.secret, 1);
      for (let i = 1; i <= SECOND_FACTOR_MAX_FAILURES; i++) {
        expectError(await login(a, wrongCode(right, i), `198.51.100.${i}`), 206, 401);
      }
      for (const ip of ['198.51.100.50', '198.51.100.51', '203.0.113.77']) {
        const locked = await login(a, right, ip);
        expectError(locked, 429);
        const retryAfter = Number(locked.headers['retry-after']);
        expect(retryAfter).toBeGreaterThan(SECOND_FACTOR_WINDOW_SECONDS - 60);
        expect(retryAfter).toBeLessThanOrEqual(SECOND_FACTOR_WINDOW_SECONDS);
      }
      // Recovery codes are second factors too: refused unchecked, and not spent.
      expectError(await login(a, a.recovery[0], '198.51.100.52'), 429);
      const mails = await lockMails(a);
      expect(mails).toHaveLength(1);
      expect(mails[0]!.text).toContain('10 wrong two-factor codes');
      // Past the lock, the right code (never spent by the refused attempts) and the recovery code work.
      await endLock(a);
      expect((await login(a, right, '198.51.100.53')).status).toBe(200);
      expect((await login(a, a.recovery[0], '198.51.100.54')).status).toBe(200);
      expect(await lockMails(a)).toHaveLength(1);
    });
  }

  it('a wrong password (206) and a missing code (207) are not second-factor guesses: they count nothing', async () => {
    const a = await withTotp('client');
    for (let i = 0; i < 3; i++) expectError(await t.call('/api/guest/client/login', { email: a.email, password: 'Wrong-Passw0rd9' }, { ip: `192.0.2.${100 + i}` }), 206, 401);
    for (let i = 0; i < 3; i++) expectError(await login(a, undefined, `192.0.2.${110 + i}`), 207, 401);
    expect(await failuresOf(a)).toBe(0);
  });

  it('twenty concurrent wrong codes from twenty addresses: each counted, the step locks, exactly one mail', async () => {
    const a = await withTotp('client');
    await awayFromStepEdge();
    const right = code(a.secret, 1);
    const replies = await Promise.all(Array.from({ length: 20 }, (_, i) => login(a, wrongCode(right, i + 1), `203.0.113.${i + 1}`)));
    for (const reply of replies) expect([401, 429], JSON.stringify(reply.body)).toContain(reply.status);
    expect(replies.filter((reply) => reply.status === 401).length).toBeGreaterThanOrEqual(SECOND_FACTOR_MAX_FAILURES);
    expect(await failuresOf(a)).toBeGreaterThanOrEqual(SECOND_FACTOR_MAX_FAILURES);
    expectError(await login(a, right, '203.0.113.99'), 429);
    expect(await lockMails(a)).toHaveLength(1);
  });

  it('totp_disable: forty wrong codes are all answered 422, never 429; from the tenth on even the right code is refused (L5)', async () => {
    const a = await withTotp('client');
    await awayFromStepEdge();
    const right = code(a.secret, 1);
    for (let i = 1; i <= 40; i++) {
      const reply = await disable(a, wrongCode(right, i));
      expectInvalid(reply, 'code');
    }
    const refused = await disable(a, right);
    expectInvalid(refused, 'code');
    expect(refused.body.error!.message).toContain('too many wrong codes');
    expect(refused.headers['retry-after']).toBeUndefined();
    // The count is the account's: login is locked too, and the owner was told once.
    expectError(await login(a, right, '192.0.2.200'), 429);
    expect(await lockMails(a)).toHaveLength(1);
    expect((await t.call('/api/client/profile/totp_get', {}, { browser: a.browser, csrf: true })).result.enabled).toBe(true);
    // After the lock, the right code turns two-factor login off.
    await endLock(a);
    expect((await disable(a, right)).body).toEqual({ result: true, error: null });
    expect((await t.call('/api/client/profile/totp_get', {}, { browser: a.browser, csrf: true })).result.enabled).toBe(false);
  });

  it('totp_disable: a wrong password → 422 on password and counts no code; two-factor off → 409; missing code → 422', async () => {
    const a = await withTotp('client');
    expectInvalid(await t.call('/api/client/profile/totp_disable', { password: 'Wrong-Passw0rd9', code: '000000' }, { browser: a.browser, csrf: true }), 'password');
    expect(await failuresOf(a)).toBe(0);
    expectInvalid(await t.call('/api/client/profile/totp_disable', { password: a.password }, { browser: a.browser, csrf: true }), 'code');
    const plain = await t.createClient();
    const browser = await t.login('client', plain.email, plain.password);
    expectError(await t.call('/api/client/profile/totp_disable', { password: plain.password, code: '123456' }, { browser, csrf: true }), 409);
  });

  it("one account's lock does not touch another's second step", async () => {
    const a = await withTotp('client');
    const b = await withTotp('client');
    await awayFromStepEdge();
    for (let i = 1; i <= SECOND_FACTOR_MAX_FAILURES; i++) expectError(await login(a, wrongCode(code(a.secret), i), `192.0.2.${10 + i}`), 206, 401);
    expectError(await login(a, code(a.secret, 1), '192.0.2.30'), 429);
    expect((await login(b, code(b.secret, 1), '192.0.2.31')).status).toBe(200);
    // Nor does it stop the administrator (no two-factor) from logging in.
    expect((await t.call('/api/guest/staff/login', { email: ADMIN_EMAIL, password: ADMIN_PASSWORD }, { ip: '192.0.2.32' })).status).toBe(200);
  });
});

describe('second-factor window (the counter on its own, with a clock)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('counts 15 minutes from the first failure; the tenth within them locks for 15 minutes; the lock mails once', async () => {
    let now = Date.parse('2026-06-01T10:00:00Z');
    const events = new EventBus();
    const locks: string[] = [];
    events.on('account.second_factor_locked', ({ lockedUntil }) => {
      locks.push(lockedUntil);
    });
    const limit = createSecondFactorLimit({ db: t.services.db, events, clock: () => now });
    const subject = { type: 'client' as const, id: 987_654 };
    for (let i = 0; i < 9; i++) await limit.recordFailure(subject);
    expect(await limit.lockedFor(subject)).toBeNull();
    // The window is over: the next failure starts a new one at 1.
    now += SECOND_FACTOR_WINDOW_SECONDS * 1000 + 1000;
    await limit.recordFailure(subject);
    expect(await limit.lockedFor(subject)).toBeNull();
    for (let i = 0; i < 8; i++) await limit.recordFailure(subject);
    expect(await limit.lockedFor(subject)).toBeNull();
    await limit.recordFailure(subject);
    expect(await limit.lockedFor(subject)).toBe(SECOND_FACTOR_WINDOW_SECONDS);
    expect(locks).toEqual(['2026-06-01T10:30:01Z']);
    // Further failures while locked (none reach the counter through the API, but a race might) mail nothing more.
    await limit.recordFailure(subject);
    expect(locks).toHaveLength(1);
    now += (SECOND_FACTOR_WINDOW_SECONDS - 1) * 1000;
    expect(await limit.lockedFor(subject)).toBe(1);
    now += 1000;
    expect(await limit.lockedFor(subject)).toBeNull();
    // After the lock a new window begins: one more failure does not lock again.
    await limit.recordFailure(subject);
    expect(await limit.lockedFor(subject)).toBeNull();
    expect(locks).toHaveLength(1);
  });
});

describe('second-factor ceiling across processes', () => {
  // Two Tollgate instances on one database (a file for SQLite; the same PostgreSQL database otherwise), as two
  // processes or hosts would be: the count is the database's, so failures on both add up.
  const file = `/tmp/tollgate-second-factor-${randomBytes(4).toString('hex')}.db`;
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    const secret = randomBytes(32).toString('hex');
    a = await createTestApp({ TOLLGATE_SECRET: secret, ...(process.env.TEST_DATABASE_URL ? {} : { DATABASE_URL: `sqlite:${file}` }) });
    b = await createTestApp({ TOLLGATE_SECRET: secret, DATABASE_URL: a.services.config.databaseUrl });
  });
  afterAll(async () => {
    await b.close();
    await a.close();
    rmSync(file, { force: true });
    rmSync(`${file}-wal`, { force: true });
    rmSync(`${file}-shm`, { force: true });
  });

  it('five wrong codes on each instance lock the account on both', async () => {
    const client = await a.createClient();
    const browser = await a.login('client', client.email, client.password);
    const setup = await a.call('/api/client/profile/totp_setup', {}, { browser, csrf: true });
    await awayFromStepEdge();
    expect((await a.call('/api/client/profile/totp_enable', { code: code(setup.result.secret) }, { browser, csrf: true })).status).toBe(200);
    const right = code(setup.result.secret, 1);
    for (let i = 1; i <= 10; i++) {
      const on = i % 2 === 0 ? a : b;
      expectError(await on.call('/api/guest/client/login', { email: client.email, password: client.password, code: wrongCode(right, i) }), 206, 401);
    }
    for (const on of [a, b]) expectError(await on.call('/api/guest/client/login', { email: client.email, password: client.password, code: right }), 429);
  });
});
