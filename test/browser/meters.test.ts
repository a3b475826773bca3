// Issue 23 item 4 in a real Chromium: the client key page and the admin key page chart each of the plan's own meters
// beside the calls chart — used / included with the hard limit marked, the projected charge, the days as bars and as a
// table — and a plan without meters shows no meter section. Screenshots land in test-results/.
/// <reference lib="dom" />
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { buyKey, createPlan } from '../helpers/apikey.ts';
import { HAVE_CHROMIUM, launchChromium, loginAsAdmin, newStaffPage, serveWeb, settled, SHOTS } from '../helpers/browser.ts';

const METERS = [
  { code: 'tokens', name: 'Tokens', unit: 'token', aggregation: 'sum', included: 1000, overage: { mode: 'per_unit', unit_price: '0.01' }, hard_limit: 5000 },
  { code: 'users', name: 'Users', unit: 'user', aggregation: 'unique_count', property: 'user', included: 10 },
];

/** The day rows of a meter's table, as [day, figure] text. */
async function tableRows(figure: Locator): Promise<string[][]> {
  const rows = figure.getByTestId('meter-days').locator('tbody tr');
  return rows.evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '')));
}

/** The two meters' charts on a page, checked figure by figure. */
async function expectMeterCharts(area: Locator, today: string): Promise<void> {
  const section = area.getByTestId('meter-charts');
  await section.waitFor();
  expect(await section.getByRole('heading', { name: 'Meters this period' }).count()).toBe(1);
  expect(await section.locator('figure').count()).toBe(2);

  const tokens = section.getByTestId('meter-tokens');
  expect(await tokens.getByTestId('meter-line').textContent()).toBe('1,550 used / 1,000 included; 550 over, projected charge 5.50 USD; stops at 5,000');
  const bar = tokens.getByRole('meter', { name: 'Tokens used this period' });
  expect([await bar.getAttribute('aria-valuenow'), await bar.getAttribute('aria-valuemax')]).toEqual(['1550', '5000']);
  // The hard limit is marked at the end of the scale (it is the greatest figure), the included units at a fifth.
  expect(await tokens.getByTestId('hard-limit-mark').getAttribute('style')).toContain('left: 100%');
  expect(await tokens.locator('.meter-mark.included').getAttribute('style')).toContain('left: 20%');
  // One bar per day of the period; the measured day is the tallest.
  expect(await tokens.locator('svg rect title').filter({ hasText: `${today}: 1,550` }).count()).toBe(1);
  await tokens.getByText('Daily figures: Tokens').click();
  expect(await tableRows(tokens)).toEqual([[today, '1,550']]);

  const users = section.getByTestId('meter-users');
  expect(await users.getByTestId('meter-line').textContent()).toBe('3 used / 10 included');
  expect(await users.getByTestId('hard-limit-mark').count()).toBe(0);
  await users.getByText('Daily figures: Users').click();
  expect(await tableRows(users)).toEqual([[today, '3']]);
}

describe.runIf(HAVE_CHROMIUM)('the meters of a plan, in the browser', () => {
  let t: TestApp;
  let web: FastifyInstance;
  let base: string;
  let browser: Browser;
  let client: Page;
  let staff: Page;
  let buyer: Awaited<ReturnType<TestApp['createClient']>>;
  let meteredOrder: number;
  let plainOrder: number;

  beforeAll(async () => {
    t = await createTestApp();
    ({ web, base } = await serveWeb(t));
    browser = await launchChromium();
    client = await newStaffPage(browser);
    staff = await newStaffPage(browser);
    buyer = await t.createClient();
    const metered = await createPlan(t, { meters: METERS, custom: { tier: 'ai' } });
    const plain = await createPlan(t, { included: 100, custom: { tier: 'plain' } });
    meteredOrder = (await buyKey(t, metered, buyer.id)).orderId;
    plainOrder = (await buyKey(t, plain, buyer.id)).orderId;
    const at = new Date(Date.now() - 60_000).toISOString();
    const events = [
      { id: 'a', order_id: meteredOrder, meter: 'tokens', value: 1200, timestamp: at },
      { id: 'b', order_id: meteredOrder, meter: 'tokens', value: 350, timestamp: at },
      ...['ann', 'bob', 'cy', 'ann'].map((user, index) => ({ id: `u${index}`, order_id: meteredOrder, meter: 'users', timestamp: at, properties: { user } })),
    ];
    expect((await t.admin('usage/ingest', { events })).result).toEqual({ accepted: 6, duplicates: 0, rejected: [] });
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await web?.close();
    await t?.close();
  });

  it('charts both meters on the client key page beside the calls, and no meter section for a plan without meters', async () => {
    const today = new Date().toISOString().slice(0, 10);
    await client.goto(`${base}/login`);
    await client.getByLabel('E-mail').fill(buyer.email);
    await client.getByLabel('Password').fill(buyer.password);
    await client.getByLabel('Password').press('Enter');
    await client.waitForURL(/\/(keys|cart)$/);
    await client.goto(`${base}/keys`);
    const card = client.getByTestId(`key-${meteredOrder}`);
    await card.getByRole('figure').filter({ hasText: 'Checks' }).waitFor();
    await expectMeterCharts(card, today);
    await settled(client);
    await card.screenshot({ path: join(SHOTS, 'meters-client-key.png') });

    const plainCard = client.getByTestId(`key-${plainOrder}`);
    await plainCard.getByRole('figure').filter({ hasText: 'Checks' }).waitFor();
    expect(await plainCard.getByTestId('meter-charts').count()).toBe(0);
    expect(await plainCard.getByText('Meters this period').count()).toBe(0);
  });

  it('charts both meters on the admin key page, and none for a plan without meters', async () => {
    const today = new Date().toISOString().slice(0, 10);
    await loginAsAdmin(staff, base);
    await staff.goto(`${base}/admin/keys/${meteredOrder}`);
    await expectMeterCharts(staff.getByRole('main'), today);
    await settled(staff);
    await staff.screenshot({ path: join(SHOTS, 'meters-admin-key.png'), fullPage: true });

    await staff.goto(`${base}/admin/keys/${plainOrder}`);
    await staff.getByRole('figure').filter({ hasText: 'Checks' }).waitFor();
    expect(await staff.getByTestId('meter-charts').count()).toBe(0);
  });

  it('charts both meters on the admin order page too, and none for a plan without meters', async () => {
    const today = new Date().toISOString().slice(0, 10);
    // Logged in by the test above (the same browser context).
    await staff.goto(`${base}/admin/orders/${meteredOrder}`);
    await expectMeterCharts(staff.getByRole('main'), today);

    await staff.goto(`${base}/admin/orders/${plainOrder}`);
    await staff.getByRole('heading', { name: 'Usage this period' }).waitFor();
    expect(await staff.getByTestId('meter-charts').count()).toBe(0);
  });
});
