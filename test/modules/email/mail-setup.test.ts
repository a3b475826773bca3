// Issue 21 item 6: mail that cannot leave says so. `smtp_url` is a secret setting (sealed, never returned, checked
// for shape); while no mail server is configured messages wait as not_sent and admin/email/delivery_status says how
// many (the panel's banner); configuring one sends the waiting messages, without a restart; smtp_password replaces
// the URL's password; "Forgot password" answers the same for every address, with or without a mail server. Runs on
// SQLite and, with TEST_DATABASE_URL, PostgreSQL + Redis.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { transportOptions } from '../../../src/modules/email/transport.ts';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectError, expectInvalid } from '../../helpers/assertions.ts';
import { TestSmtp } from '../../helpers/smtp.ts';
import { asClient, asStaff, staffWith } from '../../helpers/selling-fixtures.ts';

const smtp = new TestSmtp();
let t: TestApp;

beforeAll(async () => {
  await smtp.start();
  // No SMTP_URL: mail cannot leave until Settings → Mail has a server.
  t = await createTestApp({ SMTP_TIMEOUT_MS: '2000', MAIL_FROM: 'billing@example.com', PUBLIC_URL: 'https://billing.example.com' });
});

afterAll(async () => {
  await t.close();
  await smtp.stop();
});

const status = async () => (await t.admin('email/delivery_status')).result as { smtp_configured: boolean; waiting: number };
const outboxStatusOf = async (emailId: number) =>
  (await t.services.db.selectFrom('emails').innerJoin('outbox_messages', 'outbox_messages.id', 'emails.outbox_id').select('outbox_messages.status').where('emails.id', '=', emailId).executeTakeFirstOrThrow()).status;

describe('mail without a mail server', () => {
  it('waits as not_sent, and delivery_status counts the waiting messages', async () => {
    expect(await status()).toEqual({ smtp_configured: false, waiting: 0 });
    const first = (await t.admin('email/send_test', { to: 'ops@example.com' })).result as number;
    const second = (await t.admin('email/send_test', { to: 'ops@example.com' })).result as number;
    expect(await status()).toEqual({ smtp_configured: false, waiting: 2 });
    await t.services.outbox.runDue();
    expect(await outboxStatusOf(first)).toBe('not_sent');
    expect(await outboxStatusOf(second)).toBe('not_sent');
    // Set aside, not dropped: still counted as waiting.
    expect(await status()).toEqual({ smtp_configured: false, waiting: 2 });
    expect(smtp.received).toHaveLength(0);
  });

  it('delivery_status is for staff who may read the mail log (401 without credentials, 403 without email.view)', async () => {
    expectError(await t.call('/api/admin/email/delivery_status', {}), 201, 401);
    const billing = await staffWith(t, ['invoice.view']);
    expectError(await asStaff(t, billing, 'email/delivery_status'), 403);
    const reader = await staffWith(t, ['email.view']);
    expect((await asStaff(t, reader, 'email/delivery_status')).body.error).toBeNull();
    const client = await t.createClient();
    expect((await asClient(t, client.token, 'email/delivery_status')).status).toBe(404);
  });
});

describe('smtp_url in Settings', () => {
  it('refuses a URL that is not smtp(s):// with 422 naming smtp_url, and a non-string', async () => {
    for (const value of ['http://mail.example.com', 'mail.example.com:587', 'smtp://', 'smtp://host name']) {
      expectInvalid(await t.admin('system/settings_update', { smtp_url: value }), 'smtp_url');
    }
    expectInvalid(await t.admin('system/settings_update', { smtp_url: 25 }), 'smtp_url');
    expect((await status()).smtp_configured).toBe(false);
  });

  it('is sealed and never returned; once set, the waiting messages go out without a restart', async () => {
    const url = `smtp://mailer:url-pass@127.0.0.1:${smtp.port}`;
    expect((await t.admin('system/settings_update', { smtp_url: url })).body.error).toBeNull();
    const settings = await t.admin('system/settings_get');
    expect(settings.result).toMatchObject({ smtp_url_set: true, smtp_url_source: 'stored' });
    expect(settings.result).not.toHaveProperty('smtp_url');
    expect(JSON.stringify(settings.body)).not.toContain('url-pass');
    const row = await t.services.db.selectFrom('settings').select('value').where('name', '=', 'smtp_url').executeTakeFirstOrThrow();
    expect(row.value).not.toContain('url-pass');
    expect(row.value).not.toContain('127.0.0.1');

    expect(await status()).toEqual({ smtp_configured: true, waiting: 2 });
    await t.services.outbox.runDue();
    const received = await smtp.waitFor(2);
    expect(received.map((mail) => mail.envelope.to)).toEqual([['ops@example.com'], ['ops@example.com']]);
    expect(smtp.logins.at(-1)).toEqual({ user: 'mailer', pass: 'url-pass' });
    expect(await status()).toEqual({ smtp_configured: true, waiting: 0 });
    // Releasing again finds nothing: each waiting message is sent once.
    expect(await t.services.mail.releaseWaiting()).toBe(0);
  });

  it('smtp_password replaces the URL password at the next message', async () => {
    expect((await t.admin('system/settings_update', { smtp_password: 'settings-pass' })).body.error).toBeNull();
    await t.admin('email/send_test', { to: 'ops@example.com' });
    const before = smtp.received.length;
    await t.services.outbox.runDue();
    await smtp.waitFor(before + 1);
    expect(smtp.logins.at(-1)).toEqual({ user: 'mailer', pass: 'settings-pass' });
    expect(transportOptions('smtp://a%40b:p%3Ass@host:587', null, 1000)).toMatchObject({ url: 'smtp://host:587', auth: { user: 'a@b', pass: 'p:ss' } });
    expect(transportOptions('smtp://host:25', 'ignored-without-user', 1000)).not.toHaveProperty('auth');
    await t.admin('system/settings_update', { smtp_password: '' });
  });

  it('clearing it stops delivery again at once: new mail waits, and the banner counts it', async () => {
    expect((await t.admin('system/settings_update', { smtp_url: '' })).body.error).toBeNull();
    expect((await t.admin('system/settings_get')).result).toMatchObject({ smtp_url_set: false, smtp_url_source: null });
    const id = (await t.admin('email/send_test', { to: 'ops@example.com' })).result as number;
    const before = smtp.received.length;
    await t.services.outbox.runDue();
    expect(await outboxStatusOf(id)).toBe('not_sent');
    expect(smtp.received).toHaveLength(before);
    expect(await status()).toEqual({ smtp_configured: false, waiting: 1 });
  });

  it('an SMTP_URL in the environment is in force until a stored value replaces it', async () => {
    const other = await createTestApp({ SMTP_URL: smtp.url, PUBLIC_URL: 'https://billing.example.com' });
    try {
      expect((await other.admin('system/settings_get')).result).toMatchObject({ smtp_url_set: true, smtp_url_source: 'environment' });
      expect((await other.admin('email/delivery_status')).result).toMatchObject({ smtp_configured: true });
    } finally {
      await other.close();
    }
  });
});

describe('"Forgot password" says the same for every address', () => {
  async function answers(): Promise<unknown[]> {
    const client = await t.createClient();
    const inactive = await t.createClient();
    await t.admin('client/update', { id: inactive.id, status: 'suspended' });
    const out = [];
    for (const email of [client.email, inactive.email, 'nobody-here@example.com']) {
      const reply = await t.call('/api/guest/client/reset_password', { email }, { ip: `10.9.${out.length}.1` });
      out.push({ status: reply.status, body: reply.body });
    }
    const staff = await t.call('/api/guest/staff/passwordreset', { email: 'nobody-staff@example.com' }, { ip: '10.9.9.1' });
    out.push({ status: staff.status, body: staff.body });
    return out;
  }

  it('with and without a mail server', async () => {
    const without = await answers();
    expect(new Set(without.map((answer) => JSON.stringify(answer)))).toEqual(new Set([JSON.stringify({ status: 200, body: { result: true, error: null } })]));
    expect((await t.admin('system/settings_update', { smtp_url: smtp.url })).body.error).toBeNull();
    const withServer = await answers();
    expect(withServer).toEqual(without);
    await t.admin('system/settings_update', { smtp_url: '' });
  });
});
