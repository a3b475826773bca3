// Password reset, e-mail confirmation and change of e-mail (CONTRACT §10), through a real SMTP server: every link
// is read from a delivered message (parsed with mailparser) and followed through the real API.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser, createTestApp, type Reply, type TestApp } from '../../helpers/app.ts';
import { expectError, expectInvalid } from '../../helpers/assertions.ts';
import { TestSmtp, type ReceivedMail } from '../../helpers/smtp.ts';

const PUBLIC_URL = 'https://billing.example.com';
const EXPIRED = 'The link has expired or you have already reset your password';
const NEW_PASSWORD = 'Brand-New-Passw0rd';

interface Mailbox {
  smtp: TestSmtp;
  t: TestApp;
}

/** Delivers every message the outbox holds (the test app runs no background sender). */
async function deliver({ t }: Mailbox): Promise<void> {
  await t.services.outbox.runDue();
}

function mailsTo(smtp: TestSmtp, address: string): ReceivedMail[] {
  return smtp.received.filter((mail) => mail.envelope.to.includes(address.toLowerCase()));
}

/** The last message to `address`, after delivering the outbox. */
async function lastMailTo(box: Mailbox, address: string): Promise<ReceivedMail> {
  await deliver(box);
  const mails = mailsTo(box.smtp, address);
  expect(mails.length, `mails to ${address}`).toBeGreaterThan(0);
  return mails.at(-1)!;
}

/** The token in a link `<PUBLIC_URL><path>#/<route>/<token>` (path '' is the client area, `/`), checked in both the HTML and the text part. */
function tokenIn(mail: ReceivedMail, path: string, route: string): string {
  const escaped = `${PUBLIC_URL}${path === '' ? '/' : path}#/${route}/`.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  const pattern = new RegExp(`${escaped}([A-Za-z0-9_-]{43})`);
  const inHtml = pattern.exec(String(mail.parsed.html));
  const inText = pattern.exec(mail.parsed.text ?? '');
  expect(inHtml, String(mail.parsed.html)).not.toBeNull();
  expect(inText?.[1]).toBe(inHtml![1]);
  return inHtml![1]!;
}

function expectExpired(reply: Reply): void {
  expectError(reply, 422);
  expect(reply.body.error!.message).toBe(EXPIRED);
}

describe('password reset and e-mail confirmation', () => {
  const smtp = new TestSmtp();
  let t: TestApp;
  let box: Mailbox;

  beforeAll(async () => {
    await smtp.start();
    t = await createTestApp({ SMTP_URL: smtp.url, PUBLIC_URL });
    box = { smtp, t };
  });
  afterAll(async () => {
    await t.close();
    await smtp.stop();
  });

  const resetRequest = (email: string, ip = '127.0.0.1') => t.call('/api/guest/client/reset_password', { email }, { ip });
  const update = (hash: string, password = NEW_PASSWORD) => t.call('/api/guest/client/update_password', { hash, password, password_confirm: password });

  describe('client password reset', () => {
    it('mails a link to <PUBLIC_URL>/#/reset/<token>; following it sets the password, ends every session, and a notice follows', async () => {
      const client = await t.createClient();
      const browser = await t.login('client', client.email, client.password);
      const other = await t.login('client', client.email, client.password);
      const reply = await resetRequest(client.email);
      expect(reply.status).toBe(200);
      expect(reply.result).toBe(true);

      const mail = await lastMailTo(box, client.email);
      expect(mail.parsed.subject).toBeTruthy();
      const token = tokenIn(mail, '', 'reset');
      // Stored only as a keyed hash: no row holds the token itself.
      const rows = await t.services.db.selectFrom('account_tokens').selectAll().where('subject_id', '=', client.id).where('subject_type', '=', 'client').execute();
      expect(rows).toHaveLength(1);
      expect(JSON.stringify(rows)).not.toContain(token);
      expect(rows[0]!.token_hash).toBe(t.services.secrets.hash(token));
      expect(Date.parse(rows[0]!.expires_at) - Date.parse(rows[0]!.created_at)).toBe(30 * 60 * 1000);

      const done = await update(token);
      expect(done.status, JSON.stringify(done.body)).toBe(200);
      expect(done.result).toBe(true);
      expectError(await t.call('/api/guest/client/login', { email: client.email, password: client.password }), 206, 401);
      expect((await t.call('/api/guest/client/login', { email: client.email, password: NEW_PASSWORD })).status).toBe(200);
      // Every session that existed before the reset is gone.
      expectError(await t.call('/api/client/profile/get', {}, { browser, csrf: true }), 201, 401);
      expectError(await t.call('/api/client/profile/get', {}, { browser: other, csrf: true }), 201, 401);

      const notice = await lastMailTo(box, client.email);
      expect(notice).not.toBe(mail);
      expect(notice.parsed.text).not.toContain(token);
      expect(notice.parsed.text).not.toContain(NEW_PASSWORD);
      expect(String(notice.parsed.html)).toContain(`${PUBLIC_URL}/login`);
    });

    it('a token used twice → 422 with the contract message', async () => {
      const client = await t.createClient();
      await resetRequest(client.email);
      const token = tokenIn(await lastMailTo(box, client.email), '', 'reset');
      expect((await update(token)).status).toBe(200);
      expectExpired(await update(token, 'Another-Passw0rd'));
      expect((await t.call('/api/guest/client/login', { email: client.email, password: NEW_PASSWORD })).status).toBe(200);
    });

    it('a token after 30 minutes → 422', async () => {
      const client = await t.createClient();
      await resetRequest(client.email);
      const token = tokenIn(await lastMailTo(box, client.email), '', 'reset');
      // Move the token's life 30 minutes back, as if the mail had sat unread.
      const row = await t.services.db.selectFrom('account_tokens').selectAll().where('token_hash', '=', t.services.secrets.hash(token)).executeTakeFirstOrThrow();
      const back = (iso: string): string => new Date(Date.parse(iso) - 30 * 60 * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
      await t.services.db.updateTable('account_tokens').set({ created_at: back(row.created_at), expires_at: back(row.expires_at) }).where('id', '=', row.id).execute();
      expectExpired(await update(token));
      expect((await t.call('/api/guest/client/login', { email: client.email, password: client.password })).status).toBe(200);
    });

    it('a newer request voids the older link', async () => {
      const client = await t.createClient();
      await resetRequest(client.email);
      const first = tokenIn(await lastMailTo(box, client.email), '', 'reset');
      await resetRequest(client.email);
      const second = tokenIn(await lastMailTo(box, client.email), '', 'reset');
      expect(second).not.toBe(first);
      expectExpired(await update(first));
      expect((await update(second)).status).toBe(200);
    });

    it("a client's token does not reset a staff password, nor a staff token a client's; unknown tokens → 422", async () => {
      const client = await t.createClient();
      await resetRequest(client.email);
      const token = tokenIn(await lastMailTo(box, client.email), '', 'reset');
      expectExpired(await t.call('/api/guest/staff/update_password', { hash: token, password: NEW_PASSWORD, password_confirm: NEW_PASSWORD }));

      const staffEmail = `reset-staff-${client.id}@example.com`;
      expect((await t.admin('staff/create', { email: staffEmail, password: 'Staff-Passw0rd', name: 'Reset staff', admin_group_id: 1 })).status).toBe(200);
      await t.call('/api/guest/staff/passwordreset', { email: staffEmail });
      const staffToken = tokenIn(await lastMailTo(box, staffEmail), '/admin', 'reset');
      expectExpired(await update(staffToken));
      // Both still work where they belong.
      expect((await update(token)).status).toBe(200);
      expect((await t.call('/api/guest/staff/update_password', { hash: staffToken, password: NEW_PASSWORD, password_confirm: NEW_PASSWORD })).status).toBe(200);
      expectExpired(await update('x'.repeat(43)));
      expectExpired(await update('not a token'));
    });

    it('unknown and inactive addresses: the same true, and no mail', async () => {
      const inactive = await t.createClient({ status: 'suspended' });
      await deliver(box);
      const before = smtp.received.length;
      for (const email of [inactive.email, 'nobody-here@example.com']) {
        const reply = await resetRequest(email);
        expect(reply.status).toBe(200);
        expect(reply.body).toEqual({ result: true, error: null });
      }
      await deliver(box);
      expect(smtp.received.length).toBe(before);
      expect(await t.services.db.selectFrom('account_tokens').select('id').where('subject_id', '=', inactive.id).where('subject_type', '=', 'client').execute()).toEqual([]);
    });

    it('a link for an account deactivated since → 422', async () => {
      const client = await t.createClient();
      await resetRequest(client.email);
      const token = tokenIn(await lastMailTo(box, client.email), '', 'reset');
      await t.admin('client/update', { id: client.id, status: 'suspended' });
      expectExpired(await update(token));
    });

    it('bad input → 422 naming the parameter, and a weak password does not spend the link', async () => {
      expectInvalid(await t.call('/api/guest/client/reset_password', {}), 'email');
      expectInvalid(await t.call('/api/guest/client/reset_password', { email: 'not-an-address' }), 'email');
      expectInvalid(await t.call('/api/guest/client/reset_password', { email: 42 }), 'email');
      const client = await t.createClient();
      await resetRequest(client.email);
      const token = tokenIn(await lastMailTo(box, client.email), '', 'reset');
      expectInvalid(await t.call('/api/guest/client/update_password', { password: NEW_PASSWORD, password_confirm: NEW_PASSWORD }), 'hash');
      expectInvalid(await t.call('/api/guest/client/update_password', { hash: token, password_confirm: NEW_PASSWORD }), 'password');
      expectInvalid(await t.call('/api/guest/client/update_password', { hash: token, password: 'weak', password_confirm: 'weak' }), 'password');
      expectInvalid(await t.call('/api/guest/client/update_password', { hash: token, password: NEW_PASSWORD, password_confirm: `${NEW_PASSWORD}x` }), 'password_confirm');
      expect((await update(token)).status).toBe(200);
    });

    it('credential actions take POST only: GET → 405', async () => {
      for (const path of ['guest/client/reset_password', 'guest/client/update_password', 'guest/staff/passwordreset', 'guest/staff/update_password']) {
        expectError(await t.call(`/api/${path}`, { email: 'a@example.com', hash: 'x' }, { method: 'GET' }), 405);
      }
      const client = await t.createClient();
      expectError(await t.call('/api/client/profile/change_email', { email: 'n@example.com', password: 'x' }, { method: 'GET', basic: ['client', client.token] }), 405);
    });

    it('two concurrent uses of one link: exactly one succeeds', async () => {
      const client = await t.createClient();
      await resetRequest(client.email);
      const token = tokenIn(await lastMailTo(box, client.email), '', 'reset');
      const replies = await Promise.all(Array.from({ length: 4 }, (_, i) => update(token, `${NEW_PASSWORD}${i}`)));
      expect(replies.filter((reply) => reply.status === 200)).toHaveLength(1);
      for (const reply of replies.filter((r) => r.status !== 200)) expectExpired(reply);
    });
  });

  describe('staff password reset', () => {
    it('mails <PUBLIC_URL>/admin#/reset/<token>; the link sets the password and ends the sessions', async () => {
      const email = 'forgetful-staff@example.com';
      const password = 'Staff-Passw0rd';
      expect((await t.admin('staff/create', { email, password, name: 'Forgetful', admin_group_id: 1 })).status).toBe(200);
      const browser = await t.login('staff', email, password);
      const reply = await t.call('/api/guest/staff/passwordreset', { email: email.toUpperCase() });
      expect(reply.body).toEqual({ result: true, error: null });
      const token = tokenIn(await lastMailTo(box, email), '/admin', 'reset');
      const done = await t.call('/api/guest/staff/update_password', { hash: token, password: NEW_PASSWORD, password_confirm: NEW_PASSWORD });
      expect(done.body).toEqual({ result: true, error: null });
      expectError(await t.call('/api/admin/profile/get', {}, { browser, csrf: true }), 201, 401);
      expectError(await t.call('/api/guest/staff/login', { email, password }), 206, 401);
      expect((await t.call('/api/guest/staff/login', { email, password: NEW_PASSWORD })).status).toBe(200);
      expectExpired(await t.call('/api/guest/staff/update_password', { hash: token, password: password, password_confirm: password }));
    });

    it('inactive staff and unknown addresses get the same true and no mail', async () => {
      const email = 'gone-staff@example.com';
      await t.admin('staff/create', { email, password: 'Staff-Passw0rd', name: 'Gone', admin_group_id: 1, status: 'inactive' });
      await deliver(box);
      const before = smtp.received.length;
      expect((await t.call('/api/guest/staff/passwordreset', { email })).body).toEqual({ result: true, error: null });
      expect((await t.call('/api/guest/staff/passwordreset', { email: 'nobody-staff@example.com' })).body).toEqual({ result: true, error: null });
      await deliver(box);
      expect(smtp.received.length).toBe(before);
    });
  });

  describe('no account enumeration by time', () => {
    it('unknown, inactive and real addresses: every answer ≥ 300 ms, medians over 60 calls each within 60 ms', async () => {
      const real = await t.createClient();
      const inactive = await t.createClient({ status: 'canceled' });
      const kinds = { real: real.email, inactive: inactive.email, unknown: 'no-such-client@example.com' } as const;
      const order = Object.keys(kinds) as Array<keyof typeof kinds>;
      const timed: Array<{ kind: keyof typeof kinds; ms: number }> = [];
      // Concurrent in rounds of 30 (10 of each kind, interleaved), so the three kinds share the same load and the
      // machine's own queueing stays small next to the 300–450 ms being measured.
      for (let round = 0; round < 6; round++) {
        const batch = Array.from({ length: 30 }, (_, i) => order[i % 3]!);
        timed.push(
          ...(await Promise.all(
            batch.map(async (kind) => {
              const started = performance.now();
              const reply = await resetRequest(kinds[kind]);
              const ms = performance.now() - started;
              expect(reply.body).toEqual({ result: true, error: null });
              return { kind, ms };
            }),
          )),
        );
      }
      const median = (kind: keyof typeof kinds): number => {
        const sorted = timed.filter((entry) => entry.kind === kind).map((entry) => entry.ms).toSorted((a, b) => a - b);
        return (sorted[29]! + sorted[30]!) / 2;
      };
      for (const entry of timed) expect(entry.ms).toBeGreaterThanOrEqual(299);
      const medians = { real: median('real'), inactive: median('inactive'), unknown: median('unknown') };
      console.info(`reset_password medians over 60 calls each (ms): ${JSON.stringify(medians)}`);
      // The floor is uniform over 300–450 ms, so a median of 60 calls varies by about 7 ms on its own and more on a
      // loaded machine (40 ms failed under CI-like load). What this must catch is an answer that escapes the floor or
      // work that outlasts it (a missing floor: ~300 ms apart), which 60 ms still does.
      expect(Math.abs(medians.real - medians.unknown)).toBeLessThan(60);
      expect(Math.abs(medians.real - medians.inactive)).toBeLessThan(60);
      expect(Math.abs(medians.inactive - medians.unknown)).toBeLessThan(60);
    });
  });

  describe('e-mail confirmation off (the default)', () => {
    it('is_email_validation_required → false; sign-up mails a welcome without a link; checkout is not held', async () => {
      expect((await t.call('/api/guest/client/is_email_validation_required', {}, { method: 'GET' })).body).toEqual({ result: false, error: null });
      const browser = new Browser();
      const email = 'welcome@example.com';
      const created = await t.call('/api/guest/client/create', { email, first_name: 'Wel', password: NEW_PASSWORD, password_confirm: NEW_PASSWORD }, { browser });
      expect(created.status).toBe(200);
      const mail = await lastMailTo(box, email);
      expect(String(mail.parsed.html)).not.toContain('#/confirm-email/');
      expect(String(mail.parsed.html)).toContain(`${PUBLIC_URL}/login`);
      // Empty cart: 409, not the 403 of an unconfirmed address.
      expectError(await t.call('/api/client/cart/checkout', {}, { browser, csrf: true }), 409);
    });

    it('change of e-mail: mails the new address; the address changes only when the link is followed', async () => {
      const client = await t.createClient();
      const fresh = `changed-${client.id}@example.com`;
      const browser = await t.login('client', client.email, client.password);
      const reply = await t.call('/api/client/profile/change_email', { email: fresh, password: client.password }, { browser, csrf: true });
      expect(reply.body).toEqual({ result: true, error: null });
      const mail = await lastMailTo(box, fresh);
      expect(mailsTo(smtp, client.email)).toHaveLength(0);
      const token = tokenIn(mail, '', 'confirm-email');
      expect((await t.call('/api/client/profile/get', {}, { browser, csrf: true })).result.email).toBe(client.email);
      expectError(await t.call('/api/guest/client/login', { email: fresh, password: client.password }), 206, 401);

      expect((await t.call('/api/guest/client/confirm_email', { hash: token })).body).toEqual({ result: true, error: null });
      expect((await t.call('/api/client/profile/get', {}, { browser, csrf: true })).result.email).toBe(fresh);
      expect((await t.call('/api/guest/client/login', { email: fresh, password: client.password })).status).toBe(200);
      expectError(await t.call('/api/guest/client/login', { email: client.email, password: client.password }), 206, 401);
      // The link works once.
      expectInvalid(await t.call('/api/guest/client/confirm_email', { hash: token }), 'hash');
    });

    it('change of e-mail: wrong password, the same address or bad input → 422; no session → 401', async () => {
      const client = await t.createClient();
      const taken = await t.createClient();
      const browser = await t.login('client', client.email, client.password);
      const change = (params: Record<string, unknown>) => t.call('/api/client/profile/change_email', params, { browser, csrf: true });
      expectInvalid(await change({ email: 'fine@example.com', password: 'Wrong-Passw0rd' }), 'password');
      // Another account's address is answered like a free one (issue 20, L3: test/security/reset-links.test.ts).
      expect((await change({ email: taken.email.toUpperCase(), password: client.password })).body).toEqual({ result: true, error: null });
      expectInvalid(await change({ email: client.email, password: client.password }), 'email');
      expectInvalid(await change({ email: 'not-an-address', password: client.password }), 'email');
      expectInvalid(await change({ password: client.password }), 'email');
      expectInvalid(await change({ email: 'fine@example.com' }), 'password');
      expectError(await t.call('/api/client/profile/change_email', { email: 'fine@example.com', password: client.password }), 201, 401);
      expectError(await t.call('/api/client/profile/change_email', { email: 'fine@example.com', password: client.password }, { basic: ['admin', t.adminToken] }), 203, 401);
    });

    it('an address taken by another account between the request and the confirmation → 422 at confirmation', async () => {
      const client = await t.createClient();
      const wanted = `contested-${client.id}@example.com`;
      const browser = await t.login('client', client.email, client.password);
      await t.call('/api/client/profile/change_email', { email: wanted, password: client.password }, { browser, csrf: true });
      const token = tokenIn(await lastMailTo(box, wanted), '', 'confirm-email');
      await t.createClient({ email: wanted });
      expectInvalid(await t.call('/api/guest/client/confirm_email', { hash: token }), 'email');
      expect((await t.call('/api/client/profile/get', {}, { browser, csrf: true })).result.email).toBe(client.email);
    });

    it('a reset token is not a confirmation token, nor the other way round', async () => {
      const client = await t.createClient();
      await resetRequest(client.email);
      const reset = tokenIn(await lastMailTo(box, client.email), '', 'reset');
      expectInvalid(await t.call('/api/guest/client/confirm_email', { hash: reset }), 'hash');
      const browser = await t.login('client', client.email, client.password);
      const fresh = `swap-${client.id}@example.com`;
      await t.call('/api/client/profile/change_email', { email: fresh, password: client.password }, { browser, csrf: true });
      const confirm = tokenIn(await lastMailTo(box, fresh), '', 'confirm-email');
      expectExpired(await update(confirm));
      expect((await update(reset)).status).toBe(200);
    });
  });
});

describe('e-mail confirmation required (REQUIRE_EMAIL_VERIFICATION=true)', () => {
  const smtp = new TestSmtp();
  let t: TestApp;
  let box: Mailbox;

  beforeAll(async () => {
    await smtp.start();
    t = await createTestApp({ SMTP_URL: smtp.url, PUBLIC_URL, REQUIRE_EMAIL_VERIFICATION: 'true' });
    box = { smtp, t };
  });
  afterAll(async () => {
    await t.close();
    await smtp.stop();
  });

  it('sign-up mails a confirmation link; unconfirmed: login works, checkout → 403; the link confirms', async () => {
    expect((await t.call('/api/guest/client/is_email_validation_required', {})).body).toEqual({ result: true, error: null });
    const browser = new Browser();
    const email = 'to-confirm@example.com';
    expect((await t.call('/api/guest/client/create', { email, first_name: 'Con', password: NEW_PASSWORD, password_confirm: NEW_PASSWORD }, { browser })).status).toBe(200);
    const first = tokenIn(await lastMailTo(box, email), '', 'confirm-email');

    const held = await t.call('/api/client/cart/checkout', {}, { browser, csrf: true });
    expectError(held, 403);
    expect(held.body.error!.message).toBe('Please check your mailbox and confirm your email address.');
    const again = await t.login('client', email, NEW_PASSWORD);
    expectError(await t.call('/api/client/cart/checkout', {}, { browser: again, csrf: true }), 403);

    // A new link voids the first.
    expect((await t.call('/api/client/profile/resend_confirmation', {}, { browser, csrf: true })).body).toEqual({ result: true, error: null });
    const second = tokenIn(await lastMailTo(box, email), '', 'confirm-email');
    expect(second).not.toBe(first);
    expectInvalid(await t.call('/api/guest/client/confirm_email', { hash: first }), 'hash');
    expect((await t.call('/api/guest/client/confirm_email', { hash: second })).body).toEqual({ result: true, error: null });
    expectInvalid(await t.call('/api/guest/client/confirm_email', { hash: second }), 'hash');

    // Confirmed: checkout gets past the check (the cart is empty: 409); resending is now a conflict.
    expectError(await t.call('/api/client/cart/checkout', {}, { browser, csrf: true }), 409);
    expectError(await t.call('/api/client/profile/resend_confirmation', {}, { browser, csrf: true }), 409);
  });

  it('clients created by staff count as confirmed; confirm_email bad input → 422', async () => {
    const client = await t.createClient();
    const browser = await t.login('client', client.email, client.password);
    expectError(await t.call('/api/client/cart/checkout', {}, { browser, csrf: true }), 409);
    expectInvalid(await t.call('/api/guest/client/confirm_email', {}), 'hash');
    expectInvalid(await t.call('/api/guest/client/confirm_email', { hash: 'x'.repeat(43) }), 'hash');
    expectInvalid(await t.call('/api/guest/client/confirm_email', { hash: 12 }), 'hash');
    expectError(await t.call('/api/client/profile/resend_confirmation', {}), 201, 401);
  });

  it('a confirmation link for a client deleted since → 422', async () => {
    const browser = new Browser();
    const email = 'deleted-soon@example.com';
    const created = await t.call('/api/guest/client/create', { email, first_name: 'Del', password: NEW_PASSWORD, password_confirm: NEW_PASSWORD }, { browser });
    const token = tokenIn(await lastMailTo(box, email), '', 'confirm-email');
    expect((await t.admin('client/delete', { id: created.result })).status).toBe(200);
    expectInvalid(await t.call('/api/guest/client/confirm_email', { hash: token }), 'hash');
  });
});

describe('password reset limits (PASSWORD_RESET 5/3600 s per IP and per address)', () => {
  const smtp = new TestSmtp();
  let t: TestApp;

  beforeAll(async () => {
    await smtp.start();
    t = await createTestApp({ SMTP_URL: smtp.url, PUBLIC_URL, RATE_LIMIT_ENABLED: 'true' });
  });
  afterAll(async () => {
    await t.close();
    await smtp.stop();
  });

  it('the 6th request from one IP → 429, whatever the address; others IPs are unaffected', async () => {
    const ip = '10.7.0.1';
    const replies = await Promise.all(Array.from({ length: 5 }, (_, i) => t.call('/api/guest/client/reset_password', { email: `ip-${i}@example.com` }, { ip })));
    for (const reply of replies) expect(reply.status).toBe(200);
    const limited = await t.call('/api/guest/staff/passwordreset', { email: 'ip-6@example.com' }, { ip });
    expectError(limited, 429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(limited.headers['ratelimit-limit']).toBe('5');
    expect((await t.call('/api/guest/client/reset_password', { email: 'ip-7@example.com' }, { ip: '10.7.0.2' })).status).toBe(200);
  });

  it('past 5 requests for one address, from six IPs: still true, but no 6th mail (issue 20, L4); the same for an address with no account', async () => {
    const client = await t.createClient();
    for (const email of [client.email, 'nobody-limited@example.com']) {
      for (let i = 1; i <= 5; i++) {
        expect((await t.call('/api/guest/client/reset_password', { email }, { ip: `10.8.${email.length}.${i}` })).status).toBe(200);
      }
      expect((await t.call('/api/guest/client/reset_password', { email: email.toUpperCase() }, { ip: `10.8.${email.length}.6` })).body).toEqual({ result: true, error: null });
    }
    await t.services.outbox.runDue();
    expect(smtp.received.filter((mail) => mail.envelope.to.includes(client.email.toLowerCase()))).toHaveLength(5);
  });

  it('change_email counts against the address it mails: the 6th request to one address → 429', async () => {
    const target = 'stranger@example.com';
    for (let i = 1; i <= 6; i++) {
      const client = await t.createClient();
      const reply = await t.call('/api/client/profile/change_email', { email: target, password: client.password }, { basic: ['client', client.token], ip: `10.9.1.${i}` });
      if (i <= 5) expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      else expectError(reply, 429);
    }
  });
});
