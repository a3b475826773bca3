// Screenshots of the pages issue 14 reworked, for docs/screenshots/: the plans page, an invoice, the client's key
// page, the admin order page and the product form, from a fresh shop (test/helpers/panel-seed.ts) in Debian's Chromium. Run: `npx tsx scripts/screenshots.ts
// [suffix]` (e.g. `before` or `after`); files are `<page>-<suffix>.png`, viewport-sized to stay small.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Page } from 'playwright-core';
import { buildApp } from '../src/app.ts';
import { ensureWebBuilt, WEB_DIST_DIR } from '../src/http/web-build.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD, createTestApp } from '../test/helpers/app.ts';
import { seedShop } from '../test/helpers/panel-seed.ts';

const suffix = process.argv[2] ?? 'after';
const out = join(process.cwd(), 'docs', 'screenshots');
mkdirSync(out, { recursive: true });

const t = await createTestApp();
await ensureWebBuilt();
const web = buildApp(t.services, { webDistDir: WEB_DIST_DIR });
const base = await web.listen({ host: '127.0.0.1', port: 0 });
const shop = await seedShop(t);
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu'] });
try {
  const settle = (page: Page) => page.waitForFunction(() => document.querySelectorAll('[aria-busy="true"]').length === 0 && !document.querySelector('.loading'));
  const shot = async (page: Page, name: string) => {
    await settle(page);
    await page.waitForTimeout(200);
    await page.screenshot({ path: join(out, `${name}-${suffix}.png`), fullPage: true });
  };
  const client = await (await browser.newContext({ viewport: { width: 1100, height: 700 } })).newPage();
  await client.goto(`${base}/`);
  await client.getByRole('article').first().waitFor();
  await shot(client, 'plans');
  await client.goto(`${base}/login`);
  await client.getByLabel('E-mail').fill(shop.customer.email);
  await client.getByLabel('Password').fill(shop.customer.password);
  await client.getByRole('button', { name: 'Log in' }).click();
  await client.getByText(`Signed in as ${shop.customer.email}`).waitFor();
  await client.goto(`${base}/invoices/${shop.unpaidInvoice}`);
  await client.getByRole('heading', { level: 1 }).waitFor();
  await shot(client, 'invoice');
  await client.goto(`${base}/keys`);
  await client.getByRole('heading', { level: 1 }).waitFor();
  await shot(client, 'keys');

  const staff = await (await browser.newContext({ viewport: { width: 1100, height: 700 } })).newPage();
  await staff.goto(`${base}/admin`);
  await staff.getByLabel('E-mail').fill(ADMIN_EMAIL);
  await staff.getByLabel('Password').fill(ADMIN_PASSWORD);
  await staff.getByRole('button', { name: 'Log in' }).click();
  await staff.getByRole('heading', { name: 'Dashboard' }).waitFor();
  await staff.goto(`${base}/admin/orders/${shop.paidOrder}`);
  await staff.getByRole('heading', { name: 'Actions' }).waitFor();
  await shot(staff, 'admin-order');
  await staff.goto(`${base}/admin/orders`);
  await staff.getByRole('table').waitFor();
  await shot(staff, 'admin-orders');
  await staff.goto(`${base}/admin/products/${shop.keyPlan}`);
  await staff.getByRole('heading', { level: 1 }).waitFor();
  await shot(staff, 'product-form');
} finally {
  await browser.close();
  await web.close();
  await t.close();
}
