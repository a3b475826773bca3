// Issue 25 item 6 in a real Chromium: the admin key page, the admin order page and the client key page chart a key's
// answers by outcome with uPlot, switch between 24 hours, 30 days and 12 months, and give the same figures as text and
// as a table for screen readers; the admin keys list shows each key's last use and sorts by it. axe finds no serious
// or critical violation at 1280 and 390 px; UPDATE_SCREENSHOTS=1 writes docs/screenshots/key-analytics-*.png.
/// <reference lib="dom" />
import type { FastifyInstance } from 'fastify';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { buyKey, createPlan } from '../helpers/apikey.ts';
import { HAVE_CHROMIUM, launchChromium, loginAsAdmin, newStaffPage, serveWeb, settled } from '../helpers/browser.ts';
import { reviewAtBothWidths } from '../helpers/page-review.ts';

/** The outcome table's rows as text, cell by cell. */
async function tableRows(figure: Locator): Promise<string[][]> {
  const details = figure.locator('details');
  if ((await details.getAttribute('open')) === null) await details.locator('summary').click();
  return figure.getByTestId('outcome-table').locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('th, td')].map((cell) => cell.textContent ?? '')));
}

/** The chart in `area`, its totals line, its table and its range switch, checked against the answers made. */
async function expectOutcomeChart(area: Locator): Promise<void> {
  const figure = area.getByTestId('key-analytics');
  await figure.getByTestId('outcome-totals').waitFor();
  expect(await figure.getByTestId('outcome-totals').textContent()).toBe('3 valid, 2 rate limited, 1 disabled');
  expect(await figure.getByTestId('last-used').textContent()).toMatch(/Last used: \d{4}-\d\d-\d\d \d\d:\d\d UTC from 203\.0\.113\.9/);
  // uPlot drew its canvas inside the labelled box.
  const plot = figure.getByTestId('outcome-plot');
  expect(await plot.getAttribute('aria-label')).toBe('Answers by outcome, last 24 hours: 3 valid, 2 rate limited, 1 disabled.');
  expect(await plot.locator('canvas').count()).toBe(1);
  const hour = `${new Date().toISOString().slice(0, 10)} ${new Date().toISOString().slice(11, 13)}:00 UTC`;
  expect(await tableRows(figure)).toEqual([[hour, '3', '2', '1']]);
  // 30 days: one row, today's.
  await figure.getByRole('button', { name: '30 days' }).click();
  await figure.getByText('Figures per day').waitFor();
  expect(await figure.getByRole('button', { name: '30 days' }).getAttribute('aria-pressed')).toBe('true');
  expect(await tableRows(figure)).toEqual([[new Date().toISOString().slice(0, 10), '3', '2', '1']]);
  await figure.getByRole('button', { name: '12 months' }).click();
  await figure.getByText('(last 12 months, UTC)').waitFor();
  expect(await figure.getByTestId('outcome-totals').textContent()).toBe('3 valid, 2 rate limited, 1 disabled');
  await figure.getByRole('button', { name: '24 hours' }).click();
  await figure.getByText('Figures per hour').waitFor();
}

/**
 * An order of a plan named as an operator would, with 24 hours of answers written as a day of flushes would have
 * written them (a working day's curve of valid checks, a burst over the rate limit, a spell of spent quota).
 */
async function seedShowcase(t: TestApp, clientId: number): Promise<number> {
  const product = (await t.admin('product/prepare', { title: 'Pro API', type: 'apikey' })).result as number;
  await t.admin('product/update', { id: product, status: 'enabled', config: { custom: { tier: 'pro' } } });
  const { orderId, keyId } = await buyKey(t, product, clientId);
  const hour = 3_600_000;
  const now = Date.now() - (Date.now() % hour);
  const zero = { valid: 0, not_active: 0, disabled: 0, client_inactive: 0, rate_limited: 0, limit_exceeded: 0, no_credit: 0, trial_ended: 0, expired: 0 };
  const rows = Array.from({ length: 24 }, (_, i) => {
    const at = now - (23 - i) * hour;
    const daytime = Math.sin((((new Date(at).getUTCHours() - 6 + 24) % 24) / 24) * Math.PI);
    return {
      api_key_id: keyId,
      unit: 'hour',
      at: new Date(at).toISOString().slice(0, 16) + ':00Z',
      ...zero,
      valid: Math.round(400 + 900 * daytime),
      rate_limited: i === 15 ? 180 : i === 16 ? 60 : 0,
      limit_exceeded: i >= 20 && i <= 21 ? 35 : 0,
    };
  });
  await t.services.db.insertInto('api_key_outcomes').values(rows).execute();
  await t.services.db.insertInto('api_key_last_use').values({ api_key_id: keyId, at: new Date().toISOString(), ip: '203.0.113.42' }).execute();
  return orderId;
}

describe.runIf(HAVE_CHROMIUM)('key analytics, in the browser', () => {
  let t: TestApp;
  let web: FastifyInstance;
  let base: string;
  let browser: Browser;
  let staff: Page;
  let client: Page;
  let buyer: Awaited<ReturnType<TestApp['createClient']>>;
  let orderId: number;
  let idleOrder: number;
  let showcaseOrder: number;

  beforeAll(async () => {
    t = await createTestApp();
    ({ web, base } = await serveWeb(t));
    browser = await launchChromium();
    staff = await newStaffPage(browser);
    client = await newStaffPage(browser);
    buyer = await t.createClient();
    const plan = await createPlan(t, { rate_limit: { limit: 3, window_seconds: 60 }, custom: { tier: 'pro' } });
    const bought = await buyKey(t, plan, buyer.id);
    orderId = bought.orderId;
    idleOrder = (await buyKey(t, plan, buyer.id)).orderId;
    const check = (ip: string) => t.call('/api/guest/serviceapikey/check', { key: bought.key }, { ip });
    for (let i = 0; i < 5; i++) await check('203.0.113.8');
    await t.admin('serviceapikey/update', { order_id: orderId, valid: false });
    await check('203.0.113.9');
    await t.admin('serviceapikey/update', { order_id: orderId, valid: true });
    await t.services.apikeys.flushUsage();
    showcaseOrder = await seedShowcase(t, buyer.id);
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await web?.close();
    await t?.close();
  });

  it('charts the outcomes on the admin key page, with no serious axe violation at 1280 and 390 px', async () => {
    await loginAsAdmin(staff, base);
    await staff.goto(`${base}/admin/keys/${orderId}`);
    await expectOutcomeChart(staff.getByRole('main'));
    // The docs' screenshots show a key with a day of history.
    await staff.goto(`${base}/admin/keys/${showcaseOrder}`);
    await staff.getByTestId('key-analytics').getByTestId('outcome-totals').waitFor();
    const found = await reviewAtBothWidths(staff, 'key-analytics', async () => {
      await staff.getByTestId('key-analytics').getByTestId('outcome-plot').locator('canvas').waitFor();
      await settled(staff);
      await staff.getByTestId('key-analytics').scrollIntoViewIfNeeded();
    });
    expect(found).toEqual({ '1280': [], '390': [] });
    // On a phone the chart fits the screen.
    await staff.setViewportSize({ width: 390, height: 844 });
    await staff.waitForFunction(() => (document.querySelector('[data-testid="outcome-plot"] canvas')?.getBoundingClientRect().width ?? 999) <= 390);
    await staff.setViewportSize({ width: 1280, height: 800 });
  });

  it('shows an idle key as never used, with no rows', async () => {
    await staff.goto(`${base}/admin/keys/${idleOrder}`);
    const figure = staff.getByTestId('key-analytics');
    await figure.getByTestId('outcome-totals').waitFor();
    expect(await figure.getByTestId('outcome-totals').textContent()).toBe('0 valid');
    expect(await figure.getByTestId('last-used').textContent()).toBe('Last used: never');
    await figure.locator('summary').click();
    expect(await figure.getByTestId('no-outcomes').textContent()).toBe('No answers in this range.');
  });

  it('charts the outcomes on the admin order page', async () => {
    await staff.goto(`${base}/admin/orders/${orderId}`);
    await expectOutcomeChart(staff.getByRole('main'));
  });

  it('shows last use in the admin keys list and sorts by it', async () => {
    await staff.goto(`${base}/admin/keys`);
    await staff.getByLabel('Sort by').selectOption('last_used');
    await staff.getByRole('button', { name: 'Filter' }).click();
    const table = staff.getByRole('table', { name: 'API keys by last use' });
    await table.waitFor();
    await settled(staff);
    const rows = await table.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '')));
    // The most recently used first (the showcase's last use was written after the checks), each with its last
    // address; the idle key after them, never used.
    expect(rows[0]![0]).toContain(`order #${showcaseOrder}`);
    expect(rows[0]!.at(-1)).toMatch(/UTC from 203\.0\.113\.42$/);
    expect(rows[1]![0]).toContain(`order #${orderId}`);
    expect(rows[1]!.at(-1)).toMatch(/UTC from 203\.0\.113\.9$/);
    expect(rows.findIndex((row) => row[0]!.includes(`order #${idleOrder}`))).toBe(2);
    expect(rows.find((row) => row[0]!.includes(`#${idleOrder}`))!.at(-1)).toBe('Never');
  });

  it("charts the outcomes on the client's key page", async () => {
    await client.goto(`${base}/login`);
    await client.getByLabel('E-mail').fill(buyer.email);
    await client.getByLabel('Password').fill(buyer.password);
    await client.getByLabel('Password').press('Enter');
    await client.waitForURL(/\/(keys|cart)$/);
    await client.goto(`${base}/keys`);
    await expectOutcomeChart(client.getByTestId(`key-${orderId}`));
  });
});
