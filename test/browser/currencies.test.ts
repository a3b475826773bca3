// The admin Currencies page in a real Chromium (issue 26): add an ISO 4217 currency with its rate, a refused rate shown
// on its field, edit a rate (kept in the history), make another currency the default (rates restated), delete one.
/// <reference lib="dom" />
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { FastifyInstance } from 'fastify';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { HAVE_CHROMIUM, launchChromium, loginAsAdmin, newStaffPage, serveWeb, settled } from '../helpers/browser.ts';

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** axe-core's serious and critical violations on the page, as test/browser/panel.test.ts checks every other page. */
async function seriousViolations(page: Page): Promise<string[]> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE_SOURCE);
  return page.evaluate(async () => {
    const runner = (window as unknown as { axe: { run: (context: Document) => Promise<{ violations: Array<{ id: string; impact: string | null }> }> } }).axe;
    const result = await runner.run(document);
    return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id);
  });
}

describe.runIf(HAVE_CHROMIUM)('the admin Currencies page', () => {
  let t: TestApp;
  let web: FastifyInstance;
  let base: string;
  let browser: Browser;

  beforeAll(async () => {
    t = await createTestApp();
    ({ web, base } = await serveWeb(t));
    browser = await launchChromium();
  }, 300_000);
  afterAll(async () => {
    await browser?.close();
    await web?.close();
    await t?.close();
  });

  it('lists, adds, edits a rate, sets the default and deletes', async () => {
    const page = await newStaffPage(browser);
    await loginAsAdmin(page, base);
    await page.getByRole('link', { name: 'Currencies' }).click();
    await page.getByRole('heading', { name: 'Currencies' }).waitFor();
    await settled(page);
    const table = page.getByRole('table', { name: 'Currencies' });
    await table.getByText('US Dollar').waitFor();

    // A rate of 0 is refused on its field; nothing is added.
    const add = page.locator('form[aria-labelledby="currency-add"]');
    await add.getByLabel('Currency').selectOption('EUR');
    await add.getByLabel('Rate').fill('0');
    await add.getByRole('button', { name: 'Add currency' }).click();
    await add.getByText('greater than 0').first().waitFor();
    expect((await t.admin('currency/get_list')).result.total).toBe(1);

    await add.getByLabel('Rate').fill('0.8');
    await add.getByRole('button', { name: 'Add currency' }).click();
    await page.getByText('EUR added.').waitFor();
    await table.getByText('Euro').waitFor();
    await settled(page);
    expect(await seriousViolations(page)).toEqual([]);

    await page.getByRole('textbox', { name: 'Rate of EUR', exact: true }).fill('0.85');
    await page.getByRole('button', { name: 'Save the rate of EUR' }).click();
    await settled(page);
    await expect.poll(async () => (await t.admin('currency/get', { code: 'EUR' })).result.conversion_rate).toBe('0.85');
    expect((await t.admin('currency/rate_get_list', { code: 'EUR' })).result.total).toBe(2);

    await page.getByRole('button', { name: 'Make default: EUR' }).click();
    await page.getByText('EUR is now the default currency').waitFor();
    expect((await t.admin('currency/get_default')).result.code).toBe('EUR');
    await expect.poll(async () => page.getByRole('textbox', { name: 'Rate of USD', exact: true }).inputValue()).toBe('1.176470588235');

    // The default cannot be deleted from here (no button); USD now can.
    await page.getByRole('button', { name: 'Delete USD' }).click();
    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    await page.getByText('USD deleted.').waitFor();
    expect((await t.admin('currency/get_list')).result.total).toBe(1);
    await t.services.currencies.create({ code: 'USD', conversion_rate: '1.176470588235' }, null);
    await t.services.currencies.setDefault('USD', null);
  }, 180_000);
});
