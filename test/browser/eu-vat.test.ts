// EU VAT in a real Chromium (issue 26): staff see what VIES said of a client's VAT number on the client page and
// re-check it (VIES down: "being checked", never an error page), edit a member state's rate and read the quarter's OSS
// report on the Taxes page; the client sees its number's status on its profile and "incl. VAT" on the plans page and
// in the cart. Against the VIES stand-in. Screenshots land in test-results/.
/// <reference lib="dom" />
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { HAVE_CHROMIUM, launchChromium, loginAsAdmin, newStaffPage, serveWeb, settled, SHOTS } from '../helpers/browser.ts';
import { asClient, makeProduct } from '../helpers/selling-fixtures.ts';
import { ViesStandIn } from '../helpers/vies-server.ts';

describe.runIf(HAVE_CHROMIUM)('EU VAT, in the browser', () => {
  let t: TestApp;
  let web: FastifyInstance;
  let base: string;
  let browser: Browser;
  let staff: Page;
  let page: Page;
  let buyer: Awaited<ReturnType<TestApp['createClient']>>;
  const vies = new ViesStandIn();

  beforeAll(async () => {
    await vies.start();
    t = await createTestApp({ VIES_TIMEOUT_MS: '300', CURRENCY: 'EUR' });
    ({ web, base } = await serveWeb(t));
    browser = await launchChromium();
    staff = await newStaffPage(browser);
    page = await newStaffPage(browser);
    expect((await t.admin('system/settings_update', { company_country: 'DE', company_vat_number: 'DE123456789', eu_vat: true, tax_inclusive: true, vies_url: vies.url })).body.error).toBeNull();
    const plan = await makeProduct(t, { title: 'VAT plan' });
    vies.mode = 'MS_UNAVAILABLE';
    vies.setValid('FRAA123456789', 'Acheteur SA', '1 Rue du Commerce 75001 Paris');
    buyer = await t.createClient({ country: 'FR', company: 'Acheteur SA', vat_number: 'FRAA123456789' });
    await t.services.outbox.runDue(new Date());
    expect((await asClient(t, buyer.token, 'cart/add_item', { id: plan, period: '1M' })).body.error).toBeNull();
    expect((await asClient(t, buyer.token, 'cart/checkout')).body.error).toBeNull();
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await web?.close();
    await t?.close();
    await vies.close();
  });

  it("staff see the pending VIES check on the client page and re-check it once VIES answers", async () => {
    await loginAsAdmin(staff, base);
    await staff.goto(`${base}/admin/clients/${buyer.id}`);
    const section = staff.getByRole('region', { name: 'VAT number' });
    await section.waitFor();
    await settled(staff);
    expect(await section.getByTestId('vat-status').textContent()).toContain('Being checked');
    // Still down: the re-check answers, the page says so, nothing breaks.
    await section.getByRole('button', { name: 'Check with VIES now' }).click();
    await settled(staff);
    expect(await section.getByTestId('vat-status').textContent()).toContain('Being checked');
    vies.mode = 'normal';
    await section.getByRole('button', { name: 'Check with VIES now' }).click();
    await section.getByText('Valid (confirmed by VIES)').waitFor();
    await section.getByText('Acheteur SA').waitFor();
    expect(await section.getByText(/^WAPI/).count()).toBe(1);
    await staff.screenshot({ path: join(SHOTS, 'eu-vat-client.png'), fullPage: true });
  });

  it('staff edit a rate and read the OSS report on the Taxes page; a bad quarter is named at its field', async () => {
    await staff.goto(`${base}/admin/taxes`);
    const rates = staff.getByRole('region', { name: 'EU VAT rates' });
    await rates.waitFor();
    await settled(staff);
    const italy = rates.getByLabel('Rate for Italy (%)');
    await italy.fill('21');
    await rates.getByRole('button', { name: 'Save the rate for Italy' }).click();
    await settled(staff);
    expect((await t.admin('invoice/vat_rate_get_list')).result.find((rate: { country: string }) => rate.country === 'IT').rate).toBe('21');
    const report = staff.getByRole('region', { name: 'One-Stop-Shop report' });
    await report.getByLabel('Quarter (e.g. 2026-Q4)').fill('2026-Q9');
    await report.getByRole('button', { name: 'Show report' }).click();
    await report.getByText('must be a quarter such as "2026-Q4"').waitFor();
    const now = new Date();
    await report.getByLabel('Quarter (e.g. 2026-Q4)').fill(`${now.getUTCFullYear()}-Q${Math.floor(now.getUTCMonth() / 3) + 1}`);
    await report.getByRole('button', { name: 'Show report' }).click();
    await report.getByRole('table').waitFor();
    await staff.screenshot({ path: join(SHOTS, 'eu-vat-taxes.png'), fullPage: true });
  });

  it('the client sees its VAT number status on its profile and "incl. VAT" on the plans page and in the cart', async () => {
    await page.goto(`${base}/login`);
    await page.getByLabel('E-mail').fill(buyer.email);
    await page.getByLabel('Password').fill(buyer.password);
    await page.getByLabel('Password').press('Enter');
    await page.getByText(`Signed in as ${buyer.email}`).waitFor();
    await page.goto(`${base}/profile`);
    const vat = page.getByRole('region', { name: 'VAT number check' });
    await vat.waitFor();
    await vat.getByText('Valid (confirmed by VIES)').waitFor();
    await page.goto(`${base}/`);
    await page.getByTestId('tax-mode').getByText('Prices incl. VAT.').waitFor();
    await page.getByRole('button', { name: /Add .* to cart|Add to cart/ }).first().click();
    await page.goto(`${base}/cart`);
    await page.getByTestId('tax-mode').getByText(/Prices incl\. VAT/).waitFor();
  });
});
