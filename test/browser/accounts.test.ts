// Account security in a real Chromium: "Forgot password?" end to end for a customer and for staff (the link is read
// from a real SMTP server and opened in the browser), and two-factor login: turned on from the profile page with the
// QR code drawn in the page, then a login that the server answers 207 until the code is typed.
/// <reference lib="dom" />
import { existsSync, mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { totpCode } from '../../src/modules/account/two-factor.ts';
import { ensureWebBuilt, WEB_DIST_DIR } from '../../src/http/web-build.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { TestSmtp } from '../helpers/smtp.ts';

const CHROMIUM = '/usr/bin/chromium';
const SHOTS = join(process.cwd(), 'test-results');

/** A free port on 127.0.0.1, so PUBLIC_URL (known before the app is built) is where the browser finds the UI. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

describe.runIf(existsSync(CHROMIUM))('account security in the browser', () => {
  const smtp = new TestSmtp();
  let t: TestApp;
  let web: FastifyInstance;
  let base: string;
  let browser: Browser;
  let page: Page;

  /** Delivers the outbox and returns the `route` link (`…#/<route>/<token>`) in the last message to `address`. */
  async function linkMailedTo(address: string, route = 'reset'): Promise<string> {
    await t.services.outbox.runDue();
    const mail = smtp.received.filter((item) => item.envelope.to.includes(address)).at(-1);
    expect(mail, `a mail to ${address}`).toBeDefined();
    const link = new RegExp(`href="([^"]+#/${route}/[^"]+)"`).exec(String(mail!.parsed.html))?.[1];
    expect(link).toBeDefined();
    return link!.replaceAll('&amp;', '&');
  }

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    await smtp.start();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    t = await createTestApp({ SMTP_URL: smtp.url, PUBLIC_URL: base });
    await ensureWebBuilt();
    web = buildApp(t.services, { webDistDir: WEB_DIST_DIR });
    await web.listen({ host: '127.0.0.1', port });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
    });
  });

  afterEach(async (context) => {
    if (context.task.result?.state !== 'fail' || page === undefined) return;
    const name = context.task.name.replace(/[^a-z0-9]+/gi, '-').slice(0, 60);
    await page.screenshot({ path: join(SHOTS, `failure-accounts-${name}.png`), fullPage: true }).catch(() => undefined);
  });

  afterAll(async () => {
    await browser?.close();
    await web?.close();
    await t?.close();
    await smtp.stop();
  });

  async function freshPage(): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
    page = await context.newPage();
    page.setDefaultTimeout(20_000);
    return page;
  }

  it('a customer who forgot the password resets it from the mailed link and logs in with the new one', async () => {
    const client = await t.createClient();
    await freshPage();
    await page.goto(`${base}/login`);
    await page.getByRole('link', { name: 'Forgot password?' }).click();
    await page.getByRole('heading', { name: 'Forgot password?' }).waitFor();
    await page.getByLabel('E-mail').fill(client.email);
    await page.getByRole('button', { name: 'Send the reset link' }).click();
    await page.getByText('If this address belongs to an account, a reset link is on its way.').waitFor();

    const link = await linkMailedTo(client.email);
    expect(link.startsWith(`${base}/#/reset/`)).toBe(true);
    await page.goto(link);
    await page.getByRole('heading', { name: 'Reset your password' }).waitFor();
    await page.getByLabel('New password', { exact: true }).fill('Found-It-Again1');
    await page.getByLabel('Repeat the new password').fill('Found-It-Again1');
    await page.getByRole('button', { name: 'Set the new password' }).click();
    await page.getByText('Your password has been changed').waitFor();
    await page.screenshot({ path: join(SHOTS, 'client-reset-done.png'), fullPage: true });
    await page.getByRole('button', { name: 'Go to the login page' }).click();
    // The token is gone from the address bar.
    expect(page.url()).toBe(`${base}/login`);

    await page.getByLabel('E-mail').fill(client.email);
    await page.getByLabel('Password').fill('Found-It-Again1');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByText(`Signed in as ${client.email}`).waitFor();

    // The same link again: refused with the contract's message.
    await page.goto(link);
    await page.getByLabel('New password', { exact: true }).fill('Found-It-Again2');
    await page.getByLabel('Repeat the new password').fill('Found-It-Again2');
    await page.getByRole('button', { name: 'Set the new password' }).click();
    await page.getByText('The link has expired or you have already reset your password').waitFor();
  });

  it('staff reset the password from the admin login page', async () => {
    const email = 'browser-staff@example.com';
    expect((await t.admin('staff/create', { email, password: 'Staff-Passw0rd', name: 'Browser staff', admin_group_id: 1 })).status).toBe(200);
    await freshPage();
    await page.goto(`${base}/admin`);
    await page.getByRole('button', { name: 'Forgot password?' }).click();
    await page.getByLabel('E-mail').last().fill(email);
    await page.getByRole('button', { name: 'Send the reset link' }).click();
    await page.getByText('If this address belongs to an account, a reset link is on its way.').waitFor();

    const link = await linkMailedTo(email);
    expect(link.startsWith(`${base}/admin#/reset/`)).toBe(true);
    await page.goto(link);
    await page.getByRole('heading', { name: 'Reset your staff password' }).waitFor();
    await page.getByLabel('New password', { exact: true }).fill('Staff-Found-It1');
    await page.getByLabel('Repeat the new password').fill('Staff-Found-It1');
    await page.getByRole('button', { name: 'Set the new password' }).click();
    await page.getByRole('button', { name: 'Go to the login page' }).click();
    await page.getByRole('heading', { name: 'Staff log in' }).waitFor();
    await page.getByLabel('E-mail').first().fill(email);
    await page.getByLabel('Password').fill('Staff-Found-It1');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
  });

  it('a customer turns on two-factor login with the QR code, then logs in with a code', async () => {
    const client = await t.createClient();
    await freshPage();
    await page.goto(`${base}/login`);
    await page.getByLabel('E-mail').fill(client.email);
    await page.getByLabel('Password').fill(client.password);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByText(`Signed in as ${client.email}`).waitFor();
    // The login then leads to the keys: wait for it, or it overtakes the click on Profile (buyer.test.ts says more).
    await page.waitForURL(/\/(keys|cart)$/);
    await page.getByRole('link', { name: 'Profile' }).click();
    await page.getByRole('button', { name: 'Turn on two-factor login' }).click();

    const qr = page.getByTestId('totp-qr');
    await qr.waitFor();
    expect(await qr.getAttribute('src')).toMatch(/^data:image\/svg\+xml/);
    // The picture really is a drawn QR code: an SVG with paths, rendered at its size.
    expect(decodeURIComponent((await qr.getAttribute('src'))!)).toContain('<path');
    expect((await qr.boundingBox())!.width).toBeGreaterThan(100);
    await page.screenshot({ path: join(SHOTS, 'client-two-factor-setup.png'), fullPage: true });
    const secret = (await page.getByTestId('totp-secret').textContent())!.trim();
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    await page.getByLabel('Code from the app').fill(totpCode(secret, Date.now()));
    await page.getByRole('button', { name: 'Turn on', exact: true }).click();
    const codes = page.getByTestId('recovery-codes').getByRole('listitem');
    await codes.first().waitFor();
    expect(await codes.count()).toBe(10);
    await page.screenshot({ path: join(SHOTS, 'client-two-factor-on.png'), fullPage: true });
    await page.getByRole('button', { name: 'I have saved them' }).click();
    await page.getByTestId('totp-state').getByText('on', { exact: true }).waitFor();

    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('link', { name: 'Log in' }).click();
    await page.getByLabel('E-mail').fill(client.email);
    await page.getByLabel('Password').fill(client.password);
    await page.getByRole('button', { name: 'Log in' }).click();
    // The server answered 207: the page asks for the code instead of showing an error.
    const codeField = page.getByLabel('Two-factor code');
    await codeField.waitFor();
    expect(await page.getByText(`Signed in as ${client.email}`).count()).toBe(0);
    await codeField.fill('000000' === totpCode(secret, Date.now(), 1) ? '111111' : '000000');
    await page.getByRole('button', { name: 'Verify and log in' }).click();
    await page.getByRole('alert').first().waitFor();
    expect(await page.getByRole('alert').first().textContent()).toContain('not correct');
    // The step after the one used to turn it on: a code not yet spent.
    await codeField.fill(totpCode(secret, Date.now(), 1));
    await page.getByRole('button', { name: 'Verify and log in' }).click();
    await page.getByText(`Signed in as ${client.email}`).waitFor();
  });

  it('a customer changes the e-mail address from the profile and confirms it from the mailed link', async () => {
    const client = await t.createClient();
    const fresh = `moved-${client.id}@example.com`;
    await freshPage();
    await page.goto(`${base}/login`);
    await page.getByLabel('E-mail').fill(client.email);
    await page.getByLabel('Password').fill(client.password);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByText(`Signed in as ${client.email}`).waitFor();
    // The login then leads to the keys: wait for it, or it overtakes the click on Profile (buyer.test.ts says more).
    await page.waitForURL(/\/(keys|cart)$/);
    await page.getByRole('link', { name: 'Profile' }).click();
    await page.getByLabel('New e-mail address').fill(fresh);
    await page.getByRole('form', { name: 'Change e-mail address' }).getByLabel('Current password').fill(client.password);
    await page.getByRole('button', { name: 'Send the confirmation link' }).click();
    await page.getByText(`We sent a confirmation link to ${fresh}`).waitFor();

    const link = await linkMailedTo(fresh, 'confirm-email');
    expect(link.startsWith(`${base}/#/confirm-email/`)).toBe(true);
    await page.goto(link);
    await page.getByTestId('email-confirmed').waitFor();
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('heading', { name: 'Profile' }).waitFor();
    await page.getByText(`E-mail: ${fresh}`).waitFor();
  });
});
