// Selling in several currencies in a real Chromium (issue 26): a guest on the plans page picks euros, the plans show
// their euro prices (converted and rounded to x.99, or the plan's own), the cart shows the same currency and totals,
// and the shop's currency list is offered only when there is more than one.
/// <reference lib="dom" />
import type { FastifyInstance } from 'fastify';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { HAVE_CHROMIUM, launchChromium, newStaffPage, serveWeb, settled } from '../helpers/browser.ts';

describe.runIf(HAVE_CHROMIUM)('the plans page and the cart in the chosen currency', () => {
  let t: TestApp;
  let web: FastifyInstance;
  let base: string;
  let browser: Browser;

  beforeAll(async () => {
    t = await createTestApp();
    ({ web, base } = await serveWeb(t));
    browser = await launchChromium();
    for (const [title, pricing] of [
      ['Starter', { type: 'recurrent', recurrent: { '1M': { price: '10.00', setup: '0', enabled: true } } }],
      ['Pro', { type: 'recurrent', recurrent: { '1M': { price: '20.00', setup: '0', enabled: true } }, prices: {} }],
    ] as const) {
      const id = (await t.admin('product/prepare', { title, type: 'custom' })).result as number;
      expect((await t.admin('product/update', { id, status: 'enabled', pricing })).body.error).toBeNull();
    }
  }, 300_000);
  afterAll(async () => {
    await browser?.close();
    await web?.close();
    await t?.close();
  });

  it('offers no choice with one currency, then shows plans and the cart in euros once picked', async () => {
    const page = await newStaffPage(browser);
    await page.goto(`${base}/`);
    await page.getByRole('heading', { name: 'Plans' }).waitFor();
    await page.getByRole('article').filter({ hasText: 'Starter' }).getByText('10.00 USD').first().waitFor();
    expect(await page.getByLabel('Currency').count()).toBe(0);

    // A second currency: euros at 0.9, rounded up to x.99; the Pro plan gets its own euro price.
    await t.admin('currency/create', { code: 'EUR', conversion_rate: '0.9', price_rounding: { step: '1', ending: '0.99' } });
    const pro = ((await t.admin('product/get_list', { search: 'Pro' })).result.list as Array<{ id: number }>)[0]!.id;
    await t.admin('product/update', { id: pro, pricing: { prices: { EUR: { recurrent: { '1M': { price: '17.50' } } } } } });
    await page.reload();
    await page.getByLabel('Currency').selectOption('EUR');
    await settled(page);
    await page.getByRole('article').filter({ hasText: 'Starter' }).getByText('9.99 EUR').first().waitFor();
    await page.getByRole('article').filter({ hasText: 'Pro' }).getByText('17.50 EUR').first().waitFor();

    await page.getByRole('button', { name: 'Add to cart: Starter' }).click();
    await page.getByRole('heading', { name: 'Cart' }).waitFor();
    await settled(page);
    const total = page.getByRole('row').filter({ hasText: 'Total' });
    await total.getByText('9.99 EUR').first().waitFor();
    // The choice lasts: back on the plans page the picker still says euros.
    await page.goto(`${base}/`);
    await settled(page);
    await expect.poll(() => page.getByLabel('Currency').inputValue()).toBe('EUR');
  }, 180_000);
});
