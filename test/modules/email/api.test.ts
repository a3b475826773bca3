// The e-mail actions (CONTRACT §10) with the embedded default (no SMTP_URL): messages stay `not_sent` and the log
// says "mail to <address>: <subject>". Staff read the log, resend, edit templates with a preview and send a test;
// clients read their own messages only. Each action's failure paths: missing and wrong-typed parameters, wrong role,
// missing permission, another client's message, unknown template, templates that would break. Runs on SQLite and,
// with TEST_DATABASE_URL, on PostgreSQL + Redis.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { inTransaction } from '../../../src/platform/transaction.ts';
import { MAIL_TEMPLATE_CODES } from '../../../src/modules/email/templates.ts';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectError, expectInvalid } from '../../helpers/assertions.ts';
import { asClient, asStaff, makeProduct, staffWith } from '../../helpers/selling-fixtures.ts';

let t: TestApp;
let productId: number;
let viewer: string;
let nobody: string;
let alice: { id: number; token: string; email: string };
let bob: { id: number; token: string; email: string };

beforeAll(async () => {
  t = await createTestApp();
  productId = await makeProduct(t, { title: 'Pro plan' });
  viewer = await staffWith(t, ['email.view']);
  nobody = await staffWith(t, ['client.view']);
  alice = await t.createClient({ first_name: 'Alice' });
  bob = await t.createClient({ first_name: 'Bob' });
});

afterAll(async () => {
  await t.close();
});

async function activeOrder(clientId: number): Promise<number> {
  const created = await t.admin('order/create', { client_id: clientId, product_id: productId, period: '1M', activate: true });
  expect(created.body.error).toBeNull();
  return created.result as number;
}

describe('without SMTP_URL', () => {
  it('keeps messages as not_sent and logs "mail to <address>: <subject>"', async () => {
    await activeOrder(alice.id);
    const lines: string[] = [];
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      lines.push(String(chunk));
      return true;
    });
    try {
      expect(await t.services.outbox.runDue()).toBe(1);
    } finally {
      spy.mockRestore();
    }
    expect(lines.map((line) => JSON.parse(line) as { msg: string }).map((line) => line.msg)).toEqual([`mail to ${alice.email}: Pro plan is active`]);
    const list = await t.admin('email/email_get_list', { client_id: alice.id });
    expect(list.result.list).toEqual([expect.objectContaining({ template: 'order_activated', status: 'not_sent', attempts: 1, recipients: alice.email })]);
    expect(await t.services.outbox.runDue(new Date(Date.now() + 7 * 86_400_000))).toBe(0);
  });
});

describe('admin/email mail log', () => {
  it('lists newest first, filters by client and status, and pages', async () => {
    await activeOrder(bob.id);
    await activeOrder(bob.id);
    const all = await t.admin('email/email_get_list', { client_id: bob.id, per_page: 1 });
    expect(all.result).toMatchObject({ page: 1, per_page: 1, pages: 2, total: 2 });
    const [newest] = all.result.list;
    expect(newest).toEqual({
      id: expect.any(Number),
      client_id: bob.id,
      staff_id: null,
      template: 'order_activated',
      sender: t.services.config.mailFrom,
      recipients: bob.email,
      to_name: expect.stringMatching(/^Bob /),
      subject: 'Pro plan is active',
      content_html: expect.stringContaining('your order Pro plan is active'),
      content_text: expect.stringContaining('your order Pro plan is active'),
      status: 'pending',
      attempts: 0,
      last_error: null,
      message_id: expect.stringMatching(/^<[0-9a-f]{32}@localhost>$/),
      next_attempt_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
      created_at: expect.stringMatching(/Z$/),
      sent_at: null,
      updated_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
    });
    const second = await t.admin('email/email_get_list', { client_id: bob.id, per_page: 1, page: 2 });
    expect(second.result.list[0].id).toBeLessThan(newest.id);
    expect((await t.admin('email/email_get_list', { client_id: bob.id, status: 'pending' })).result.total).toBe(2);
    expect((await t.admin('email/email_get_list', { client_id: bob.id, status: 'sent' })).result.total).toBe(0);
    await t.services.outbox.runDue();
    expect((await t.admin('email/email_get_list', { client_id: bob.id, status: 'not_sent' })).result.total).toBe(2);
    expect((await t.admin('email/email_get_list', { client_id: 999_999 })).result).toMatchObject({ list: [], total: 0 });
    const got = await t.admin('email/email_get', { id: newest.id });
    expect(got.result).toMatchObject({ id: newest.id, status: 'not_sent', next_attempt_at: null, sent_at: expect.stringMatching(/Z$/) });
  });

  it('answers 422 for bad parameters and 404 for an unknown message', async () => {
    expectInvalid(await t.admin('email/email_get_list', { status: 'delivered' }), 'status');
    expectInvalid(await t.admin('email/email_get_list', { client_id: 'abc' }), 'client_id');
    expectInvalid(await t.admin('email/email_get_list', { page: 0 }), 'page');
    expectInvalid(await t.admin('email/email_get', {}), 'id');
    expectInvalid(await t.admin('email/email_get', { id: 'x' }), 'id');
    expectInvalid(await t.admin('email/email_resend', { id: -1 }), 'id');
    expectError(await t.admin('email/email_get', { id: 999_999 }), 404);
    expectError(await t.admin('email/email_resend', { id: 999_999 }), 404);
  });

  it('resends a message as a new one with a new Message-ID', async () => {
    const [original] = (await t.admin('email/email_get_list', { client_id: bob.id })).result.list;
    const resent = await t.admin('email/email_resend', { id: original.id });
    expect(resent.result).toBeGreaterThan(original.id);
    const copy = (await t.admin('email/email_get', { id: resent.result })).result;
    expect(copy).toMatchObject({ status: 'pending', subject: original.subject, content_html: original.content_html, recipients: bob.email, client_id: bob.id });
    expect(copy.message_id).not.toBe(original.message_id);
    expect((await t.admin('email/email_get', { id: original.id })).result.status).toBe('not_sent');
  });

  it('needs email.view to read and email.manage to resend, edit or send; refuses other roles', async () => {
    const [one] = (await t.admin('email/email_get_list', {})).result.list;
    expect((await asStaff(t, viewer, 'email/email_get_list', {})).status).toBe(200);
    expect((await asStaff(t, viewer, 'email/email_get', { id: one.id })).status).toBe(200);
    expect((await asStaff(t, viewer, 'email/template_get_list', {})).status).toBe(200);
    expect((await asStaff(t, viewer, 'email/template_render', { code: 'invoice_paid' })).status).toBe(200);
    expectError(await asStaff(t, viewer, 'email/email_resend', { id: one.id }), 403);
    expectError(await asStaff(t, viewer, 'email/template_update', { code: 'invoice_paid', enabled: false }), 403);
    expectError(await asStaff(t, viewer, 'email/send_test', { to: 'ops@example.com' }), 403);
    expectError(await asStaff(t, nobody, 'email/email_get_list', {}), 403);
    expectError(await asStaff(t, nobody, 'email/email_get', { id: one.id }), 403);
    expectError(await t.call('/api/admin/email/email_get_list', {}), 201, 401);
    expectError(await t.call('/api/admin/email/email_get_list', {}, { basic: ['client', alice.token] }), 203, 401);
    expectError(await t.call('/api/admin/email/email_get_list', {}, { basic: ['admin', alice.token] }), 205, 401);
    expectError(await t.call('/api/guest/email/get_list', {}), 740, 404);
  });
});

describe('client/email', () => {
  it('shows a client their own messages only; another client’s is 404', async () => {
    const own = await asClient(t, alice.token, 'email/get_list', {});
    expect(own.result.total).toBeGreaterThan(0);
    for (const mail of own.result.list) expect(mail.recipients).toBe(alice.email);
    expect(Object.keys(own.result.list[0]).toSorted((a, b) => a.localeCompare(b))).toEqual(
      ['content_html', 'content_text', 'created_at', 'id', 'recipients', 'sender', 'status', 'subject', 'sent_at', 'template', 'updated_at'].toSorted((a, b) => a.localeCompare(b)),
    );
    const mine = own.result.list[0].id as number;
    expect((await asClient(t, alice.token, 'email/get', { id: mine })).result).toMatchObject({ id: mine, recipients: alice.email });
    const [bobs] = (await asClient(t, bob.token, 'email/get_list', {})).result.list;
    expectError(await asClient(t, alice.token, 'email/get', { id: bobs.id }), 404);
    expectError(await asClient(t, alice.token, 'email/get', { id: 999_999 }), 404);
    expectInvalid(await asClient(t, alice.token, 'email/get', {}), 'id');
    expectInvalid(await asClient(t, alice.token, 'email/get_list', { per_page: 501 }), 'per_page');
    expectError(await t.call('/api/client/email/get_list', {}), 201, 401);
    expectError(await t.call('/api/client/email/get_list', {}, { basic: ['admin', t.adminToken] }), 203, 401);
  });

  it('never lists the messages of staff or of nobody in particular', async () => {
    const sent = await t.admin('email/send_test', { to: alice.email });
    const own = await asClient(t, alice.token, 'email/get_list', { per_page: 500 });
    expect(own.result.list.map((mail: { id: number }) => mail.id)).not.toContain(sent.result);
    expectError(await asClient(t, alice.token, 'email/get', { id: sent.result }), 404);
  });
});

describe('admin/email templates', () => {
  it('lists every template of §10 with when it is sent and its placeholders', async () => {
    const list = await t.admin('email/template_get_list', {});
    expect(list.result.map((tpl: { code: string }) => tpl.code)).toEqual([...MAIL_TEMPLATE_CODES]);
    for (const code of ['client_signup', 'client_password_reset', 'client_password_changed', 'invoice_created', 'invoice_paid', 'invoice_payment_failed', 'invoice_reminder', 'order_activated', 'order_renewal_reminder', 'order_suspended', 'order_canceled', 'apikey_reset', 'apikey_disabled', 'usage_threshold', 'staff_password_reset', 'client_email_change']) {
      expect(list.result.some((tpl: { code: string }) => tpl.code === code), code).toBe(true);
    }
    const reset = await t.admin('email/template_get', { code: 'client_password_reset' });
    expect(reset.result).toMatchObject({ code: 'client_password_reset', enabled: true, customized: false, required: true, updated_at: null });
    expect(Object.keys(reset.result.vars)).toEqual(expect.arrayContaining(['name', 'client_area_url', 'reset_url', 'expires_minutes']));
    expectError(await t.admin('email/template_get', { code: 'no_such_template' }), 404);
    expectInvalid(await t.admin('email/template_get', {}), 'code');
  });

  it('renders a preview with sample values and links at PUBLIC_URL', async () => {
    const preview = await t.admin('email/template_render', { code: 'invoice_created' });
    expect(preview.result.subject).toBe('Pro forma 42: 10.00 USD');
    expect(preview.result.html).toContain('href="http://localhost:8080/invoices/42"');
    expect(preview.result.html).toContain('Hello Jane Doe');
    expect(preview.result.text).toContain('View and pay the invoice: http://localhost:8080/invoices/42');
    const reset = await t.admin('email/template_render', { code: 'client_password_reset' });
    expect(reset.result.html).toContain('[link hidden]');
    expectError(await t.admin('email/template_render', { code: 'nope' }), 404);
    // A draft is previewed without being saved, and checked as a save would be.
    const draft = await t.admin('email/template_render', { code: 'invoice_created', subject: 'Draft {{invoice_number}}', content: '<p>Pay <a href="{{invoice_url}}">here</a></p>' });
    expect(draft.result.subject).toBe('Draft Pro forma 42');
    expect(draft.result.text).toContain('Pay here: http://localhost:8080/invoices/42');
    expect((await t.admin('email/template_get', { code: 'invoice_created' })).result.customized).toBe(false);
    expectInvalid(await t.admin('email/template_render', { code: 'invoice_created', content: '{{secret_key}}' }), 'content');
  });

  it('applies an edited template to the next message, escaping what it fills in', async () => {
    const updated = await t.admin('email/template_update', {
      code: 'order_suspended',
      subject: 'Paused: {{order_title}}',
      content: '<p>Dear {{name}}, {{order_title}} is paused.</p>{{#reason}}<p>Why: {{reason}}</p>{{/reason}}',
    });
    expect(updated.result).toBe(true);
    expect((await t.admin('email/template_get', { code: 'order_suspended' })).result).toMatchObject({ customized: true, enabled: true, subject: 'Paused: {{order_title}}' });
    const client = await t.createClient({ first_name: '<b>Carol</b>' });
    const order = await activeOrder(client.id);
    await t.admin('order/suspend', { id: order, reason: 'a <i>reason</i>' });
    const [mail] = (await t.admin('email/email_get_list', { client_id: client.id })).result.list;
    expect(mail.subject).toBe('Paused: Pro plan');
    expect(mail.content_html).toContain('Dear &lt;b&gt;Carol&lt;/b&gt;');
    expect(mail.content_html).toContain('Why: a &lt;i&gt;reason&lt;/i&gt;');
    expect(mail.content_text).toContain('Dear <b>Carol</b>');
  });

  it('switches a notice off and on', async () => {
    expect((await t.admin('email/template_update', { code: 'order_canceled', enabled: false })).result).toBe(true);
    const client = await t.createClient();
    const order = await activeOrder(client.id);
    expect((await t.admin('order/cancel', { id: order })).body.error).toBeNull();
    const templates = async () => (await t.admin('email/email_get_list', { client_id: client.id })).result.list.map((mail: { template: string }) => mail.template);
    expect(await templates()).toEqual(['order_activated']);
    await t.admin('order/uncancel', { id: order });
    await t.admin('email/template_update', { code: 'order_canceled', enabled: true });
    await t.admin('order/cancel', { id: order });
    expect(await templates()).toEqual(['order_canceled', 'order_activated']);
  });

  it('refuses templates that would break: unknown placeholders, broken sections, a subject on two lines, switching off a reset mail', async () => {
    expectInvalid(await t.admin('email/template_update', { code: 'invoice_paid', content: '<p>{{api_key}}</p>' }), 'content');
    expectInvalid(await t.admin('email/template_update', { code: 'invoice_paid', subject: 'Receipt {{password}}' }), 'subject');
    expectInvalid(await t.admin('email/template_update', { code: 'invoice_paid', content: '{{#invoice_url}}<p>open' }), 'content');
    expectInvalid(await t.admin('email/template_update', { code: 'invoice_paid', content: '<p>x</p>{{/invoice_url}}' }), 'content');
    expectInvalid(await t.admin('email/template_update', { code: 'invoice_paid', subject: 'Receipt\r\nBcc: x@example.com' }), 'subject');
    expectInvalid(await t.admin('email/template_update', { code: 'invoice_paid', subject: '' }), 'subject');
    expectInvalid(await t.admin('email/template_update', { code: 'invoice_paid', content: '   ' }), 'content');
    expectInvalid(await t.admin('email/template_update', { code: 'invoice_paid', enabled: 'sometimes' }), 'enabled');
    expectInvalid(await t.admin('email/template_update', {}), 'code');
    expectError(await t.admin('email/template_update', { code: 'nope', enabled: true }), 404);
    expectError(await t.admin('email/template_update', { code: 'client_password_reset', enabled: false }), 409);
    expectError(await t.admin('email/template_update', { code: 'staff_password_reset', enabled: false }), 409);
    expect((await t.admin('email/template_get', { code: 'invoice_paid' })).result.customized).toBe(false);
  });
});

describe('admin/email/send_test', () => {
  it('queues a test message to the address given and returns its id', async () => {
    const sent = await t.admin('email/send_test', { to: 'ops@example.com' });
    expect(sent.result).toEqual(expect.any(Number));
    const mail = (await t.admin('email/email_get', { id: sent.result })).result;
    expect(mail).toMatchObject({ template: 'test', recipients: 'ops@example.com', client_id: null, staff_id: 1, subject: `Test message from ${new URL(t.services.config.publicUrl).hostname}`, status: 'pending' });
    await t.services.outbox.runDue();
    expect((await t.admin('email/email_get', { id: sent.result })).result.status).toBe('not_sent');
    expectInvalid(await t.admin('email/send_test', {}), 'to');
    expectInvalid(await t.admin('email/send_test', { to: 42 }), 'to');
    expectInvalid(await t.admin('email/send_test', { to: 'ops@example.com,evil@example.com' }), 'to');
  });
});

describe('the change and its mail are one', () => {
  it('queues nothing when the change rolls back', async () => {
    const client = await t.createClient();
    await expect(
      inTransaction(t.services.db, async (trx) => {
        await t.services.mail.queue(trx, { template: 'client_password_changed', to: { email: client.email }, clientId: client.id, vars: { login_url: 'x' } });
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect((await t.admin('email/email_get_list', { client_id: client.id })).result.total).toBe(0);
  });
});
