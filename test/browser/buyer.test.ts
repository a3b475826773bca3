// Issue 21 items 3, 4, 8 and 9 in a real Chromium, on an instance selling in EUR with a tax rule and Stripe (the
// local stand-in) beside the manual gateway: the plans page, cart, order list and invoice line show a metered plan's
// usage terms; the billing-period select shows its whole choice; sign-up asks for the billing country; "How to pay"
// lists the manual gateway only; the client and admin key pages say "calls beyond the included" in neutral colour and
// offer no "Add a key" on a one-key plan; the admin keys list shows the client, last use and a client search; the
// order page and list say "Cancels at period end (date)"; the product form previews in EUR and lists offered periods.
// Screenshots land in test-results/.
/// <reference lib="dom" />
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { HAVE_CHROMIUM, launchChromium, loginAsAdmin, newStaffPage, serveWeb, settled, SHOTS } from '../helpers/browser.ts';
import { StripeStandIn } from '../helpers/stripe-server.ts';
import { makeProduct } from '../helpers/selling-fixtures.ts';

/**
 * How many pixels of a select's chosen text do not fit (0: it shows whole): the text measured in the select's own font
 * against its inner width less the padding and the drop-down arrow (a select's scrollWidth does not tell).
 */
function selectCut(select: Locator): Promise<number> {
  return select.evaluate((element) => {
    const box = element as HTMLSelectElement;
    const style = getComputedStyle(box);
    const context = document.createElement('canvas').getContext('2d')!;
    context.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
    const text = box.selectedOptions[0]?.textContent ?? '';
    const arrow = 20;
    const room = box.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - arrow;
    return Math.max(0, Math.ceil(context.measureText(text).width - room));
  });
}

const TERMS = ['2 calls included per billing period', 'Then 1.00 EUR per 100 calls', 'Hard limit 1,000 calls per billing period', 'At most 10 calls per second'];

describe.runIf(HAVE_CHROMIUM)('what the buyer sees, in the browser', () => {
  const stripe = new StripeStandIn();
  let t: TestApp;
  let web: FastifyInstance;
  let base: string;
  let browser: Browser;
  let client: Page;
  let staff: Page;
  let metered: number;
  let buyer: Awaited<ReturnType<TestApp['createClient']>> & { name: string };
  let orderId: number;

  beforeAll(async () => {
    await stripe.start();
    t = await createTestApp(stripe.env({ CURRENCY: 'EUR' }));
    ({ web, base } = await serveWeb(t));
    browser = await launchChromium();
    client = await newStaffPage(browser);
    staff = await newStaffPage(browser);
    expect((await t.admin('invoice/tax_create', { name: 'VAT', rate: '19', country: 'DE' })).body.error).toBeNull();
    metered = await makeProduct(t, {
      title: 'Metered API',
      type: 'apikey',
      pricing: { type: 'recurrent', recurrent: { '1M': { price: '10.00', setup: '0', enabled: true } } },
      config: { included: 2, overage: { mode: 'package', package_size: 100, package_price: '1' }, hard_limit: 1000, rate_limit: { limit: 10, window_seconds: 1 }, custom: {} },
    });
    const created = await t.createClient({ first_name: 'Greta', last_name: 'Käuferin', country: 'DE' });
    buyer = { ...created, name: 'Greta Käuferin' };
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await web?.close();
    await t?.close();
    await stripe.stop();
  });

  it('shows the usage terms before and after buying, and asks a new buyer for the billing country', async () => {
    // A guest reads the plan's terms, in the instance's currency.
    await client.goto(`${base}/`);
    const card = client.getByRole('article').filter({ hasText: 'Metered API' });
    const terms = card.getByTestId('usage-terms');
    await terms.waitFor();
    for (const term of TERMS) expect(await terms.textContent()).toContain(term);
    // The billing-period select shows its whole choice, at a desktop width and on a phone.
    const select = card.getByLabel('Billing period');
    await settled(client);
    await card.screenshot({ path: join(SHOTS, 'buyer-plan-card.png') });
    expect(await selectCut(select)).toBe(0);
    await client.setViewportSize({ width: 360, height: 800 });
    expect(await selectCut(select)).toBe(0);
    await client.setViewportSize({ width: 1280, height: 900 });

    // A tax rule exists: the sign-up form asks for the billing address and refuses to go on without a country.
    await client.goto(`${base}/signup`);
    const address = client.getByTestId('billing-address');
    await address.getByLabel('Country').waitFor();
    await client.getByLabel('First name').fill('New');
    await client.getByLabel('E-mail').fill('new-buyer@example.com');
    await client.getByLabel('Password', { exact: true }).fill('Buyer-Passw0rd');
    await client.getByLabel('Repeat the password').fill('Buyer-Passw0rd');
    await client.getByRole('button', { name: 'Sign up' }).click();
    await client.getByRole('alert').filter({ hasText: /country/i }).first().waitFor();
    expect((await t.admin('client/get_list', { search: 'new-buyer@example.com' })).result.total).toBe(0);

    // The buyer logs in, puts the plan in the cart (the line carries the terms) and checks out.
    await client.goto(`${base}/login`);
    await client.getByLabel('E-mail').fill(buyer.email);
    await client.getByLabel('Password').fill(buyer.password);
    await client.getByLabel('Password').press('Enter');
    await client.getByText(`Signed in as ${buyer.email}`).waitFor();
    // The login reads the cart, then leads to the keys (or the cart): wait for it, or a click on Plans made meanwhile
    // is overtaken by that navigation (seen on a loaded machine).
    await client.waitForURL(/\/(keys|cart)$/);
    await client.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Plans', exact: true }).click();
    await client.getByRole('article').filter({ hasText: 'Metered API' }).getByRole('button', { name: 'Add to cart: Metered API' }).click();
    await client.getByRole('heading', { name: 'Cart' }).waitFor();
    const line = client.getByTestId('cart-usage-terms');
    await line.waitFor();
    expect(await line.textContent()).toBe('2 calls included per billing period; then 1.00 EUR per 100 calls; hard limit 1,000 calls per billing period; at most 10 calls per second');
    await settled(client);
    await client.screenshot({ path: join(SHOTS, 'buyer-cart-terms.png'), fullPage: true });
    await client.getByRole('button', { name: 'Check out' }).click();
    await client.getByRole('heading', { name: 'Pay by card' }).waitFor();
    const invoiceText = (await client.getByRole('main').textContent()) ?? '';
    expect(invoiceText).toContain('Metered API (Every month) — 2 calls included per billing period; then 1.00 EUR per 100 calls');
    // "How to pay" lists the manual way; the card is paid through "Pay by card", not listed as instructions.
    const howToPay = client.getByTestId('how-to-pay');
    await howToPay.getByRole('heading', { name: 'Manual payment' }).waitFor();
    expect(await howToPay.textContent()).not.toContain('Card (Stripe)');
    expect(await howToPay.textContent()).not.toContain('Stripe');
    await settled(client);
    await client.screenshot({ path: join(SHOTS, 'buyer-invoice-how-to-pay.png'), fullPage: true });

    // Paid: the order lists its terms.
    const invoiceId = Number(/\/invoices\/(\d+)$/.exec(client.url())?.[1]);
    expect((await t.admin('invoice/mark_as_paid', { id: invoiceId, transaction_id: 'bank-1' })).body.error).toBeNull();
    orderId = (await t.admin('order/get_list', { client_id: buyer.id })).result.list[0].id as number;
    await client.goto(`${base}/orders`);
    const orderTerms = client.getByTestId('order-usage-terms');
    await orderTerms.waitFor();
    expect(await orderTerms.textContent()).toContain('then 1.00 EUR per 100 calls');
  });

  it('tells the truth about overage on the client and admin key pages, without "Add a key" on a one-key plan', async () => {
    const key = (await t.admin('serviceapikey/get', { order_id: orderId })).result.api_key as string;
    for (let i = 0; i < 5; i++) expect((await t.call('/api/guest/serviceapikey/check', { key })).result).toBe(true);
    await t.services.apikeys.flushUsage();

    await client.goto(`${base}/keys`);
    const card = client.getByTestId(`key-${orderId}`);
    const state = card.getByTestId('usage-state');
    await state.waitFor();
    expect(await state.getAttribute('data-state')).toBe('beyond');
    expect(await state.textContent()).toBe('3 calls beyond the included 2, projected extra charge 1.00 EUR.');
    // Neutral colour: not the error red of "used up".
    const colour = await state.evaluate((element) => getComputedStyle(element).color);
    const danger = await client.evaluate(() => getComputedStyle(document.documentElement).getPropertyValue('--danger').trim());
    expect(colour).not.toBe(danger);
    expect(await card.locator('.error').count()).toBe(0);
    expect(await card.getByRole('button', { name: 'Add a key' }).count()).toBe(0);
    await settled(client);
    await client.screenshot({ path: join(SHOTS, 'buyer-keys-overage.png'), fullPage: true });

    await loginAsAdmin(staff, base);
    await staff.goto(`${base}/admin/keys/${orderId}`);
    const adminState = staff.getByTestId('usage-state');
    await adminState.waitFor();
    expect(await adminState.textContent()).toBe('3 calls beyond the included 2, projected extra charge 1.00 EUR.');
    await staff.getByTestId('one-key-plan').waitFor();
    expect(await staff.getByRole('button', { name: 'Add a key' }).count()).toBe(0);
  });

  it('lists keys with the client, last use and a client search; shows a cancellation at period end', async () => {
    await staff.goto(`${base}/admin/keys`);
    const row = staff.getByRole('row').filter({ hasText: `Key of order #${orderId}` });
    await row.getByRole('link', { name: buyer.name }).waitFor();
    await row.getByTestId('last-use').filter({ hasText: new Date().toISOString().slice(0, 10) }).waitFor();
    await staff.getByLabel('Client').fill('nobody-like-this');
    await staff.getByRole('button', { name: 'Filter' }).click();
    await settled(staff);
    expect(await staff.getByRole('row').filter({ hasText: `Key of order #${orderId}` }).count()).toBe(0);
    await staff.getByLabel('Client').fill(buyer.email);
    await staff.getByRole('button', { name: 'Filter' }).click();
    await staff.getByRole('row').filter({ hasText: `Key of order #${orderId}` }).waitFor();
    await settled(staff);
    await staff.screenshot({ path: join(SHOTS, 'buyer-admin-keys.png'), fullPage: true });

    // The client cancels at the end of the period: staff see it on the order and in the list.
    expect((await t.call('/api/client/order/cancel', { id: orderId }, { basic: ['client', buyer.token] })).body.error).toBeNull();
    const expires = ((await t.admin('order/get', { id: orderId })).result.expires_at as string).slice(0, 10);
    await staff.goto(`${base}/admin/orders/${orderId}`);
    await staff.getByTestId('cancels-at-period-end').filter({ hasText: `Cancels at period end (${expires})` }).waitFor();
    // Staff read the order's usage terms as the buyer did.
    expect(await staff.getByRole('main').textContent()).toContain('2 calls included per billing period; then 1.00 EUR per 100 calls');
    // The order form's billing-period select shows its whole choice too.
    expect(await selectCut(staff.getByLabel('Billing period'))).toBe(0);
    await staff.goto(`${base}/admin/orders`);
    await staff.getByRole('row').filter({ hasText: `Order #${orderId}` }).getByTestId('cancels-at-period-end').filter({ hasText: `Cancels at period end (${expires})` }).waitFor();
  });

  it('previews the price in the instance currency and lists only the offered periods by default', async () => {
    await staff.goto(`${base}/admin/products/${metered}`);
    const preview = staff.getByTestId('price-preview');
    await preview.filter({ hasText: '10 EUR/month' }).waitFor();
    expect(await preview.textContent()).not.toContain('$');
    expect(await preview.textContent()).toContain('then 1 EUR per 100');
    const periods = staff.getByRole('table').filter({ has: staff.getByText('Prices per period') });
    expect(await periods.locator('tbody tr').count()).toBe(1);
    await staff.getByRole('button', { name: 'Show every period' }).click();
    expect(await periods.locator('tbody tr').count()).toBeGreaterThan(1);
    await staff.getByRole('button', { name: 'Show only the offered periods' }).click();
    expect(await periods.locator('tbody tr').count()).toBe(1);
    await settled(staff);
    await staff.screenshot({ path: join(SHOTS, 'buyer-product-form.png'), fullPage: true });
  });
});
