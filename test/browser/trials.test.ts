// Free trials in a real Chromium (issue 24 item 7): the plans page says "7-day free trial" and whether a card is
// needed; after a trial checkout the client's orders and API keys pages show the trial badge with its end date.
// Screenshots land in test-results/.
/// <reference lib="dom" />
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { createPlan } from '../helpers/apikey.ts';
import { HAVE_CHROMIUM, launchChromium, newStaffPage, serveWeb, settled, SHOTS } from '../helpers/browser.ts';
import { asClient } from '../helpers/selling-fixtures.ts';

const MONTHLY = { type: 'recurrent', recurrent: { '1M': { price: '10.00', setup: '0', enabled: true } } };

describe.runIf(HAVE_CHROMIUM)('free trials on the plans, orders and keys pages', () => {
  let t: TestApp;
  let web: FastifyInstance;
  let base: string;
  let browser: Browser;
  let page: Page;
  let plan: number;
  let buyer: Awaited<ReturnType<TestApp['createClient']>>;

  beforeAll(async () => {
    t = await createTestApp();
    ({ web, base } = await serveWeb(t));
    browser = await launchChromium();
    page = await newStaffPage(browser);
    buyer = await t.createClient();
    plan = await createPlan(t, { trial: { days: 7, requires_card: false } });
    const cardPlan = await createPlan(t, { trial: { days: 14, requires_card: true } });
    for (const id of [plan, cardPlan]) expect((await t.admin('product/update', { id, pricing: MONTHLY })).body.error).toBeNull();
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await web?.close();
    await t?.close();
  });

  it('the plans page names the trial and whether a card is needed', async () => {
    await page.goto(`${base}/`);
    await page.getByTestId('plan-trial').first().waitFor();
    await settled(page);
    const wording = await page.getByTestId('plan-trial').allTextContents();
    expect(wording).toEqual(expect.arrayContaining(['7-day free trial, no card needed', '14-day free trial, card required']));
    await page.screenshot({ path: join(SHOTS, 'plans-trial.png'), fullPage: true });
  });

  it('the orders and keys pages show the trial badge with its end date', async () => {
    expect((await asClient(t, buyer.token, 'cart/add_item', { id: plan, period: '1M' })).body.error).toBeNull();
    const checkout = await asClient(t, buyer.token, 'cart/checkout');
    expect(checkout.body.error).toBeNull();
    const ends = ((await t.admin('order/get', { id: checkout.result.order_id })).result.trial_ends_at as string).slice(0, 10);

    await page.goto(`${base}/login`);
    await page.getByLabel('E-mail').fill(buyer.email);
    await page.getByLabel('Password').fill(buyer.password);
    await page.getByLabel('Password').press('Enter');
    await page.waitForURL(/\/(keys|cart|)$/);
    await page.goto(`${base}/orders`);
    const badge = page.getByTestId('order-trial-badge');
    await badge.waitFor();
    expect((await badge.textContent())?.trim()).toBe(`Free trial until ${ends}`);
    await page.screenshot({ path: join(SHOTS, 'orders-trial.png'), fullPage: true });

    await page.goto(`${base}/keys`);
    const keyBadge = page.getByTestId('key-trial-badge');
    await keyBadge.waitFor();
    expect((await keyBadge.textContent())?.trim()).toBe(`Free trial until ${ends}`);
    expect(await page.getByTestId('key-validity').textContent()).toContain('Valid');
    await page.screenshot({ path: join(SHOTS, 'keys-trial.png'), fullPage: true });
  });
});
