// "Usage alerts" on the client's keys page in a real Chromium (issue 23 item 7): the customer sees each meter of the
// plan with the plan's percentages, adds their own for a meter (saved through client/serviceapikey/alerts_set), sees
// the server's refusal of a bad list named, and clears them again. Screenshots land in test-results/.
/// <reference lib="dom" />
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { buyKey, createPlan } from '../helpers/apikey.ts';
import { HAVE_CHROMIUM, launchChromium, newStaffPage, serveWeb, settled, SHOTS } from '../helpers/browser.ts';

describe.runIf(HAVE_CHROMIUM)('the client sets usage alerts per meter on the keys page', () => {
  let t: TestApp;
  let web: FastifyInstance;
  let base: string;
  let browser: Browser;
  let client: Page;
  let orderId: number;
  let buyer: Awaited<ReturnType<TestApp['createClient']>>;
  const own = async (meter: string): Promise<number[]> =>
    ((await t.admin('serviceapikey/alerts_get', { order_id: orderId })).result.meters as Array<{ meter: string; client: number[] }>).find((item) => item.meter === meter)!.client;

  beforeAll(async () => {
    t = await createTestApp();
    ({ web, base } = await serveWeb(t));
    browser = await launchChromium();
    client = await newStaffPage(browser);
    buyer = await t.createClient();
    const plan = await createPlan(t, { included: 1000, meters: [{ code: 'tokens', name: 'Tokens', unit: 'tokens', aggregation: 'sum', included: 1_000_000 }] });
    orderId = (await buyKey(t, plan, buyer.id)).orderId;
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await web?.close();
    await t?.close();
  });

  it('adds percentages to a meter, shows a refusal named, and clears them', async () => {
    await client.goto(`${base}/login`);
    await client.getByLabel('E-mail').fill(buyer.email);
    await client.getByLabel('Password').fill(buyer.password);
    await client.getByLabel('Password').press('Enter');
    await client.waitForURL(/\/(keys|cart)$/);
    await client.goto(`${base}/keys`);
    await client.getByRole('heading', { name: 'Usage alerts' }).waitFor();
    await settled(client);
    // Each meter's form with its messages.
    const tokens = client.getByTestId('alerts-tokens');
    const calls = client.getByTestId('alerts-calls');
    await tokens.getByRole('form', { name: 'Usage alerts for Tokens' }).waitFor();
    expect(await calls.textContent()).toContain("The plan's alerts: 80%, 100%");
    expect(await tokens.textContent()).toContain('Of 1,000,000 tokens included per period');

    await tokens.getByLabel('Tokens: your alerts (% of included)').fill('50, 90');
    await tokens.getByRole('button', { name: 'Save' }).click();
    await tokens.getByText('Saved the alerts for Tokens.').waitFor();
    expect(await own('tokens')).toEqual([50, 90]);
    await client.screenshot({ path: join(SHOTS, 'client-usage-alerts.png'), fullPage: true });

    // A repeat is refused by the server, which names it; nothing changes.
    await tokens.getByLabel('Tokens: your alerts (% of included)').fill('40, 40');
    await tokens.getByRole('button', { name: 'Save' }).click();
    await tokens.getByRole('alert').filter({ hasText: 'repeats 40' }).waitFor();
    expect(await own('tokens')).toEqual([50, 90]);

    await calls.getByLabel('Calls: your alerts (% of included)').fill('25');
    await calls.getByRole('button', { name: 'Save' }).click();
    await calls.getByText('Saved the alerts for Calls.').waitFor();
    expect(await own('calls')).toEqual([25]);

    await tokens.getByLabel('Tokens: your alerts (% of included)').fill('');
    await tokens.getByRole('button', { name: 'Save' }).click();
    await tokens.getByText('Saved the alerts for Tokens.').waitFor();
    expect(await own('tokens')).toEqual([]);
    expect(await own('calls')).toEqual([25]);
  });
});
