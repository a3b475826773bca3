// Paying by card in a real Chromium, through the local Stripe stand-in's hosted Checkout page: "Pay by card" on an
// unpaid invoice, Stripe's page, the return page that waits for the webhook and then shows the invoice paid; the saved
// card and the auto-pay switch on the profile; the guest invoice page and a canceled payment; the staff transactions
// page. Tollgate and the stand-in each listen on a real socket.
/// <reference lib="dom" />
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { ensureWebBuilt, WEB_DIST_DIR } from '../../src/http/web-build.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD, createTestApp, type TestApp } from '../helpers/app.ts';
import { StripeStandIn } from '../helpers/stripe-server.ts';
import { makeProduct } from '../helpers/selling-fixtures.ts';
import { purchase, type Purchase } from '../helpers/stripe-fixtures.ts';

const CHROMIUM = '/usr/bin/chromium';
const SHOTS = join(process.cwd(), 'test-results');
/** In this helper's port range: PUBLIC_URL (Stripe's return URLs) must be known before the server starts. */
const PORT = 41311;

describe.runIf(existsSync(CHROMIUM))('paying by card in the browser', () => {
  let t: TestApp;
  let stripe: StripeStandIn;
  let web: FastifyInstance;
  let browser: Browser;
  let page: Page;
  let bought: Purchase;
  let email: string;
  const base = `http://127.0.0.1:${PORT}`;
  const settled = (target: Page) => target.waitForFunction(() => document.querySelectorAll('[aria-busy="true"]').length === 0);

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    stripe = new StripeStandIn();
    await stripe.start();
    t = await createTestApp(stripe.env({ PUBLIC_URL: base }));
    await ensureWebBuilt();
    web = buildApp(t.services, { webDistDir: WEB_DIST_DIR });
    await web.listen({ host: '127.0.0.1', port: PORT });
    stripe.webhookUrl = `${base}/webhooks/stripe`;
    // The customer is back well before Stripe's webhook: the return page must wait for it.
    stripe.webhookDelayMs = 2500;

    const plan = await makeProduct(t, { title: 'Card plan' });
    const client = await t.createClient({ first_name: 'Grace' });
    email = (await t.services.clients.get(client.id)).email;
    bought = await purchase(t, plan, client);

    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
    });
    page = await (await browser.newContext({ viewport: { width: 1200, height: 900 } })).newPage();
    page.setDefaultTimeout(20_000);
  });

  afterAll(async () => {
    await browser?.close();
    await web?.close();
    await t?.close();
    await stripe?.stop();
  });

  it('pays an invoice by card on Stripe\'s page and comes back to the invoice, which turns paid when the webhook arrives', async () => {
    await page.goto(`${base}/login`);
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password').fill('Client-Passw0rd');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByText(`Signed in as ${email}`).waitFor();

    await page.goto(`${base}/invoices/${bought.invoiceId}`);
    await page.getByRole('heading', { name: 'Pay by card' }).waitFor();
    await page.getByRole('button', { name: 'Pay by card' }).click();
    // Stripe's hosted page (the stand-in).
    await page.getByRole('heading', { name: 'Stripe Checkout (test)' }).waitFor();
    expect(page.url().startsWith(`${stripe.url}/pay/cs_test_`)).toBe(true);
    expect(await page.locator('#amount').textContent()).toBe('10.00 USD');
    await page.screenshot({ path: join(SHOTS, 'stripe-checkout.png'), fullPage: true });
    await page.getByRole('button', { name: 'Pay', exact: true }).click();

    // Back in the client area before the webhook: the page waits, then shows the invoice paid.
    await page.waitForURL(`${base}/invoices/${bought.invoiceId}?payment=success`);
    await page.getByText('Waiting for Stripe to confirm your payment…').waitFor();
    expect((await t.admin('invoice/get', { id: bought.invoiceId })).result.status).toBe('unpaid');
    // No second "Pay by card" while the first payment is being confirmed.
    expect(await page.getByRole('button', { name: 'Pay by card' }).count()).toBe(0);
    await page.getByText('Payment received — thank you.').waitFor();
    await page.getByRole('main').getByText('Paid', { exact: true }).first().waitFor();
    await settled(page);
    await page.screenshot({ path: join(SHOTS, 'client-card-paid.png'), fullPage: true });
    expect((await t.admin('invoice/get', { id: bought.invoiceId })).result.status).toBe('paid');
    expect(await page.getByRole('button', { name: 'Pay by card' }).count()).toBe(0);
  });

  it('shows the saved card on the profile, switches auto-pay off and removes the card', async () => {
    await page.goto(`${base}/profile`);
    const section = page.getByRole('region', { name: 'Cards and automatic payment' });
    await section.getByText('VISA •••• 4242').waitFor();
    const autoPay = section.getByLabel('Pay renewals automatically with my saved card');
    expect(await autoPay.isChecked()).toBe(true);
    await autoPay.uncheck();
    await section.getByText('Renewals will wait for you to pay them.').waitFor();
    expect((await t.call('/api/client/profile/get', {}, { basic: ['client', await t.services.clients.apiToken(bought.clientId)] })).result.auto_pay).toBe(false);
    await page.screenshot({ path: join(SHOTS, 'client-cards.png'), fullPage: true });

    await section.getByRole('button', { name: 'Remove the card ending in 4242' }).click();
    await section.getByRole('button', { name: 'Remove card' }).click();
    await section.getByText('Card removed.').waitFor();
    await section.getByText('No saved card.').waitFor();
    expect(stripe.requests.some((request) => request.path.endsWith('/detach'))).toBe(true);
  });

  it('lets a payer without an account pay from the invoice link, and says so when they cancel on Stripe', async () => {
    const second = await purchase(t, (await t.services.db.selectFrom('products').select('id').executeTakeFirstOrThrow()).id, {
      id: bought.clientId,
      token: await t.services.clients.apiToken(bought.clientId),
    });
    const guest = await (await browser.newContext()).newPage();
    guest.setDefaultTimeout(20_000);
    await guest.goto(`${base}/invoice/${second.hash}`);
    await guest.getByRole('heading', { name: `Pro forma ${second.invoiceId}` }).waitFor();
    await guest.getByRole('button', { name: 'Pay by card' }).click();
    await guest.getByRole('heading', { name: 'Stripe Checkout (test)' }).waitFor();
    await guest.getByRole('button', { name: 'Cancel' }).click();
    await guest.waitForURL(`${base}/invoices/${second.invoiceId}?payment=canceled`);
    // The client area asks the payer to log in first; the invoice is still unpaid.
    expect((await t.admin('invoice/get', { id: second.invoiceId })).result.status).toBe('unpaid');
    await guest.goto(`${base}/invoice/${second.hash}?payment=canceled`);
    await guest.getByText('The card payment was canceled; nothing was charged.').waitFor();
    await guest.getByRole('main').getByText('Unpaid', { exact: true }).first().waitFor();
    await settled(guest);
    await guest.screenshot({ path: join(SHOTS, 'guest-invoice.png'), fullPage: true });
  });

  it('shows staff the card payment among the transactions', async () => {
    const staff = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    staff.setDefaultTimeout(20_000);
    await staff.goto(`${base}/admin`);
    await staff.getByLabel('E-mail').fill(ADMIN_EMAIL);
    await staff.getByLabel('Password').fill(ADMIN_PASSWORD);
    await staff.getByRole('button', { name: 'Log in' }).click();
    await staff.getByRole('heading', { name: 'Dashboard' }).waitFor();
    await staff.getByRole('link', { name: 'Transactions', exact: true }).click();
    await staff.getByRole('heading', { name: 'Transactions' }).waitFor();
    const { number } = await t.services.db.selectFrom('invoices').select('number').where('id', '=', bought.invoiceId).executeTakeFirstOrThrow();
    const row = staff.getByRole('row').filter({ hasText: `Invoice ${number}` });
    await row.first().waitFor();
    expect(await row.first().textContent()).toContain('stripe');
    expect(await row.first().textContent()).toContain('10.00');
    await staff.getByLabel('Status').selectOption('failed');
    await staff.getByRole('button', { name: 'Filter' }).click();
    await staff.getByText('No transactions match.').waitFor();
    await settled(staff);
    await staff.screenshot({ path: join(SHOTS, 'admin-transactions.png'), fullPage: true });

    // A partial refund from the invoice page goes through Stripe; the invoice stays paid.
    await staff.goto(`${base}/admin/invoices/${bought.invoiceId}`);
    await staff.getByLabel('Refund amount (optional; empty refunds the rest)').fill('2.50');
    await staff.getByRole('button', { name: 'Refund…' }).click();
    await staff.getByRole('button', { name: 'Refund', exact: true }).click();
    await staff.getByText('Refunded 2.50.').waitFor();
    expect(stripe.requestsTo('POST', '/v1/refunds').at(-1)!.body).toMatchObject({ amount: '250' });
    expect((await t.admin('invoice/get', { id: bought.invoiceId })).result.status).toBe('paid');
    await staff.getByRole('link', { name: 'Payments and refunds of this invoice' }).click();
    await staff.getByRole('heading', { name: 'Transactions' }).waitFor();
    await staff.getByRole('cell', { name: '2.50 USD' }).waitFor();
  });
});
