// The admin home in a real Chromium (issue 25 items 1–3): the figures the API computed (the page sums nothing), the
// uPlot revenue chart with its table, a figure's list and the range form; axe finds no serious or critical violation at
// 1280 and 390 px, and on the phone width the navigation folds behind a "Menu" button that opens and closes from the
// keyboard (aria-expanded). UPDATE_SCREENSHOTS=1 writes docs/screenshots/dashboard-{1280,390}.png.
/// <reference lib="dom" />
import type { FastifyInstance } from 'fastify';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { HAVE_CHROMIUM, launchChromium, loginAsAdmin, newStaffPage, serveWeb, settled } from '../helpers/browser.ts';
import { reviewAtBothWidths } from '../helpers/page-review.ts';
import { makeProduct } from '../helpers/selling-fixtures.ts';
import { seedBook } from '../modules/stats/seed.ts';

describe.runIf(HAVE_CHROMIUM)('the dashboard, in the browser', () => {
  let t: TestApp;
  let web: FastifyInstance;
  let base: string;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    t = await createTestApp();
    ({ web, base } = await serveWeb(t));
    browser = await launchChromium();
    page = await newStaffPage(browser);
    const names = ['Ada Lovelace', 'Grace Hopper', 'Alan Turing', 'Edsger Dijkstra', 'Barbara Liskov', 'Donald Knuth', 'Leslie Lamport', 'Frances Allen'];
    const clients: number[] = [];
    for (const name of names) {
      const [first, last] = name.split(' ');
      clients.push((await t.createClient({ first_name: first, last_name: last })).id);
    }
    const products = [await makeProduct(t, { title: 'Starter' }), await makeProduct(t, { title: 'Scale' })];
    await seedBook(t.services.db, clients, products, Date.now(), 7);
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await web?.close();
    await t?.close();
  });

  const figures = () => page.getByTestId('dashboard-figures');
  const ready = async (): Promise<void> => {
    await figures().waitFor();
    await page.locator('.uplot-holder canvas').first().waitFor();
    await settled(page);
  };

  it('shows the figures the API computed, the revenue chart and its table', async () => {
    await loginAsAdmin(page, base);
    await ready();
    const answer = (await t.admin('stats/dashboard')).result;
    const mrr = await page.getByTestId('figure-mrr').textContent();
    for (const row of answer.mrr) expect(mrr).toContain(`${row.amount} ${row.currency}`);
    const net = await page.getByTestId('figure-net-revenue').textContent();
    for (const row of answer.net_revenue) expect(net).toContain(`${row.net} ${row.currency}`);
    expect(await page.getByTestId('figure-failed').textContent()).toContain(`${answer.failed_payments.recovered} recovered`);
    // Dollars and euros: each money figure adds its total in the default currency, and the page says how it converted.
    expect(answer.default_currency).toBe('USD');
    expect(net).toContain(`All currencies: ${answer.in_default_currency.net_revenue.net} USD`);
    expect(mrr).toContain(`All currencies: ${answer.in_default_currency.mrr.amount} USD`);
    expect(await page.getByTestId('conversion-note').textContent()).toBe(answer.conversion);
    await page.getByTestId('revenue-chart-all').waitFor();
    const topTable = page.getByTestId('top-customers');
    expect(await topTable.locator('thead').textContent()).toContain('In USD');
    expect(await topTable.locator('tbody tr').first().textContent()).toContain(`${answer.top_customers[0].default_amount} USD`);
    expect(await page.getByTestId('range-line').textContent()).toBe(`${answer.from} to ${answer.to}, compared with ${answer.previous_from} to ${answer.previous_to}.`);
    // One chart per currency; the canvas is hidden from screen readers, its table is not.
    const usd = page.getByTestId('revenue-chart-USD');
    expect(await usd.locator('.uplot-holder').getAttribute('aria-hidden')).toBe('true');
    await usd.getByText('Figures: Net revenue by month, USD').click();
    const rows = usd.locator('details tbody tr');
    expect(await rows.count()).toBe(12);
    const months = answer.revenue_by_month.filter((row: { currency: string }) => row.currency === 'USD');
    expect(await rows.last().textContent()).toContain(months[11].net);
    const top = await page.getByTestId('top-customers').locator('tbody tr').count();
    expect(top).toBe(answer.top_customers.length);
    expect(top).toBeGreaterThan(0);
  });

  it('has no serious or critical axe violation at 1280 and 390 px', async () => {
    await page.goto(`${base}/admin`);
    expect(await reviewAtBothWidths(page, 'dashboard', ready)).toEqual({ '1280': [], '390': [] });
  });

  it('folds the navigation behind a menu button on a phone, operable from the keyboard', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${base}/admin`);
    await ready();
    const menu = page.getByRole('button', { name: 'Menu' });
    const clients = page.getByRole('navigation', { name: 'Admin' }).getByRole('link', { name: 'Clients', exact: true });
    expect(await menu.getAttribute('aria-expanded')).toBe('false');
    expect(await clients.isVisible()).toBe(false);
    // The header no longer takes a quarter of the phone's screen.
    expect((await page.locator('header.top').boundingBox())!.height).toBeLessThan(120);
    await menu.focus();
    await page.keyboard.press('Enter');
    expect(await menu.getAttribute('aria-expanded')).toBe('true');
    await clients.waitFor({ state: 'visible' });
    await page.keyboard.press('Tab');
    await page.keyboard.press('Escape');
    expect(await menu.getAttribute('aria-expanded')).toBe('false');
    expect(await page.evaluate(() => document.activeElement?.textContent?.includes('Menu'))).toBe(true);
    await menu.click();
    await clients.click();
    await page.getByRole('heading', { name: 'Clients', level: 1 }).waitFor();
    // The menu closes on navigation.
    expect(await menu.getAttribute('aria-expanded')).toBe('false');
    // At the laptop width there is no menu button, the links are there.
    await page.setViewportSize({ width: 1280, height: 800 });
    expect(await menu.isVisible()).toBe(false);
    expect(await clients.isVisible()).toBe(true);
  });

  it('opens the list behind a figure, and answers another range', async () => {
    await page.goto(`${base}/admin`);
    await ready();
    await page.getByTestId('figure-mrr').getByRole('link', { name: 'See the list' }).click();
    await page.getByRole('heading', { name: 'Orders behind MRR' }).waitFor();
    await settled(page);
    const listed = (await t.admin('stats/dashboard_list', { figure: 'mrr', per_page: 50 })).result;
    expect(await page.getByTestId('figure-rows').locator('tbody tr').count()).toBe(listed.list.length);
    await page.getByRole('link', { name: '‹ Dashboard' }).click();
    await ready();
    await page.getByLabel('From', { exact: true }).fill('2026-01-01');
    await page.getByLabel('To', { exact: true }).fill('2026-01-31');
    await page.getByRole('button', { name: 'Show' }).click();
    await page.waitForURL(/\/admin\?from=2026-01-01&to=2026-01-31$/);
    await page.getByTestId('range-line').filter({ hasText: '2026-01-01 to 2026-01-31, compared with 2025-12-01 to 2025-12-31.' }).waitFor();
  });
});
