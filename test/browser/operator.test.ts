// Issue 21 (operator side) in a real Chromium: the admin banner while no mail server is configured and its link to
// Settings → Mail; the Settings page saying for each secret which value is in force, refusing a placeholder key
// under its field, and clearing a stored value; an invoice named "Pro forma <id>"; the client area under the
// operator's name (title, header, footer) with the staff login link only when asked for. Screenshots land in
// test-results/.
/// <reference lib="dom" />
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { HAVE_CHROMIUM, launchChromium, loginAsAdmin, newStaffPage, serveWeb, settled, SHOTS } from '../helpers/browser.ts';
import { TestSmtp } from '../helpers/smtp.ts';
import { asClient, makeProduct } from '../helpers/selling-fixtures.ts';

describe.runIf(HAVE_CHROMIUM)('operator settings in the browser', () => {
  let t: TestApp;
  let web: FastifyInstance;
  let base: string;
  let browser: Browser;
  let staff: Page;
  const smtp = new TestSmtp();

  beforeAll(async () => {
    await smtp.start();
    // A webhook secret from the environment, no SMTP: the banner shows and the Settings page has one of each source.
    t = await createTestApp({ STRIPE_WEBHOOK_SECRET: 'whsec_FromTheEnvironment0000000', PUBLIC_URL: 'https://billing.acme.example' });
    ({ web, base } = await serveWeb(t));
    browser = await launchChromium();
    staff = await newStaffPage(browser);
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await web?.close();
    await t?.close();
    await smtp.stop();
  });

  it('shows "N messages waiting: no mail server is configured" and links to Settings → Mail; saving a server removes it', async () => {
    await t.admin('email/send_test', { to: 'ops@example.com' });
    await t.services.outbox.runDue();
    await loginAsAdmin(staff, base);
    const banner = staff.getByTestId('mail-banner');
    await banner.waitFor();
    expect(await banner.textContent()).toContain('1 message waiting: no mail server is configured.');
    await staff.screenshot({ path: join(SHOTS, 'operator-mail-banner.png'), fullPage: true });
    await banner.getByRole('link', { name: 'Settings → Mail' }).click();
    await staff.getByRole('heading', { name: 'Mail', exact: true }).waitFor();
    await settled(staff);
    expect(await staff.evaluate(() => document.activeElement?.id)).toBe('settings-mail');

    await staff.getByLabel('SMTP server (smtp://user:password@host:587)').fill(smtp.url);
    await staff.getByRole('button', { name: 'Save settings' }).click();
    await staff.getByText('Settings saved.', { exact: false }).waitFor();
    await settled(staff);
    // The next page asks again: the server is there, the banner is gone, and the waiting message went out.
    await staff.getByRole('link', { name: 'Dashboard', exact: true }).click();
    await staff.getByRole('heading', { name: 'Dashboard' }).waitFor();
    await settled(staff);
    expect(await staff.getByTestId('mail-banner').count()).toBe(0);
    await t.services.outbox.runDue();
    expect((await smtp.waitFor(1)).map((mail) => mail.envelope.to)).toEqual([['ops@example.com']]);
  });

  it('says which value of each secret is in force, refuses a placeholder key under its field, and clears a stored one', async () => {
    await staff.goto(`${base}/admin/settings`);
    await staff.getByRole('heading', { name: 'Settings', exact: true }).waitFor();
    await settled(staff);
    const hint = (name: string) => staff.locator(`[data-secret="${name}"] .hint`).textContent();
    const hintSays = (name: string, text: string) =>
      staff.locator(`[data-secret="${name}"] .hint`).filter({ hasText: text }).waitFor({ timeout: 10_000 });
    expect(await hint('stripe_webhook_secret')).toBe("In force: the environment's value (STRIPE_WEBHOOK_SECRET).");
    expect(await hint('stripe_secret_key')).toBe('Not set.');
    expect(await hint('smtp_url')).toBe('In force: the value stored here (it overrides the environment).');

    await staff.getByLabel('Stripe secret key').fill('sk_live_…');
    await staff.getByRole('button', { name: 'Save settings' }).click();
    await staff.locator('[data-secret="stripe_secret_key"]').getByText(/must be a Stripe secret or restricted key/).waitFor();
    expect((await t.admin('system/settings_get')).result.stripe_secret_key_set).toBe(false);

    await staff.getByLabel('Stripe secret key').fill('');
    await staff.getByLabel('Stripe webhook signing secret').fill('whsec_StoredInTheBrowser00000000');
    await staff.getByRole('button', { name: 'Save settings' }).click();
    await staff.getByText('Settings saved.', { exact: false }).waitFor();
    await settled(staff);
    // The page reloads the settings after the save: wait for the hint to say so (a wrong hint fails on the timeout).
    await hintSays('stripe_webhook_secret', 'In force: the value stored here (it overrides the environment).');
    expect(await hint('stripe_webhook_secret')).toBe('In force: the value stored here (it overrides the environment).');
    await staff.screenshot({ path: join(SHOTS, 'operator-settings-secrets.png'), fullPage: true });

    await staff.getByRole('button', { name: 'Clear the stored Stripe webhook signing secret' }).click();
    await staff.locator('[data-secret="stripe_webhook_secret"]').getByText('Stored value cleared.').waitFor();
    await settled(staff);
    // onCleared reloads the settings after the message shows: wait for the hint rather than racing that reload.
    await hintSays('stripe_webhook_secret', "In force: the environment's value (STRIPE_WEBHOOK_SECRET).");
    expect(await hint('stripe_webhook_secret')).toBe("In force: the environment's value (STRIPE_WEBHOOK_SECRET).");
    expect(await t.services.settings.secret('stripe_webhook_secret')).toBe('whsec_FromTheEnvironment0000000');
  });

  it('shows the client area under the operator\'s name, an unpaid invoice as "Pro forma <id>", and the staff link only when asked', async () => {
    const client = await t.createClient();
    const product = await makeProduct(t, { title: 'Pro plan' });
    await asClient(t, client.token, 'cart/add_item', { id: product, period: '1M' });
    const invoiceId = (await asClient(t, client.token, 'cart/checkout')).result.invoice_id as number;
    await t.admin('system/settings_update', { company_name: 'Acme API Ltd' });

    const page = await newStaffPage(browser);
    await page.goto(`${base}/`);
    await page.getByRole('link', { name: 'Acme API Ltd' }).first().waitFor();
    await settled(page);
    expect(await page.title()).toBe('Acme API Ltd');
    const footer = page.getByTestId('client-footer');
    expect(await footer.textContent()).toBe('Acme API Ltd');
    expect(await footer.getByRole('link').count()).toBe(0);
    expect(await page.locator('body').textContent()).not.toContain('Tollgate');
    await page.screenshot({ path: join(SHOTS, 'operator-client-brand.png'), fullPage: true });

    await t.admin('system/settings_update', { show_staff_login_link: true });
    await page.reload();
    await page.getByTestId('client-footer').getByRole('link', { name: 'Staff login' }).waitFor();

    // The invoice's one name, in the client area and in the admin list.
    await page.getByRole('link', { name: 'Log in' }).first().click();
    await page.getByLabel('E-mail').fill(client.email);
    await page.getByLabel('Password').fill(client.password);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('link', { name: 'Invoices', exact: true }).click();
    await page.getByRole('link', { name: `Pro forma ${invoiceId}` }).click();
    await page.getByRole('heading', { name: `Pro forma ${invoiceId}` }).waitFor();
    expect(await page.getByRole('main').textContent()).toContain(`quote the reference Pro forma ${invoiceId}`);
    await staff.goto(`${base}/admin/invoices`);
    await staff.getByRole('link', { name: `Pro forma ${invoiceId}` }).waitFor();
  });
});
