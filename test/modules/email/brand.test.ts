// Issue 21 item 7: the operator's brand, not ours. Once the company name (and logo, address) are set, every mail's
// sender display name and its layout (logo, name, address footer) and the TOTP issuer use them; before, nothing says
// "Tollgate" (the host name stands in). The client area's footer links to the staff login only when
// `show_staff_login_link` asks for it (guest/system/company says so). Runs on SQLite and, with TEST_DATABASE_URL,
// PostgreSQL + Redis.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { senderOf } from '../../../src/modules/email/layout.ts';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectError, expectInvalid } from '../../helpers/assertions.ts';
import { TestSmtp } from '../../helpers/smtp.ts';
import { asClient, asStaff, makeProduct, staffWith } from '../../helpers/selling-fixtures.ts';

const smtp = new TestSmtp();
let t: TestApp;
let productId: number;

beforeAll(async () => {
  await smtp.start();
  t = await createTestApp({ SMTP_URL: smtp.url, SMTP_TIMEOUT_MS: '2000', MAIL_FROM: 'billing@acme.example', PUBLIC_URL: 'https://billing.acme.example' });
  productId = await makeProduct(t, { title: 'Pro plan' });
});

afterAll(async () => {
  await t.close();
  await smtp.stop();
});

async function checkoutMail(): Promise<{ subject: string; html: string; text: string; sender: string }> {
  const client = await t.createClient();
  expect((await asClient(t, client.token, 'cart/add_item', { id: productId, period: '1M' })).body.error).toBeNull();
  expect((await asClient(t, client.token, 'cart/checkout')).body.error).toBeNull();
  const row = await t.services.db.selectFrom('emails').selectAll().where('client_id', '=', client.id).where('template', '=', 'invoice_created').executeTakeFirstOrThrow();
  return { subject: row.subject, html: row.html, text: row.text, sender: row.sender };
}

/** Delivers everything queued so far and forgets it, so a test reads only its own messages. */
async function flush(): Promise<void> {
  const pending = await t.services.db.selectFrom('outbox_messages').select('id').where('status', '=', 'pending').execute();
  const before = smtp.received.length;
  await t.services.outbox.runDue();
  if (pending.length > 0) await smtp.waitFor(before + pending.length);
  smtp.received.length = 0;
}

async function totpIssuer(): Promise<string | null> {
  const client = await t.createClient();
  const browser = await t.login('client', client.email, client.password);
  const setup = await t.call('/api/client/profile/totp_setup', {}, { browser, csrf: true });
  return new URL(setup.result.otpauth_url as string).searchParams.get('issuer');
}

describe('before the company is named', () => {
  it('no mail, no TOTP issuer and no company answer says "Tollgate"', async () => {
    const company = await t.call('/api/guest/system/company');
    expect(company.result).toMatchObject({ name: null, logo_url: null, show_staff_login_link: false });
    const mail = await checkoutMail();
    expect(mail.sender).toBe('billing@acme.example');
    for (const part of [mail.subject, mail.html, mail.text, mail.sender]) expect(part).not.toContain('Tollgate');
    expect(await totpIssuer()).toBe('billing.acme.example');
    const test = (await t.admin('email/email_get', { id: (await t.admin('email/send_test', { to: 'ops@example.com' })).result })).result;
    expect(test.subject).toBe('Test message from billing.acme.example');
    expect(`${test.content_html}${test.content_text}`).not.toContain('Tollgate');
  });
});

describe('once the company is named', () => {
  beforeAll(async () => {
    const update = await t.admin('system/settings_update', {
      company_name: 'Acme API Ltd',
      company_logo_url: 'https://acme.example/logo.png',
      company_address_1: '1 Road',
      company_postcode: '10115',
      company_city: 'Berlin',
      company_country: 'DE',
    });
    expect(update.body.error).toBeNull();
  });

  it('every mail is sent under the company name, with the logo on top and the address at the foot', async () => {
    await flush();
    const mail = await checkoutMail();
    expect(mail.sender).toBe('"Acme API Ltd" <billing@acme.example>');
    expect(mail.html).toContain('<img src="https://acme.example/logo.png" alt="Acme API Ltd"');
    expect(mail.html).toMatch(/<strong[^>]*>Acme API Ltd<\/strong>/);
    expect(mail.html).toContain('Acme API Ltd<br>1 Road<br>10115 Berlin<br>DE');
    expect(mail.text).toContain('1 Road');
    for (const part of [mail.subject, mail.html, mail.text, mail.sender]) expect(part).not.toContain('Tollgate');

    // As received over SMTP: one From address, the company's name on it.
    await t.services.outbox.runDue();
    const received = await smtp.waitFor(1);
    const invoiceMail = received.find((message) => message.parsed.subject === mail.subject)!;
    expect(invoiceMail.parsed.from?.value).toEqual([{ address: 'billing@acme.example', name: 'Acme API Ltd' }]);
  });

  it('the preview and the test message carry the brand too', async () => {
    const preview = await t.admin('email/template_render', { code: 'invoice_paid' });
    expect(preview.result.html).toContain('Acme API Ltd');
    expect(preview.result.html).toContain('https://acme.example/logo.png');
    const id = (await t.admin('email/send_test', { to: 'ops@example.com' })).result as number;
    const test = (await t.admin('email/email_get', { id })).result;
    expect(test).toMatchObject({ subject: 'Test message from Acme API Ltd', sender: '"Acme API Ltd" <billing@acme.example>' });
  });

  it('the TOTP issuer is the company name', async () => {
    expect(await totpIssuer()).toBe('Acme API Ltd');
  });

  it('a company name cannot add an address or a header to the From line', async () => {
    expect(senderOf('Billing <billing@acme.example>', { name: 'Evil" <x@evil.example>\r\nBcc: y@evil.example', logoUrl: null, address: [] })).toBe(
      '"Evil\\" <x@evil.example> Bcc: y@evil.example" <billing@acme.example>',
    );
    expect((await t.admin('system/settings_update', { company_name: 'Evil" <x@evil.example>, z@evil.example' })).body.error).toBeNull();
    await flush();
    const id = (await t.admin('email/send_test', { to: 'ops@example.com' })).result as number;
    await t.services.outbox.runDue();
    const [received] = await smtp.waitFor(1);
    expect(received!.envelope.to).toEqual(['ops@example.com']);
    expect(received!.parsed.from?.value).toEqual([{ address: 'billing@acme.example', name: 'Evil" <x@evil.example>, z@evil.example' }]);
    expect(id).toBeGreaterThan(0);
    await t.admin('system/settings_update', { company_name: 'Acme API Ltd' });
  });
});

describe('the staff login link in the client area', () => {
  it('is off by default and on only when show_staff_login_link is set; only staff with system.manage set it', async () => {
    expect((await t.call('/api/guest/system/company')).result.show_staff_login_link).toBe(false);
    expectInvalid(await t.admin('system/settings_update', { show_staff_login_link: 'sometimes' }), 'show_staff_login_link');
    const viewer = await staffWith(t, ['email.view']);
    expectError(await asStaff(t, viewer, 'system/settings_update', { show_staff_login_link: true }), 403);
    expect((await t.admin('system/settings_update', { show_staff_login_link: true })).body.error).toBeNull();
    expect((await t.call('/api/guest/system/company')).result.show_staff_login_link).toBe(true);
    expect((await t.admin('system/settings_get')).result.show_staff_login_link).toBe(true);
    expect((await t.admin('system/settings_update', { show_staff_login_link: false })).body.error).toBeNull();
    expect((await t.call('/api/guest/system/company')).result.show_staff_login_link).toBe(false);
  });
});
