// The wallet in a real Chromium (issue 24): the client's wallet page (balance, history, a top-up form whose refusals
// are shown and whose invoice opens to be paid), "Pay from balance" on an unpaid invoice, and the admin's view of a
// client's ledger with the add-funds form and a line reversed. Screenshots land in test-results/.
/// <reference lib="dom" />
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { HAVE_CHROMIUM, launchChromium, loginAsAdmin, newStaffPage, serveWeb, settled, SHOTS } from '../helpers/browser.ts';
import { expectLedgerConsistent } from '../helpers/credit-ledger.ts';
import { asClient, makeProduct } from '../helpers/selling-fixtures.ts';

describe.runIf(HAVE_CHROMIUM)('the wallet, in the browser', () => {
  let t: TestApp;
  let web: FastifyInstance;
  let base: string;
  let browser: Browser;
  let page: Page;
  let staff: Page;
  let plan: number;
  let buyer: Awaited<ReturnType<TestApp['createClient']>>;

  beforeAll(async () => {
    t = await createTestApp();
    ({ web, base } = await serveWeb(t));
    browser = await launchChromium();
    page = await newStaffPage(browser);
    staff = await newStaffPage(browser);
    plan = await makeProduct(t, { title: 'Wallet plan' });
    buyer = await t.createClient();
  }, 240_000);

  afterAll(async () => {
    await expectLedgerConsistent(t.services.db);
    await browser?.close();
    await web?.close();
    await t?.close();
  });

  const balanceShown = () => page.getByTestId('wallet-balance').textContent();

  it('shows the balance and history, and tops up through an invoice', async () => {
    await page.goto(`${base}/login`);
    await page.getByLabel('E-mail').fill(buyer.email);
    await page.getByLabel('Password').fill(buyer.password);
    await page.getByLabel('Password').press('Enter');
    await page.getByText(`Signed in as ${buyer.email}`).waitFor();
    await page.waitForURL(/\/(keys|cart)$/);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Wallet', exact: true }).click();
    await page.getByRole('heading', { name: 'Wallet', level: 1 }).waitFor();
    await settled(page);
    expect(await balanceShown()).toContain('0.00');
    await page.getByText('No balance movements yet.').waitFor();

    // A refused amount is shown at the field; nothing is issued.
    await page.getByLabel('Amount').fill('0');
    await page.getByRole('button', { name: 'Create top-up invoice' }).click();
    await page.getByText(/more than 0/).first().waitFor();
    expect((await t.admin('invoice/get_list', { client_id: buyer.id })).result.total).toBe(0);

    await page.getByLabel('Amount').fill('20');
    await page.getByRole('button', { name: 'Create top-up invoice' }).click();
    await page.waitForURL(/\/invoices\/\d+$/);
    await page.getByText('Add funds to the account balance').first().waitFor();
    await settled(page);
    // A top-up invoice is never offered to be paid from the balance.
    expect(await page.getByRole('button', { name: 'Pay from balance' }).count()).toBe(0);
    const invoiceId = Number(page.url().split('/').at(-1));
    expect((await t.admin('invoice/mark_as_paid', { id: invoiceId })).body.error).toBeNull();

    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Wallet', exact: true }).click();
    await page.getByTestId('wallet-history').waitFor();
    await settled(page);
    expect(await balanceShown()).toContain('20.00');
    const history = await page.getByTestId('wallet-history').textContent();
    expect(history).toContain('Top-up');
    await page.screenshot({ path: join(SHOTS, 'wallet-client.png'), fullPage: true });
  });

  it('pays an unpaid invoice from the balance', async () => {
    expect((await asClient(t, buyer.token, 'cart/add_item', { id: plan, period: '1M' })).body.error).toBeNull();
    const checkout = await asClient(t, buyer.token, 'cart/checkout');
    await page.goto(`${base}/invoices/${checkout.result.invoice_id}`);
    await page.getByRole('button', { name: 'Pay from balance' }).click();
    await page.getByText('Thank you, this invoice is paid.').waitFor();
    expect((await asClient(t, buyer.token, 'client/balance_get_total')).result).toBe('10.00');
    await page.goto(`${base}/wallet`);
    await page.getByTestId('wallet-history').waitFor();
    await settled(page);
    expect(await balanceShown()).toContain('10.00');
    expect(await page.getByTestId('wallet-history').textContent()).toContain('Spent');
  });

  it("lets staff see a client's ledger, add funds and reverse a line", async () => {
    await loginAsAdmin(staff, base);
    await staff.goto(`${base}/admin/clients/${buyer.id}`);
    const ledger = staff.getByTestId('client-ledger');
    await ledger.waitFor();
    await settled(staff);
    expect(await ledger.locator('tbody tr').count()).toBe(2);

    const form = staff.getByRole('form', { name: 'Add funds' });
    await form.getByLabel('Amount').fill('3.50');
    await form.getByLabel('Reason').fill('Goodwill for the outage');
    await form.getByRole('button', { name: 'Add funds' }).click();
    await ledger.getByText('Goodwill for the outage').waitFor();
    expect((await asClient(t, buyer.token, 'client/balance_get_total')).result).toBe('13.50');

    // Too many decimals: the form says so, nothing is written.
    await form.getByLabel('Amount').fill('1.234');
    await form.getByLabel('Reason').fill('Bad');
    await form.getByRole('button', { name: 'Add funds' }).click();
    await form.getByText(/at most 2 decimals/).first().waitFor();
    expect((await asClient(t, buyer.token, 'client/balance_get_total')).result).toBe('13.50');

    const line = ledger.locator('tbody tr').filter({ hasText: 'Goodwill for the outage' });
    await line.getByRole('button', { name: /Remove line/ }).click();
    await staff.getByRole('button', { name: 'Reverse' }).click();
    await ledger.getByText(/Reverses line/).waitFor();
    expect((await asClient(t, buyer.token, 'client/balance_get_total')).result).toBe('10.00');
    // A reversed line and its reversal offer no second removal; the total follows.
    expect(await ledger.locator('tbody tr').filter({ hasText: 'Goodwill for the outage' }).getByRole('button', { name: /Remove line/ }).count()).toBe(0);
    await staff.getByTestId('client-balance-total').getByText('10.00').waitFor();
    await staff.screenshot({ path: join(SHOTS, 'wallet-admin.png'), fullPage: true });
  });
});
