// Paying an invoice partly from the balance in a real Chromium (issue 24): on an unpaid invoice the balance does not
// cover, "Apply … from balance" applies what the balance holds; the invoice then shows "Paid from balance" and
// "Amount due", and the wallet the part payment. Screenshots land in test-results/.
/// <reference lib="dom" />
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { HAVE_CHROMIUM, launchChromium, newStaffPage, serveWeb, settled, SHOTS } from '../helpers/browser.ts';
import { asClient, makeProduct } from '../helpers/selling-fixtures.ts';
import { purchase } from '../helpers/stripe-fixtures.ts';

describe.runIf(HAVE_CHROMIUM)('paying part of an invoice from the balance', () => {
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
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await web?.close();
    await t?.close();
  });

  it('applies what the balance holds; the invoice shows what was paid from it and what is still due', async () => {
    const plan = await makeProduct(t, { title: 'Ten a month' });
    const client = await t.createClient();
    const bought = await purchase(t, plan, client);
    expect((await t.admin('client/balance_add_funds', { id: client.id, amount: '4', description: 'Funds' })).result).toBe(true);
    await page.goto(`${base}/login`);
    await page.getByLabel('E-mail').fill(client.email);
    await page.getByLabel('Password').fill(client.password);
    await page.getByLabel('Password').press('Enter');
    await page.getByText(`Signed in as ${client.email}`).waitFor();
    await page.goto(`${base}/invoices/${bought.invoiceId}`);
    const apply = page.getByRole('button', { name: /^Apply .*4\.00.* from balance$/ });
    await apply.waitFor();
    expect(await page.getByText('Your balance does not cover it all').count()).toBe(1);
    await apply.click();
    await page.getByTestId('amount-due').waitFor();
    await settled(page);
    expect(await page.getByTestId('credit-applied').textContent()).toContain('4.00');
    expect(await page.getByTestId('amount-due').textContent()).toContain('6.00');
    expect((await t.admin('invoice/get', { id: bought.invoiceId })).result).toMatchObject({ status: 'unpaid', credit_applied: '4.00', amount_due: '6.00' });
    expect((await asClient(t, client.token, 'client/balance_get_total')).result).toBe('0.00');
    // Nothing left in the balance: the offer is gone.
    expect(await page.getByRole('heading', { name: 'Pay from balance' }).count()).toBe(0);
    await page.screenshot({ path: join(SHOTS, 'invoice-part-paid-from-balance.png'), fullPage: true });
  });
});
