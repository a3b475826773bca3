// End to end in a real Chromium: a customer signs up and buys an API key plan, staff marks the invoice paid, the
// customer copies the key (it validates), resets it (the old one stops validating), staff switches it off (the
// client area shows it invalid). Also: the UI's static serving, and a page that lost its CSRF token shows the 403.
// Screenshots of the main pages land in test-results/.
/// <reference lib="dom" />
import { execFileSync } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { HAVE_CHROMIUM, launchChromium, loginAsAdmin, serveWeb, settled, SHOTS } from '../helpers/browser.ts';
const CUSTOMER = { first: 'Ada', last: 'Lovelace', email: `ada-${Date.now()}@example.com`, password: 'Analytical-Engine1' };

describe.runIf(HAVE_CHROMIUM)('browser UI end to end', () => {
  let t: TestApp;
  let web: FastifyInstance;
  let base: string;
  let browser: Browser;
  let clientContext: BrowserContext;
  let staffContext: BrowserContext;
  let client: Page;
  let staff: Page;
  let productId: number;
  let invoiceId: number;
  let orderId: number;
  let firstKey: string;
  let secondKey: string;

  const check = async (key: string): Promise<boolean> => (await t.call('/api/guest/serviceapikey/check', { key })).result as boolean;
  const rawGet = (path: string): Promise<{ status: number; body: string }> =>
    new Promise((resolve, reject) => {
      const request = httpRequest({ host: '127.0.0.1', port: new URL(base).port, path, agent: false }, (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (body += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
      });
      request.on('error', reject);
      request.end();
    });
  const shot = async (page: Page, name: string): Promise<void> => {
    await page.screenshot({ path: join(SHOTS, name), fullPage: true });
  };

  beforeAll(async () => {
    t = await createTestApp();
    ({ web, base } = await serveWeb(t));

    // Staff sets up the plan through the API.
    productId = (await t.admin('product/prepare', { title: 'Pro API', type: 'apikey' })).result as number;
    const updated = await t.admin('product/update', {
      id: productId,
      status: 'enabled',
      setup: 'after_payment',
      description: 'For production apps.',
      pricing: { type: 'recurrent', recurrent: { '1M': { price: '19.00', setup: '0', enabled: true }, '1Y': { price: '190.00', setup: '0', enabled: true } } },
      config: { custom: { tier: 'pro', monthlyLimit: 1000 } },
    });
    expect(updated.body.error).toBeNull();
    // The seller's details, a tax for buyers anywhere, and a coupon (CONTRACT §8).
    expect((await t.admin('system/settings_update', { company_name: 'Acme API Ltd', company_address_1: '1 Invoice Road', company_city: 'Berlin', company_country: 'DE', company_vat_number: 'DE999999999', invoice_prefix: 'ACME-' })).result).toBe(true);
    expect((await t.admin('invoice/tax_create', { name: 'VAT', rate: '20' })).body.error).toBeNull();
    expect((await t.admin('product/promo_create', { code: 'WELCOME10', type: 'percentage', value: '10' })).body.error).toBeNull();

    browser = await launchChromium();
    // Two contexts: a browser has one session cookie, so the customer and the staff member need separate ones.
    clientContext = await browser.newContext({ viewport: { width: 1200, height: 900 } });
    await clientContext.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
    staffContext = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    client = await clientContext.newPage();
    staff = await staffContext.newPage();
    client.setDefaultTimeout(20_000);
    staff.setDefaultTimeout(20_000);
  });

  afterEach(async (context) => {
    // A failed step leaves pictures of both browsers behind, for the reader of the CI log.
    if (context.task.result?.state !== 'fail') return;
    const name = context.task.name.replace(/[^a-z0-9]+/gi, '-').slice(0, 60);
    await client?.screenshot({ path: join(SHOTS, `failure-${name}-client.png`), fullPage: true }).catch(() => undefined);
    await staff?.screenshot({ path: join(SHOTS, `failure-${name}-staff.png`), fullPage: true }).catch(() => undefined);
  });

  afterAll(async () => {
    await browser?.close();
    await web?.close();
    await t?.close();
  });

  it('serves the pages with the right types and caching, and keeps /api answers JSON', async () => {
    const home = await fetch(`${base}/`);
    expect(home.status).toBe(200);
    expect(home.headers.get('content-type')).toContain('text/html');
    expect(home.headers.get('cache-control')).toBe('no-cache');
    expect(home.headers.get('content-security-policy')).toContain("script-src 'self'");
    const html = await home.text();
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    const asset = await fetch(`${base}${script}`);
    expect(asset.headers.get('content-type')).toContain('text/javascript');
    expect(asset.headers.get('cache-control')).toContain('immutable');
    // Read every body: an unread response keeps its connection busy and the server's close() waiting for it.
    expect((await asset.text()).length).toBeGreaterThan(1000);

    const admin = await (await fetch(`${base}/admin/clients/7`)).text();
    // The static pages carry no brand of ours (issue 21): the scripts put the operator's name in once loaded.
    expect(admin).toContain('<title>Admin</title>');
    expect(await (await fetch(`${base}/keys`)).text()).toContain('<title>Client area</title>');

    for (const path of ['/api/nope', '/assets/missing.js', '/assets/..%2f..%2fpackage.json', '/%2e%2e/package.json', '/.build-stamp']) {
      const response = await fetch(`${base}${path}`);
      expect(response.status, path).toBe(404);
      expect(((await response.json()) as { error: { code: number } }).error.code, path).toBe(879);
    }
    // Raw paths, as an attacker would send them (fetch would normalise the dots away).
    for (const path of ['/assets/../../package.json', '/../package.json', '/admin/../../src/main.ts', '/assets/%2e%2e/%2e%2e/package.json', '/assets/..%5c..%5cpackage.json']) {
      const response = await rawGet(path);
      expect(response.status, path).toBe(404);
      expect(response.body, path).not.toContain('"name": "tollgate"');
    }
    const api = await fetch(`${base}/api/guest/system/version`);
    expect(((await api.json()) as { result: string }).result).toMatch(/^\d+\.\d+\.\d+/);
  });

  it('lets a customer sign up, buy the API key plan and see the invoice', async () => {
    await client.goto(`${base}/`);
    const plan = client.getByRole('article').filter({ hasText: 'Pro API' });
    await plan.waitFor();
    expect(await plan.textContent()).toContain('Monthly limit: 1,000');
    expect(await plan.textContent()).toContain('Tier: pro');
    await settled(client);
    await shot(client, 'client-plans.png');

    await client.getByRole('link', { name: 'Sign up' }).click();
    await client.getByLabel('First name').fill(CUSTOMER.first);
    await client.getByLabel('Last name').fill(CUSTOMER.last);
    await client.getByLabel('E-mail').fill(CUSTOMER.email);
    await client.getByLabel('Password', { exact: true }).fill('short');
    await client.getByLabel('Repeat the password').fill('short');
    await client.getByRole('button', { name: 'Sign up' }).click();
    // The server refuses the weak password: the message is shown (next to the field or the form), nothing blank.
    await client.getByRole('alert').first().waitFor();
    expect(await client.getByRole('alert').first().textContent()).toMatch(/password/i);

    await client.getByLabel('Password', { exact: true }).fill(CUSTOMER.password);
    await client.getByLabel('Repeat the password').fill(CUSTOMER.password);
    // A tax rule exists: the sign-up asks for the billing country (issue 21 item 8).
    await client.getByTestId('billing-address').getByLabel('Country').selectOption('GB');
    await client.getByLabel('Repeat the password').press('Enter');
    await client.getByText(`Signed in as ${CUSTOMER.email}`).waitFor();

    await client.getByRole('heading', { name: 'Plans' }).waitFor();
    await plan.getByLabel('Billing period').selectOption('1M');
    await plan.getByRole('button', { name: 'Add to cart: Pro API' }).click();
    await client.getByRole('heading', { name: 'Cart' }).waitFor();
    // The line names the plan and its usage terms (issue 21 item 3).
    await client.getByRole('cell', { name: /^Pro API/ }).getByTestId('cart-usage-terms').filter({ hasText: '1,000 calls included per calendar month' }).waitFor();
    expect(await client.getByRole('table').textContent()).toContain('19.00');
    // The coupon field: an unknown code is refused with the server's reason, a good one shows its discount.
    await client.getByLabel('Coupon code').fill('NOPE');
    await client.getByRole('button', { name: 'Apply coupon' }).click();
    await client.getByText(/not a known coupon/).waitFor();
    await client.getByLabel('Coupon code').fill('welcome10');
    await client.getByRole('button', { name: 'Apply coupon' }).click();
    await client.getByText('Coupon WELCOME10 applied').waitFor();
    const cartTable = await client.getByRole('table').textContent();
    expect(cartTable).toContain('Discount (WELCOME10)');
    expect(cartTable).toContain('17.10');
    await shot(client, 'client-cart.png');

    await client.getByRole('button', { name: 'Check out' }).click();
    await client.getByRole('heading', { name: 'How to pay' }).waitFor();
    invoiceId = Number(/\/invoices\/(\d+)$/.exec(client.url())?.[1]);
    expect(invoiceId).toBeGreaterThan(0);
    const invoicePage = await client.getByRole('main').textContent();
    expect(invoicePage).toContain('Unpaid');
    expect(invoicePage).toContain(`Pro forma ${invoiceId}`);
    // The seller's details, the buyer, the discount and the tax lines.
    expect(invoicePage).toContain('Acme API Ltd');
    expect(invoicePage).toContain('DE999999999');
    expect(invoicePage).toContain('Ada Lovelace');
    expect(invoicePage).toContain('Discount (WELCOME10)');
    expect(invoicePage).toContain('VAT (20%)');
    expect(invoicePage).toContain('20.52 USD');
    await settled(client);
    await shot(client, 'client-invoice.png');
  });

  it('lets staff log in and mark the invoice paid', async () => {
    await loginAsAdmin(staff, base);

    await staff.getByRole('link', { name: 'Invoices', exact: true }).click();
    await staff.getByRole('link', { name: `Pro forma ${invoiceId}` }).click();
    await staff.getByRole('heading', { name: `Pro forma ${invoiceId}` }).waitFor();
    await staff.getByLabel('Transaction id (optional)').fill('BANK-0001');
    await staff.getByRole('button', { name: 'Mark as paid' }).click();
    await staff.getByText('Marked as paid').waitFor();
    await staff.getByRole('main').getByText('Paid', { exact: true }).first().waitFor();
    // What the page says is what the server stored: the invoice is paid (once), and its order is active.
    const invoice = await t.admin('invoice/get', { id: invoiceId });
    expect(invoice.status).toBe(200);
    expect(invoice.result).toMatchObject({ id: invoiceId, status: 'paid', total: '20.52' }); // 19.00 less the coupon, plus tax (above)
    expect(Date.parse(invoice.result.paid_at as string)).toBeGreaterThan(Date.now() - 120_000);
    expect(invoice.result.items).toHaveLength(1);
    const paidOrder = await t.admin('order/get', { id: invoice.result.items[0].order_id });
    expect(paidOrder.result).toMatchObject({ status: 'active', unpaid_invoice_id: null });
    expect((await t.admin('invoice/mark_as_paid', { id: invoiceId })).status).toBe(409);
    await staff.getByRole('heading', { name: 'Invoice ACME-1' }).waitFor();
    expect(await staff.getByRole('main').textContent()).toContain('Acme API Ltd');
    await settled(staff);
    await shot(staff, 'admin-invoice.png');
  });

  it('lets the customer download the invoice PDF, which names the number, both parties, the tax and the total', async () => {
    await client.goto(`${base}/invoices/${invoiceId}`);
    await client.getByRole('heading', { name: 'Invoice ACME-1' }).waitFor();
    const [download] = await Promise.all([client.waitForEvent('download'), client.getByRole('link', { name: 'Download PDF' }).click()]);
    expect(download.suggestedFilename()).toBe('ACME-1.pdf');
    const file = join(SHOTS, 'invoice-ACME-1.pdf');
    await download.saveAs(file);
    const text = execFileSync('pdftotext', ['-layout', file, '-'], { encoding: 'utf8' });
    expect(text).toContain('Invoice ACME-1');
    expect(text).toContain('Acme API Ltd');
    expect(text).toContain('DE999999999');
    expect(text).toContain('Ada Lovelace');
    expect(text).toContain(CUSTOMER.email);
    expect(text).toMatch(/Discount \(WELCOME10\)\s+-1\.90 USD/);
    expect(text).toMatch(/VAT \(20%\)\s+3\.42 USD/);
    expect(text).toMatch(/Total\s+20\.52 USD/);
    expect(text).toContain('paid');
    // The guest link to the same invoice shows the same document without logging in.
    const hash = (await t.admin('invoice/get', { id: invoiceId })).result.hash as string;
    const guest = await browser.newPage();
    await guest.goto(`${base}/invoice/${hash}`);
    await guest.getByRole('heading', { name: 'Invoice ACME-1' }).waitFor();
    const guestText = await guest.getByRole('main').textContent();
    expect(guestText).toContain('Acme API Ltd');
    expect(guestText).toContain('VAT (20%)');
    expect(await guest.getByRole('link', { name: 'Download PDF' }).getAttribute('href')).toBe(`/api/guest/invoice/pdf?hash=${hash}`);
    await guest.close();
    // Leave the customer where the next step expects them: on a page without a second link to the keys.
    await client.goto(`${base}/orders`);
    await client.getByRole('heading', { name: 'Orders' }).waitFor();
    await settled(client);
  });

  it('shows the customer the key, which validates, and copies it', async () => {
    await client.getByRole('link', { name: 'API keys' }).click();
    const card = client.getByRole('article').filter({ hasText: 'Pro API' });
    await card.getByTestId('key-validity').filter({ hasText: 'Valid' }).waitFor();
    orderId = Number((await card.getAttribute('data-testid'))?.replace('key-', ''));
    expect(orderId).toBeGreaterThan(0);

    await card.getByRole('button', { name: 'Show key' }).click();
    firstKey = (await card.getByTestId('api-key').textContent())!.trim();
    expect(firstKey).toMatch(/^[0-9A-F]{8}(-[0-9A-F]{8}){3}$/);
    await card.getByRole('button', { name: 'Copy key' }).click();
    await card.getByText('Copied the key to the clipboard.').waitFor();
    expect(await client.evaluate(() => navigator.clipboard.readText())).toBe(firstKey);

    expect(await check(firstKey)).toBe(true);
    expect(await check(firstKey)).toBe(true);
    expect(await check(firstKey)).toBe(true);

    // The usage chart counts those checks against the plan's monthly limit (counts are flushed about every second).
    await expect
      .poll(
        async () => {
          await client.reload();
          // The checks chart, named by its caption: the card also shows "Answers by outcome" (key analytics).
          const figure = client.getByRole('article').filter({ hasText: 'Pro API' }).getByRole('figure', { name: /^Checks/ });
          await figure.waitFor();
          return figure.textContent();
        },
        { timeout: 15_000, interval: 1_000 },
      )
      .toContain('3 of 1,000 used this period');
    // Used / included, projected extra charge (this plan bills no overage: no extra charge is shown).
    const usageLine = client.getByRole('article').filter({ hasText: 'Pro API' }).getByTestId('usage-line');
    expect(await usageLine.textContent()).toMatch(/3 used \/ 1,000 included/);
    await settled(client);
    await shot(client, 'client-keys.png');
    await client.setViewportSize({ width: 390, height: 844 });
    await shot(client, 'client-keys-phone.png');
    await client.setViewportSize({ width: 1200, height: 900 });
  });

  it('lets the customer reset the key after a confirmation; the old key stops validating', async () => {
    const card = client.getByRole('article').filter({ hasText: 'Pro API' });
    await card.getByRole('button', { name: 'Reset key…' }).click();
    await card.getByRole('button', { name: 'Cancel' }).click();
    expect(await check(firstKey)).toBe(true);

    await card.getByRole('button', { name: 'Reset key…' }).click();
    await card.getByRole('button', { name: 'Reset the key' }).click();
    await card.getByText('A new key was issued').waitFor();
    await client.waitForFunction((old) => {
      const code = document.querySelector('[data-testid="api-key"]');
      const text = code?.textContent ?? '•';
      return !text.includes('•') && text.trim() !== old;
    }, firstKey);
    secondKey = (await card.getByTestId('api-key').textContent())!.trim();
    expect(secondKey).not.toBe(firstKey);
    expect(await check(firstKey)).toBe(false);
    expect(await check(secondKey)).toBe(true);
  });

  it('lets staff switch the key off, and the client area shows it invalid', async () => {
    await staff.getByRole('link', { name: 'Keys', exact: true }).click();
    await staff.getByRole('link', { name: `Key of order #${orderId}` }).click();
    await staff.getByTestId('admin-api-key').filter({ hasText: secondKey }).waitFor();
    await staff.getByRole('button', { name: 'Switch the key off' }).click();
    await staff.getByText('The key is switched off').waitFor();
    await settled(staff);
    await shot(staff, 'admin-key.png');
    expect(await check(secondKey)).toBe(false);

    await client.reload();
    const card = client.getByRole('article').filter({ hasText: 'Pro API' });
    await card.getByTestId('key-validity').filter({ hasText: 'Not valid' }).waitFor();
    expect(await card.getByTestId('key-reason').textContent()).toBe('Switched off by the administrator');
  });

  it('shows the 403 when the page has lost its CSRF token, not a blank screen', async () => {
    await clientContext.clearCookies({ name: 'csrf_token' });
    const card = client.getByRole('article').filter({ hasText: 'Pro API' });
    await card.getByRole('button', { name: 'Reset key…' }).click();
    await card.getByRole('button', { name: 'Reset the key' }).click();
    const alert = card.getByRole('alert').filter({ hasText: 'CSRF' });
    await alert.waitFor();
    expect(await alert.textContent()).toContain('403');
    expect(await check(secondKey)).toBe(false);

    await client.reload();
    const banner = client.getByRole('main').getByRole('alert').filter({ hasText: 'CSRF' });
    await banner.waitFor();
    expect(await banner.textContent()).toContain('403');
    await client.getByRole('heading', { level: 1 }).first().waitFor();
  });

  it('renders every page of both areas without a script error or an error message', async () => {
    const problems: string[] = [];
    for (const page of [client, staff]) {
      page.on('pageerror', (error) => problems.push(`${page.url()}: ${error.message}`));
      page.on('console', (message) => {
        if (message.type() === 'error') problems.push(`${page.url()}: console: ${message.text()}`);
      });
    }
    // The client got a fresh session cookie set back after the CSRF test? Log in again to be sure.
    await client.goto(`${base}/login`);
    await client.getByLabel('E-mail').fill(CUSTOMER.email);
    await client.getByLabel('Password').fill(CUSTOMER.password);
    await client.getByLabel('Password').press('Enter');
    await client.getByText(`Signed in as ${CUSTOMER.email}`).waitFor();
    for (const name of ['Orders', 'Invoices', 'Profile', 'Plans', 'Cart']) {
      await client.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true }).click();
      await client.getByRole('heading', { level: 1 }).waitFor();
      await settled(client);
      expect(await client.getByRole('alert').count(), name).toBe(0);
    }
    for (const name of ['Clients', 'Products', 'Orders', 'Invoices', 'Keys', 'Coupons', 'Taxes', 'Settings', 'Profile', 'Staff']) {
      await staff.getByRole('navigation', { name: 'Admin' }).getByRole('link', { name, exact: true }).click();
      await staff.getByRole('heading', { level: 1 }).waitFor();
      await settled(staff);
      expect(await staff.getByRole('alert').count(), name).toBe(0);
    }
    await staff.getByRole('link', { name: 'Admin groups and permissions' }).click();
    await staff.getByRole('heading', { name: 'Admin groups' }).waitFor();
    await settled(staff);
    await staff.goto(`${base}/admin/orders/${orderId}`);
    await staff.getByRole('heading', { name: 'Actions' }).waitFor();
    await settled(staff);
    expect(await staff.getByRole('alert').count()).toBe(0);
    // The admin order page shows this period's use against the plan, as the client area does.
    expect(await staff.getByTestId('usage-line').textContent()).toMatch(/\d+ used \/ 1,000 included/);
    expect(problems.filter((problem) => !/status of 4\d\d/.test(problem))).toEqual([]);
  });

  it('lets the customer hold several named keys on one order: add, rename, rotate with a grace period, delete', async () => {
    // A plan allowing two keys, bought for the customer through the API (the purchase flow is tested above).
    const team = (await t.admin('product/prepare', { title: 'Team API', type: 'apikey' })).result as number;
    expect((await t.admin('product/update', { id: team, status: 'enabled', config: { max_keys: 2, custom: { tier: 'team' } } })).body.error).toBeNull();
    const customer = (await t.admin('client/get_list', { search: CUSTOMER.email })).result.list[0] as { id: number };
    const teamOrder = (await t.admin('order/create', { client_id: customer.id, product_id: team, activate: true })).result as number;

    await client.goto(`${base}/keys`);
    const card = client.getByTestId(`key-${teamOrder}`);
    await card.getByRole('heading', { name: /Team API/ }).waitFor();
    await settled(client);
    // One badge, not "Valid Valid"; no uses yet: a sentence instead of an empty table.
    expect((await card.getByTestId('key-validity').textContent())?.trim()).toBe('Valid');
    await card.getByText('Daily figures').click();
    await card.getByTestId('no-daily-figures').waitFor();
    expect(await card.getByRole('table').count()).toBe(0);

    // "Check with the server" counts a use, and the usage shown follows at once.
    await card.getByRole('button', { name: 'Check with the server' }).click();
    await card.getByTestId('server-check').filter({ hasText: 'valid' }).waitFor();
    await card.getByRole('figure').filter({ hasText: '1 use this period' }).waitFor();

    // Add a named key, up to the plan's two; a third is refused with the server's reason.
    await card.getByLabel('Name of a new key').fill('staging');
    await card.getByRole('button', { name: 'Add a key' }).click();
    await card.getByText('Added staging.').waitFor();
    await card.getByRole('heading', { name: 'Keys (2)' }).waitFor();
    await card.getByRole('button', { name: 'Add a key' }).click();
    await card.getByRole('alert').filter({ hasText: 'allows 2 keys' }).waitFor();
    const keys = (await t.admin('serviceapikey/get', { order_id: teamOrder })).result.keys as Array<{ id: number; name: string | null; api_key: string }>;
    const staging = keys.find((key) => key.name === 'staging')!;
    const main = keys.find((key) => key.name === null)!;
    expect(await check(staging.api_key)).toBe(true);

    // Rename the first key.
    const mainRow = card.getByTestId(`key-row-${main.id}`);
    await mainRow.getByRole('button', { name: 'Rename…' }).click();
    await mainRow.getByLabel('Name', { exact: true }).fill('production');
    await mainRow.getByRole('button', { name: 'Save name' }).click();
    await card.getByRole('heading', { name: 'production' }).waitFor();

    // Rotate it, keeping the old key working for a day.
    await mainRow.getByRole('button', { name: 'Reset key…' }).click();
    await mainRow.getByLabel('Keep the old key working for').selectOption('86400');
    await mainRow.getByRole('button', { name: 'Reset the key' }).click();
    await mainRow.getByText('The old key keeps working for 1 day').waitFor();
    await mainRow.getByTestId('rotating-until').waitFor();
    expect(await check(main.api_key)).toBe(true);
    const rotated = (await mainRow.getByTestId('api-key').textContent())!.trim();
    expect(rotated).not.toBe(main.api_key);
    expect(await check(rotated)).toBe(true);
    expect((await t.call('/api/guest/serviceapikey/get_info', { key: main.api_key })).result.rotating_until).toEqual(expect.any(String));

    // Delete the staging key: it stops at once; the last key cannot be deleted (no button).
    const stagingRow = card.getByTestId(`key-row-${staging.id}`);
    await stagingRow.getByRole('button', { name: 'Delete key…' }).click();
    await stagingRow.getByRole('button', { name: 'Delete the key' }).click();
    await card.getByRole('heading', { name: 'Key', exact: true }).waitFor();
    expect(await check(staging.api_key)).toBe(false);
    expect(await card.getByRole('button', { name: 'Delete key…' }).count()).toBe(0);
    await settled(client);
    await shot(client, 'client-keys-several.png');

    // Staff see the order's keys with their names.
    await staff.goto(`${base}/admin/keys/${teamOrder}`);
    await staff.getByRole('heading', { name: 'Keys of this order (1)' }).waitFor();
    await staff.getByTestId('admin-api-key').filter({ hasText: rotated }).waitFor();
    await staff.getByRole('cell', { name: 'production' }).waitFor();
    await staff.getByRole('button', { name: 'Add a key' }).click();
    await staff.getByRole('heading', { name: 'Keys of this order (2)' }).waitFor();
    await settled(staff);
    await shot(staff, 'admin-keys-several.png');
  });

  it('shows the admin dashboard with the figures and the key checks chart', async () => {
    await staff.getByRole('link', { name: 'Dashboard' }).click();
    await staff.getByRole('heading', { name: 'Key checks per day' }).waitFor();
    await settled(staff);
    const stats = await staff.locator('.stats').textContent();
    expect(stats).toContain('Clients');
    expect(stats).toContain('20.52 USD');
    expect(await staff.getByRole('figure', { name: /Checks of all active keys/ }).textContent()).toMatch(/\d+ uses? this period/);
    await shot(staff, 'admin-dashboard.png');

    await staff.getByRole('link', { name: 'Clients', exact: true }).click();
    await staff.getByLabel('Search (e-mail, name, company)').fill('Lovelace');
    await staff.getByLabel('Search (e-mail, name, company)').press('Enter');
    await staff.getByRole('link', { name: 'Ada Lovelace' }).click();
    await staff.getByRole('heading', { name: 'Orders' }).waitFor();
    await settled(staff);
    await shot(staff, 'admin-client.png');

    await staff.getByRole('link', { name: 'Products', exact: true }).click();
    // A "New product" button, not a form at the top; the type reads "API key".
    await staff.getByRole('button', { name: 'New product' }).waitFor();
    expect(await staff.getByRole('heading', { name: 'New product' }).count()).toBe(0);
    expect(await staff.getByRole('row').filter({ hasText: 'Pro API' }).textContent()).toContain('API key');
    await staff.getByRole('link', { name: 'Pro API' }).click();
    await staff.getByRole('heading', { name: 'Key options and plan parameters' }).waitFor();
    await settled(staff);
    // monthlyLimit is a number field of its own; the rows keep the other custom parameters.
    // The form fills once the product has loaded, which may come after the heading: wait for the values.
    await expect.poll(() => staff.getByLabel('Included calls per period').inputValue()).toBe('1000');
    await expect.poll(() => staff.getByLabel('Parameter 1 name').inputValue()).toBe('tier');
    expect(await staff.getByRole('button', { name: /^Save/ }).count()).toBe(1);
    await shot(staff, 'admin-product.png');
  });

  it('lets staff price a plan by use in the product form, with a live price preview and errors named by field', async () => {
    await staff.getByLabel('Included calls per period').fill('10000');
    await staff.getByLabel('Beyond the included calls').selectOption('package');
    await staff.getByLabel('Calls per package').fill('1000');
    await staff.getByLabel('Price per package').fill('1.00');
    await staff.getByLabel('Hard limit (calls per period)').fill('50000');
    // In the instance's currency, never a hard-coded "$" (issue 21 item 3).
    expect(await staff.getByTestId('price-preview').textContent()).toBe('19 USD/month includes 10,000 calls, then 1 USD per 1,000, at most 50,000 calls.');
    // Graduated tiers: rows, with the preview following them.
    await staff.getByLabel('Beyond the included calls').selectOption('graduated');
    // A new tier goes before the last one ("all the rest").
    await staff.getByRole('button', { name: 'Add a tier' }).click();
    await staff.getByLabel('Tier 1 price per call').fill('0.002');
    await staff.getByLabel('Tier 1 up to').fill('5000');
    await staff.getByLabel('Tier 2 price per call').fill('0.001');
    expect(await staff.getByTestId('price-preview').textContent()).toBe(
      '19 USD/month includes 10,000 calls, then 0.002 USD per call up to 15,000, 0.001 USD per call beyond 15,000, at most 50,000 calls.',
    );
    // A price with 7 decimals: the server's 422 names the field, shown in the form in the form's own words.
    await staff.getByLabel('Tier 2 price per call').fill('0.0000001');
    await staff.getByRole('button', { name: 'Save' }).click();
    await staff.getByRole('alert').filter({ hasText: /^Tier 2 price per call / }).waitFor();
    await staff.getByLabel('Tier 2 price per call').fill('0.001');
    await staff.getByRole('button', { name: 'Save' }).click();
    await staff.getByText('Saved.').waitFor();
    const saved = (await t.admin('product/get', { id: productId })).result.config;
    expect(saved).toMatchObject({
      included: 10000,
      hard_limit: 50000,
      custom: { tier: 'pro', monthlyLimit: 10000 },
      overage: { mode: 'graduated', tiers: [{ up_to: 5000, unit_price: '0.002' }, { up_to: null, unit_price: '0.001' }] },
    });
    await settled(staff);
    await shot(staff, 'admin-product-usage.png');
  });
});
