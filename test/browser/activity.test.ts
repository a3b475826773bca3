// The Activity page in a real Chromium (issue 25 item 9): the audit log's entries with before → after, a secret only
// as "changed", the filters, paging and the CSV download; no serious or critical axe violation at 1280 and 390 px
// (UPDATE_SCREENSHOTS=1 writes docs/screenshots/activity-*.png).
/// <reference lib="dom" />
import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_EMAIL, createTestApp, type TestApp } from '../helpers/app.ts';
import { HAVE_CHROMIUM, launchChromium, loginAsAdmin, newStaffPage, serveWeb, settled } from '../helpers/browser.ts';
import { reviewAtBothWidths } from '../helpers/page-review.ts';
import { makeProduct } from '../helpers/selling-fixtures.ts';

const SECRET = 'Page-Secret-Value-9';

describe.runIf(HAVE_CHROMIUM)('the Activity page, in the browser', () => {
  let t: TestApp;
  let web: FastifyInstance;
  let base: string;
  let browser: Browser;
  let page: Page;
  let product: number;

  beforeAll(async () => {
    t = await createTestApp();
    ({ web, base } = await serveWeb(t));
    browser = await launchChromium();
    page = await newStaffPage(browser);
    // Enough entries for two pages of 25, across modules.
    for (let i = 0; i < 24; i += 1) await t.createClient({ first_name: `Client${i}` });
    product = await makeProduct(t, { title: 'Starter' });
    expect((await t.admin('product/update', { id: product, title: 'Starter plus', pricing: { type: 'recurrent', recurrent: { '1M': { price: '19.00', setup: '0', enabled: true } } } })).body.error).toBeNull();
    expect((await t.admin('system/settings_update', { company_name: 'Acme API', smtp_password: SECRET })).body.error).toBeNull();
    expect((await t.call('/api/guest/staff/login', { email: ADMIN_EMAIL, password: 'not-the-password' }, { ip: '198.51.100.23' })).status).toBe(401);
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await web?.close();
    await t?.close();
  });

  const table = () => page.getByTestId('activity-table');

  it('lists changes with before → after, a secret only as changed, and filters and pages them', async () => {
    await loginAsAdmin(page, base);
    await page.getByRole('navigation', { name: 'Admin' }).getByRole('link', { name: 'Activity', exact: true }).click();
    await page.getByRole('heading', { name: 'Activity', level: 1 }).waitFor();
    await table().waitFor();
    await settled(page);
    const text = (await table().textContent()) ?? '';
    // The admin's own login is the newest entry; the settings change below it shows the secret only as changed.
    expect(text).toContain('guest/staff/login');
    expect(text).toContain('admin/system/settings_update');
    expect(text).toMatch(/company_name: — → Acme API/);
    expect(text).toMatch(/smtp_password: changed/);
    expect(text).not.toContain(SECRET);
    expect(text).toContain('Failed staff login');
    expect(text).toContain('198.51.100.23');
    await page.getByRole('navigation', { name: 'Activity pages' }).getByText(/Page 1 of 2/).waitFor();

    await page.getByRole('navigation', { name: 'Activity pages' }).getByRole('button', { name: 'Next ›' }).click();
    await page.getByRole('navigation', { name: 'Activity pages' }).getByText(/Page 2 of 2/).waitFor();
    await settled(page);

    await page.getByLabel('Target', { exact: true }).selectOption('product');
    await page.getByLabel('Target id').fill(String(product));
    await page.getByRole('button', { name: 'Filter' }).click();
    await settled(page);
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="activity-table"] tbody tr').length === 3);
    const rows = await table().locator('tbody tr').allTextContents();
    expect(rows.every((row) => row.includes(`product #${product}`))).toBe(true);
    expect(rows[0]).toMatch(/title: Starter → Starter plus/);
    expect(rows[0]).toMatch(/pricing: .*1000.* → .*1900/);

    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download CSV' }).click()]);
    const csv = readFileSync(await download.path(), 'utf8');
    expect(csv.split('\r\n').filter((line) => line !== '')).toHaveLength(4);
    expect(csv).toContain('admin/product/update');
    expect(csv).not.toContain('settings_update');
  });

  it('a range with nothing in it says so, and clearing it shows the entries again', async () => {
    await page.getByLabel('From', { exact: true }).fill('2026-05-01');
    await page.getByLabel('To', { exact: true }).fill('2026-04-01');
    await page.getByLabel('Target', { exact: true }).selectOption('');
    await page.getByLabel('Target id').fill('');
    await page.getByRole('button', { name: 'Filter' }).click();
    await settled(page);
    await page.getByText('No activity matches.').waitFor();
    await page.getByLabel('From', { exact: true }).fill('');
    await page.getByLabel('To', { exact: true }).fill('');
    await page.getByRole('button', { name: 'Filter' }).click();
    await table().waitFor();
    await settled(page);
  });

  it('has no serious or critical axe violation at 1280 and 390 px', async () => {
    const found = await reviewAtBothWidths(page, 'activity', async () => {
      await page.getByRole('heading', { name: 'Activity', level: 1 }).waitFor();
      await table().waitFor();
      await settled(page);
    });
    expect(found).toEqual({ '1280': [], '390': [] });
  });
});
