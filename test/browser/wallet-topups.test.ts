// The wallet's packs, auto-recharge and low-balance alert in a real Chromium (issue 24): the client sees the enabled
// packs and buys one (its invoice opens; paid by card through the Stripe stand-in it credits amount + bonus), is told
// that auto-recharge needs a saved card and refused before one is saved, then turns it on (a bad threshold is shown at
// its field) and sets a low-balance alert; staff manage the packs in the admin panel. Screenshots land in test-results/.
/// <reference lib="dom" />
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.ts';
import { HAVE_CHROMIUM, launchChromium, loginAsAdmin, newStaffPage, serveWeb, settled, SHOTS } from '../helpers/browser.ts';
import { expectLedgerConsistent } from '../helpers/credit-ledger.ts';
import { asClient } from '../helpers/selling-fixtures.ts';
import { payByCard, stripeStand, type StripeStand } from '../helpers/stripe-fixtures.ts';

describe.runIf(HAVE_CHROMIUM)('the wallet packs and auto-recharge, in the browser', () => {
  let stand: StripeStand;
  let t: TestApp;
  let web: FastifyInstance;
  let base: string;
  let browser: Browser;
  let page: Page;
  let buyer: Awaited<ReturnType<TestApp['createClient']>>;

  beforeAll(async () => {
    stand = await stripeStand();
    t = stand.t;
    ({ web, base } = await serveWeb(t));
    browser = await launchChromium();
    page = await newStaffPage(browser);
    buyer = await t.createClient();
    expect((await t.admin('credit/pack_create', { title: 'Starter', amount: '10', bonus: '2', bonus_days: 30 })).body.error).toBeNull();
    expect((await t.admin('credit/pack_create', { title: 'Hidden', amount: '50', enabled: false })).body.error).toBeNull();
  }, 240_000);

  afterAll(async () => {
    await expectLedgerConsistent(t.services.db);
    await browser?.close();
    await web?.close();
    await stand?.close();
  });

  const openWallet = async () => {
    await page.goto(`${base}/wallet`);
    await page.getByRole('heading', { name: 'Wallet', level: 1 }).waitFor();
    await settled(page);
  };

  it('lists the enabled packs and buys one through its invoice', async () => {
    await page.goto(`${base}/login`);
    await page.getByLabel('E-mail').fill(buyer.email);
    await page.getByLabel('Password').fill(buyer.password);
    await page.getByLabel('Password').press('Enter');
    await page.getByText(`Signed in as ${buyer.email}`).waitFor();
    await openWallet();
    const packs = page.getByTestId('wallet-packs');
    await packs.getByText('Starter').waitFor();
    expect(await packs.textContent()).toContain('bonus');
    expect(await packs.textContent()).not.toContain('Hidden');
    await page.screenshot({ path: join(SHOTS, 'wallet-packs.png'), fullPage: true });
    await packs.getByRole('button', { name: 'Buy Starter' }).click();
    await page.waitForURL(/\/invoices\/\d+$/);
    await page.getByText(/Top-up pack “Starter”/).first().waitFor();
    const invoiceId = Number(page.url().split('/').at(-1));
    const invoice = (await t.admin('invoice/get', { id: invoiceId })).result;
    expect(invoice).toMatchObject({ client_id: buyer.id, total: '10.00', status: 'unpaid' });
    // Before any card is saved, auto-recharge says so and is refused.
    await openWallet();
    await page.getByTestId('recharge-no-card').waitFor();
    const form = page.getByRole('form', { name: 'Auto-recharge' });
    await form.getByLabel('Recharge automatically').check();
    await form.getByLabel('When the balance falls below').fill('5');
    await form.getByLabel('Charge my card').fill('20');
    await form.getByRole('button', { name: 'Save auto-recharge' }).click();
    await form.getByText(/saved card/).first().waitFor();
    expect((await asClient(t, buyer.token, 'credit/auto_recharge_get')).result.enabled).toBe(false);
    // Paid by card: the card is saved, amount + bonus credited.
    await payByCard(stand, invoice.hash as string);
    expect((await asClient(t, buyer.token, 'client/balance_get_total')).result).toBe('12.00');
  });

  it('turns auto-recharge on and sets a low-balance alert', async () => {
    await openWallet();
    await page.getByTestId('wallet-balance').getByText('12.00').waitFor();
    expect(await page.getByTestId('recharge-no-card').count()).toBe(0);
    const form = page.getByRole('form', { name: 'Auto-recharge' });
    await form.getByLabel('Recharge automatically').check();
    await form.getByLabel('When the balance falls below').fill('0');
    await form.getByLabel('Charge my card').fill('20');
    await form.getByRole('button', { name: 'Save auto-recharge' }).click();
    await form.getByText(/more than 0/).first().waitFor();
    expect((await asClient(t, buyer.token, 'credit/auto_recharge_get')).result.enabled).toBe(false);
    await form.getByLabel('When the balance falls below').fill('5');
    await form.getByRole('button', { name: 'Save auto-recharge' }).click();
    await page.getByText('Auto-recharge is on.').waitFor();
    expect((await asClient(t, buyer.token, 'credit/auto_recharge_get')).result).toMatchObject({ enabled: true, threshold: '5.00', amount: '20.00', has_card: true });

    const alert = page.getByRole('form', { name: 'Low-balance alert' });
    await alert.getByLabel('Mail me when the balance falls below').fill('3');
    await alert.getByRole('button', { name: 'Save alert' }).click();
    await page.getByText(/told when the balance falls below/).waitFor();
    expect((await asClient(t, buyer.token, 'credit/low_balance_get')).result).toEqual({ amount: '3.00', currency: 'USD' });
    // Reloaded, the page shows what is stored.
    await openWallet();
    expect(await form.getByLabel('Recharge automatically').isChecked()).toBe(true);
    expect(await form.getByLabel('When the balance falls below').inputValue()).toBe('5.00');
    expect(await alert.getByLabel('Mail me when the balance falls below').inputValue()).toBe('3.00');
    await page.screenshot({ path: join(SHOTS, 'wallet-auto-recharge.png'), fullPage: true });
  });

  it('lets staff create, disable and delete packs in the admin panel', async () => {
    const staff = await newStaffPage(browser);
    await loginAsAdmin(staff, base);
    await staff.goto(`${base}/admin/packs`);
    await staff.getByRole('heading', { name: 'Top-up packs', level: 1 }).waitFor();
    await settled(staff);
    const form = staff.getByRole('form', { name: 'New pack' });
    // A refused price is shown at its field; nothing is created.
    await form.getByLabel('Title').fill('Panel pack');
    await form.getByLabel('Price (credited)').fill('0');
    await form.getByRole('button', { name: 'Create pack' }).click();
    await form.getByText(/more than 0/).first().waitFor();
    expect((await t.admin('credit/pack_get_list')).result.list.some((pack: { title: string }) => pack.title === 'Panel pack')).toBe(false);
    await form.getByLabel('Price (credited)').fill('50');
    await form.getByLabel('Bonus (blank = none)').fill('10');
    await form.getByLabel('Bonus valid for days (blank = forever)').fill('90');
    await form.getByRole('button', { name: 'Create pack' }).click();
    const row = staff.locator('tbody tr').filter({ hasText: 'Panel pack' });
    await row.waitFor();
    expect(await row.textContent()).toContain('After 90 days');
    const created = (await t.admin('credit/pack_get_list')).result.list.find((pack: { title: string }) => pack.title === 'Panel pack');
    expect(created).toMatchObject({ amount: '50.00', bonus: '10.00', bonus_days: 90, enabled: true });
    await row.getByRole('button', { name: 'Disable pack Panel pack' }).click();
    await row.getByRole('button', { name: 'Enable pack Panel pack' }).waitFor();
    expect((await t.admin('credit/pack_get', { id: created.id })).result.enabled).toBe(false);
    await staff.screenshot({ path: join(SHOTS, 'admin-packs.png'), fullPage: true });
    await row.getByRole('button', { name: 'Delete pack Panel pack' }).click();
    await staff.getByRole('button', { name: 'Delete', exact: true }).click();
    await staff.locator('tbody tr').filter({ hasText: 'Panel pack' }).waitFor({ state: 'detached' });
    expect((await t.admin('credit/pack_get', { id: created.id })).status).toBe(404);
  });
});
