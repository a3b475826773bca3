// Issue 20, M4 in the admin panel, in a real Chromium: the profile page no longer edits the e-mail address in place;
// it offers the change of address (new address + current password, + code with two-factor login on), and the link
// mailed to the new address opens /admin#/confirm-email/<token>, which confirms it.
/// <reference lib="dom" />
import type { FastifyInstance } from 'fastify';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { HAVE_CHROMIUM, launchChromium, newStaffPage, serveWeb, settled } from '../helpers/browser.ts';
import { Mailbox } from '../helpers/mailbox.ts';
import { TestSmtp } from '../helpers/smtp.ts';

const PUBLIC_URL = 'https://billing.example.com';
const PASSWORD = 'Panel-Passw0rd-1';

describe.runIf(HAVE_CHROMIUM)('the staff change of e-mail in the panel', () => {
  const smtp = new TestSmtp();
  let t: TestApp;
  let box: Mailbox;
  let web: FastifyInstance;
  let base: string;
  let browser: Browser;

  beforeAll(async () => {
    await smtp.start();
    t = await createTestApp({ SMTP_URL: smtp.url, PUBLIC_URL });
    box = new Mailbox(t, smtp, PUBLIC_URL);
    ({ web, base } = await serveWeb(t));
    browser = await launchChromium();
  }, 300_000);
  afterAll(async () => {
    await browser?.close();
    await web?.close();
    await t?.close();
    await smtp.stop();
  });

  it('profile: the name is edited in place, the address through a confirmation link', async () => {
    const email = 'panel-mover@example.com';
    const id = (await t.admin('staff/create', { email, password: PASSWORD, name: 'Panel Mover', admin_group_id: 1 })).result as number;
    const page = await newStaffPage(browser);
    await page.goto(`${base}/admin`);
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();

    await page.goto(`${base}/admin/profile`);
    await page.getByRole('heading', { name: 'Change e-mail address' }).waitFor();
    await settled(page);
    // The details form has no e-mail field any more.
    expect(await page.locator('form[aria-labelledby="admin-details"] input[type="email"]').count()).toBe(0);

    // A wrong password is shown on the field, and nothing is mailed.
    const form = page.locator('form[aria-labelledby="staff-email-title"]');
    await form.getByLabel('New e-mail address').fill('panel-moved@example.com');
    await form.getByLabel('Current password').fill('Wrong-Passw0rd-9');
    await form.getByRole('button', { name: 'Send the confirmation link' }).click();
    await form.getByText('is not correct').first().waitFor();
    expect(await box.to('panel-moved@example.com')).toHaveLength(0);

    await form.getByLabel('Current password').fill(PASSWORD);
    await form.getByRole('button', { name: 'Send the confirmation link' }).click();
    await form.getByText('We sent a confirmation link to panel-moved@example.com').waitFor();
    expect((await t.services.staff.get(id)).email).toBe(email);

    const token = await box.lastLink('panel-moved@example.com', '/admin', 'confirm-email');
    await page.goto(`${base}/admin#/confirm-email/${token}`);
    await page.getByTestId('email-confirmed').waitFor();
    expect((await t.services.staff.get(id)).email).toBe('panel-moved@example.com');
    // The token leaves the address bar with the Continue button.
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('heading', { name: 'Your profile' }).waitFor();
    expect(page.url()).not.toContain(token);
    expect((await box.last(email)).parsed.subject).toBe('Your staff e-mail address was changed');
  }, 120_000);
});
