// Free trials in a real Chromium (issue 24): a trial that needs a card, checked out by a client with no saved card,
// goes through Stripe Checkout in setup mode (the local stand-in's hosted page) and the order shows the trial once
// Stripe's webhook arrives, or — the client back without saving a card — is cancelled from the orders page; the client area's banner reminds of a trial ending within three days ("— add a card",
// linking to the profile's "Add a card"); staff see the trial on the orders list and the order page, extend it and
// end it now. Tollgate and the stand-in each listen on a real socket (free ports). Screenshots land in test-results/.
/// <reference lib="dom" />
import { createServer } from 'node:net';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { ensureWebBuilt, WEB_DIST_DIR } from '../../src/http/web-build.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { HAVE_CHROMIUM, launchChromium, loginAsAdmin, newStaffPage, settled, SHOTS } from '../helpers/browser.ts';
import { asClient, makeProduct } from '../helpers/selling-fixtures.ts';
import { StripeStandIn } from '../helpers/stripe-server.ts';

/** A port free now: PUBLIC_URL (Stripe's return URLs) must be known before Tollgate starts. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

describe.runIf(HAVE_CHROMIUM)('free trials with a card, the trial banner and the staff trial controls', () => {
  let t: TestApp;
  let stripe: StripeStandIn;
  let web: FastifyInstance;
  let browser: Browser;
  let page: Page;
  let base: string;
  let cardPlan: number;
  let shortPlan: number;

  beforeAll(async () => {
    stripe = new StripeStandIn();
    await stripe.start();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    t = await createTestApp(stripe.env({ PUBLIC_URL: base }));
    await ensureWebBuilt();
    web = buildApp(t.services, { webDistDir: WEB_DIST_DIR });
    await web.listen({ host: '127.0.0.1', port });
    stripe.webhookUrl = `${base}/webhooks/stripe`;
    // The client is back before Stripe's webhook: the orders page must wait for it.
    stripe.webhookDelayMs = 1500;
    cardPlan = await makeProduct(t, { title: 'Card trial plan', type: 'apikey', config: { trial: { days: 14, requires_card: true } } });
    shortPlan = await makeProduct(t, { title: 'Short trial plan', type: 'apikey', config: { trial: { days: 2, requires_card: false } } });
    browser = await launchChromium();
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await web?.close();
    await t?.close();
    await stripe?.stop();
  });

  async function logIn(client: { email: string; password: string }): Promise<void> {
    page = await newStaffPage(browser);
    await page.goto(`${base}/login`);
    await page.getByLabel('E-mail').fill(client.email);
    await page.getByLabel('Password').fill(client.password);
    await page.getByLabel('Password').press('Enter');
    await page.getByText(`Signed in as ${client.email}`).waitFor();
  }

  /** A new client checks out the card trial with no card saved: Stripe's hosted page in setup mode (the stand-in). */
  async function checkOutWithoutCard(): Promise<{ token: string }> {
    const client = await t.createClient();
    expect((await asClient(t, client.token, 'cart/add_item', { id: cardPlan, period: '1M' })).body.error).toBeNull();
    await logIn(client);
    await page.goto(`${base}/cart`);
    await page.getByRole('button', { name: 'Check out' }).click();
    await page.getByRole('heading', { name: 'Stripe Checkout (test): save a card' }).waitFor();
    return client;
  }

  it('checks out a card trial without a card: Stripe saves the card, then the order shows the trial', async () => {
    // Stripe's hosted page in setup mode: nothing is charged.
    const client = await checkOutWithoutCard();
    expect(page.url().startsWith(`${stripe.url}/pay/cs_test_`)).toBe(true);
    await page.screenshot({ path: join(SHOTS, 'stripe-setup.png'), fullPage: true });
    await page.getByRole('button', { name: 'Save card' }).click();
    await page.waitForURL(`${base}/orders?setup=success`);
    const badge = page.getByTestId('order-trial-badge');
    await badge.waitFor();
    const order = (await asClient(t, client.token, 'order/get_list')).result.list[0];
    expect(order).toMatchObject({ status: 'active', on_trial: true });
    expect((await badge.textContent())?.trim()).toBe(`Free trial until ${String(order.trial_ends_at).slice(0, 10)}`);
    expect((await asClient(t, client.token, 'payment_method/get_list')).result).toHaveLength(1);
    await page.screenshot({ path: join(SHOTS, 'orders-trial-after-setup.png'), fullPage: true });
  });

  it('an order whose trial waits for a card is cancelled from the orders page when the client leaves Stripe without saving one', async () => {
    const client = await checkOutWithoutCard();
    // Back without saving a card: the order waits, with "Add a card" and "Cancel order".
    await page.goto(`${base}/orders`);
    await page.getByTestId('order-trial-waiting').waitFor();
    const waiting = (await asClient(t, client.token, 'order/get_list')).result.list[0];
    expect(waiting).toMatchObject({ status: 'pending_setup', trial_awaiting_card: true });
    await page.getByRole('button', { name: `Cancel order ${waiting.id}` }).click();
    await page.getByTestId('order-trial-waiting').waitFor({ state: 'detached' });
    expect((await asClient(t, client.token, 'order/get', { id: waiting.id })).result).toMatchObject({ status: 'canceled', trial_awaiting_card: false });
    await settled(page);
  });

  it('reminds of a trial ending within three days, and "add a card" leads to the profile\'s Add a card', async () => {
    const client = await t.createClient();
    expect((await asClient(t, client.token, 'cart/add_item', { id: shortPlan, period: '1M' })).body.error).toBeNull();
    const checkout = await asClient(t, client.token, 'cart/checkout');
    const ends = String((await t.admin('order/get', { id: checkout.result.order_id })).result.trial_ends_at).slice(0, 10);
    await logIn(client);
    const banner = page.getByTestId('trial-banner');
    await banner.waitFor();
    expect((await banner.textContent())?.replace(/\s+/g, ' ').trim()).toBe(`Your free trial of Short trial plan ends on ${ends} — add a card to keep it running.`);
    await page.screenshot({ path: join(SHOTS, 'trial-banner.png'), fullPage: true });
    await banner.getByRole('link', { name: 'add a card' }).click();
    await page.waitForURL(`${base}/profile#cards-title`);
    await page.getByRole('button', { name: 'Add a card' }).click();
    await page.getByRole('heading', { name: 'Stripe Checkout (test): save a card' }).waitFor();
    await page.getByRole('button', { name: 'Save card' }).click();
    await page.waitForURL(`${base}/profile?setup=success`);
    await expect.poll(async () => (await asClient(t, client.token, 'payment_method/get_list')).result.length, { timeout: 15_000 }).toBe(1);
    // With a card on file the banner says it will be charged.
    await page.reload();
    await banner.waitFor();
    expect(await banner.textContent()).toContain('your saved card will then be charged');
  });

  it('staff see the trial on the orders list and the order page, extend it and end it now', async () => {
    const client = await t.createClient();
    expect((await asClient(t, client.token, 'cart/add_item', { id: shortPlan, period: '1M' })).body.error).toBeNull();
    const orderId = (await asClient(t, client.token, 'cart/checkout')).result.order_id as number;
    const before = String((await t.admin('order/get', { id: orderId })).result.trial_ends_at);
    page = await newStaffPage(browser);
    await loginAsAdmin(page, base);
    await page.goto(`${base}/admin/orders?client_id=${client.id}`);
    const note = page.getByTestId('order-trial-note').first();
    await note.waitFor();
    expect((await note.textContent())?.trim()).toBe(`Trial until ${before.slice(0, 10)}`);
    await page.goto(`${base}/admin/orders/${orderId}`);
    const section = page.getByTestId('order-trial');
    await section.waitFor();
    await settled(page);
    expect(await section.textContent()).toContain('No: the order is suspended when the trial ends');
    await section.getByLabel('Extend by (days)').fill('5');
    await section.getByRole('button', { name: 'Extend trial' }).click();
    await section.getByText('The trial now ends on').waitFor();
    const extended = String((await t.admin('order/get', { id: orderId })).result.trial_ends_at);
    expect(Date.parse(extended) - Date.parse(before)).toBe(5 * 86_400_000);
    await page.screenshot({ path: join(SHOTS, 'admin-order-trial.png'), fullPage: true });
    await section.getByRole('button', { name: 'End trial now' }).click();
    await page.getByRole('button', { name: 'End trial now' }).last().click();
    await expect.poll(async () => (await t.admin('order/get', { id: orderId })).result.status, { timeout: 15_000 }).toBe('suspended');
    await page.getByTestId('order-trial').waitFor({ state: 'detached' });
  });
});
