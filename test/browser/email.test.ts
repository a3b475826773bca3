// The mail pages in a real Chromium, against a real SMTP server: staff send a test message from the admin panel
// (it arrives), read the log, resend, edit a template with a preview; a client reads their own messages. Screenshots
// land in test-results/.
/// <reference lib="dom" />
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { HAVE_CHROMIUM, launchChromium, loginAsAdmin, serveWeb, settled, SHOTS } from '../helpers/browser.ts';
import { TestSmtp } from '../helpers/smtp.ts';
import { makeProduct } from '../helpers/selling-fixtures.ts';

describe.runIf(HAVE_CHROMIUM)('mail pages in the browser', () => {
  let t: TestApp;
  let web: FastifyInstance;
  let base: string;
  let browser: Browser;
  let staff: Page;
  let client: Page;
  const smtp = new TestSmtp();
  let customer: { id: number; email: string; password: string };

  beforeAll(async () => {
    await smtp.start();
    t = await createTestApp({ SMTP_URL: smtp.url, COMPANY_NAME: 'Acme API Ltd' });
    ({ web, base } = await serveWeb(t));

    const productId = await makeProduct(t, { title: 'Pro plan' });
    customer = await t.createClient({ first_name: 'Grace', last_name: 'Hopper' });
    expect((await t.admin('order/create', { client_id: customer.id, product_id: productId, period: '1M', activate: true })).body.error).toBeNull();
    // The activation notice goes out now, so the server's inbox starts empty for the tests.
    await t.services.outbox.runDue();
    await smtp.waitFor(1);
    smtp.received.length = 0;

    browser = await launchChromium();
    staff = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    client = await (await browser.newContext({ viewport: { width: 1200, height: 900 } })).newPage();
    staff.setDefaultTimeout(20_000);
    client.setDefaultTimeout(20_000);
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await web?.close();
    await t?.close();
    await smtp.stop();
  });

  it('lets staff send a test message, see it delivered, and resend a notice', async () => {
    await loginAsAdmin(staff, base);
    await staff.getByRole('link', { name: 'Mail', exact: true }).click();
    await staff.getByRole('heading', { name: 'Mail', exact: true }).waitFor();
    await settled(staff);
    expect(await staff.getByRole('table').textContent()).toContain('Pro plan is active');

    await staff.getByLabel('Send a test message to').fill('ops@example.com');
    await staff.getByRole('button', { name: 'Send test' }).click();
    await staff.getByText(/Test message #\d+ queued for ops@example.com/).waitFor();
    await t.services.outbox.runDue();
    const [delivered] = await smtp.waitFor(1);
    expect(delivered!.envelope.to).toEqual(['ops@example.com']);
    expect(delivered!.parsed.subject).toBe('Test message from Acme API Ltd');
    await staff.getByRole('button', { name: 'Refresh' }).click();
    await settled(staff);
    const testRow = staff.getByRole('row').filter({ hasText: 'Test message from Acme API Ltd' });
    // Waited for, not counted at once: `settled` can pass before the refresh has started, while the table still shows
    // the reload that Send test began during the delivery (pending, one attempt).
    await testRow.getByText('Sent', { exact: true }).waitFor();
    expect(await testRow.getByText('Sent', { exact: true }).count()).toBe(1);
    await staff.screenshot({ path: join(SHOTS, 'admin-mail.png'), fullPage: true });

    // One message: its details and its HTML in a sandboxed frame; resend it.
    await staff.getByRole('row').filter({ hasText: 'Pro plan is active' }).getByRole('link', { name: 'Pro plan is active' }).click();
    await staff.getByRole('heading', { name: 'Pro plan is active' }).waitFor();
    const frame = staff.frameLocator('iframe[title="The message as HTML"]');
    await frame.getByText('your order Pro plan is active').waitFor();
    expect(await staff.locator('iframe[title="The message as HTML"]').getAttribute('sandbox')).toBe('');
    await staff.getByRole('button', { name: 'Resend as a new message' }).click();
    await staff.waitForURL(/\/admin\/email\/\d+$/);
    await staff.getByText('Pending', { exact: true }).first().waitFor();
    await t.services.outbox.runDue();
    await smtp.waitFor(2);
    expect(smtp.received[1]!.parsed.subject).toBe('Pro plan is active');
    expect(smtp.received[1]!.envelope.to).toEqual([customer.email]);
  });

  it('lets staff edit a template with a preview, and refuses a placeholder the template does not have', async () => {
    await staff.goto(`${base}/admin/email/templates`);
    await staff.getByRole('heading', { name: 'Mail templates' }).waitFor();
    await staff.getByRole('link', { name: 'Order suspended' }).click();
    await staff.getByRole('heading', { name: 'Order suspended' }).waitFor();
    await staff.getByLabel('Subject').fill('Paused: {{order_title}}');
    await staff.getByLabel('Content (HTML)').fill('<p>Dear {{name}}, {{order_title}} is paused. {{api_key}}</p>');
    await staff.getByRole('button', { name: 'Preview' }).click();
    await staff.getByRole('alert').first().waitFor();
    expect(await staff.getByRole('alert').first().textContent()).toContain('{{api_key}}');
    await staff.getByLabel('Content (HTML)').fill('<p>Dear {{name}}, {{order_title}} is paused.</p>');
    await staff.getByRole('button', { name: 'Preview' }).click();
    await staff.getByText('Subject: Paused: Pro plan').waitFor();
    await staff.frameLocator('iframe[title="Preview of the message"]').getByText('Dear Jane Doe, Pro plan is paused.').waitFor();
    await staff.getByRole('button', { name: 'Save template' }).click();
    await staff.getByText('Saved. The next message of this kind uses it.').waitFor();
    await staff.frameLocator('iframe[title="Preview of the message"]').getByText('Dear Jane Doe, Pro plan is paused.').waitFor();
    await staff.screenshot({ path: join(SHOTS, 'admin-mail-template.png'), fullPage: true });
    expect((await t.admin('email/template_get', { code: 'order_suspended' })).result).toMatchObject({ subject: 'Paused: {{order_title}}', customized: true });
  });

  it('shows a client their own messages', async () => {
    await client.goto(`${base}/login`);
    await client.getByLabel('E-mail').fill(customer.email);
    await client.getByLabel('Password').fill(customer.password);
    await client.getByRole('button', { name: 'Log in' }).click();
    await client.getByRole('link', { name: 'Messages' }).click();
    await client.getByRole('heading', { name: 'Messages' }).waitFor();
    await settled(client);
    const rows = client.getByRole('row').filter({ hasText: 'Pro plan is active' });
    expect(await rows.count()).toBe(2);
    expect(await client.getByRole('table').textContent()).not.toContain('Test message');
    await rows.first().getByRole('link').click();
    await client.getByRole('heading', { name: 'Pro plan is active' }).waitFor();
    await client.frameLocator('iframe[title="The message"]').getByText('your order Pro plan is active').waitFor();
    await client.screenshot({ path: join(SHOTS, 'client-messages.png'), fullPage: true });
  });
});
