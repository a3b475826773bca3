// The Developers page in a real Chromium against a real webhook receiver (verifying with standardwebhooks): staff add
// an endpoint and see its secret once, send a test that arrives signed, edit its events, rotate the secret, see a
// failing delivery with its attempts and retry it, and delete the endpoint. Screenshots land in test-results/.
/// <reference lib="dom" />
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { HAVE_CHROMIUM, launchChromium, loginAsAdmin, newStaffPage, serveWeb, settled, SHOTS } from '../helpers/browser.ts';
import { Receiver } from '../helpers/webhook-receiver.ts';

describe.runIf(HAVE_CHROMIUM)('the Developers page in the browser', () => {
  let t: TestApp;
  let web: FastifyInstance;
  let base: string;
  let browser: Browser;
  let staff: Page;
  const receiver = new Receiver();

  beforeAll(async () => {
    await receiver.start();
    t = await createTestApp({ WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_TIMEOUT_MS: '1000' });
    ({ web, base } = await serveWeb(t));
    browser = await launchChromium();
    staff = await newStaffPage(browser);
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await web?.close();
    await t?.close();
    await receiver.stop();
  });

  it('manages an endpoint and its deliveries', async () => {
    await loginAsAdmin(staff, base);
    await staff.getByRole('link', { name: 'Developers', exact: true }).click();
    await staff.getByRole('heading', { name: 'Developers', exact: true }).waitFor();
    await settled(staff);

    // A private URL is refused only without WEBHOOK_ALLOW_PRIVATE; a bad scheme always: the field says why.
    await staff.getByLabel('URL').fill('ftp://example.com/hook');
    await staff.getByRole('button', { name: 'Add endpoint' }).click();
    await staff.getByText(/must be an http or https URL/).waitFor();

    await staff.getByLabel('URL').fill(receiver.url);
    await staff.getByLabel('Description').fill('Our API');
    await staff.getByRole('button', { name: 'Add endpoint' }).click();
    const secretText = (await staff.locator('code.secret').first().textContent()) ?? '';
    expect(secretText).toMatch(/^whsec_/);
    receiver.secret = secretText;
    await staff.getByRole('button', { name: 'Done' }).click();
    expect(await staff.locator('code.secret').count()).toBe(0);
    await settled(staff);
    const row = staff.getByRole('row').filter({ hasText: receiver.url });
    expect(await row.textContent()).toContain('All events');

    // Send a test: it arrives signed and shows as delivered.
    await row.getByRole('button', { name: /Send a test/ }).click();
    await staff.getByText(/Test delivery #\d+ queued/).waitFor();
    await t.services.outbox.runDue();
    expect(receiver.received).toHaveLength(1);
    expect(receiver.received[0]!.verified).toMatchObject({ type: 'webhook.test' });
    await staff.getByRole('button', { name: 'Refresh' }).click();
    await settled(staff);
    const deliveryRows = staff.getByRole('table', { name: 'Webhook deliveries' }).getByRole('row').filter({ hasText: 'webhook.test' });
    // Waited for: `settled` can pass before the refresh has started.
    await deliveryRows.getByText('Delivered', { exact: true }).waitFor();
    expect(await deliveryRows.getByText('Delivered', { exact: true }).count()).toBe(1);

    // Edit the events: only client.created.
    await row.getByRole('button', { name: /^Edit endpoint/ }).click();
    await staff.getByLabel('All events (including ones added later)').last().uncheck();
    await staff.getByLabel('client.created').last().check();
    // Exactly "Save": the page also has the customer portal's "Save origins".
    await staff.getByRole('button', { name: 'Save', exact: true }).click();
    await settled(staff);
    await staff.getByRole('row').filter({ hasText: receiver.url }).getByText('client.created').waitFor();

    // Rotate the secret: a new one shown once; deliveries verify with it.
    await staff.getByRole('row').filter({ hasText: receiver.url }).getByRole('button', { name: /Rotate the secret/ }).click();
    await staff.locator('code.secret').first().waitFor();
    const rotated = (await staff.locator('code.secret').first().textContent()) ?? '';
    expect(rotated).not.toBe(secretText);
    receiver.secret = rotated;
    await staff.getByRole('button', { name: 'Done' }).click();

    // A failing delivery: its attempts are shown, and once it is failed it can be retried.
    receiver.behaviour = { kind: 'status', status: 500 };
    await t.createClient();
    await t.services.outbox.runDue();
    for (let n = 1; n <= 8; n++) await t.services.outbox.runDue(new Date(Date.now() + n * 40 * 3_600_000));
    await staff.getByRole('button', { name: 'Refresh' }).click();
    await settled(staff);
    const log = staff.getByRole('table', { name: 'Webhook deliveries' });
    const failed = log.getByRole('row').filter({ hasText: 'client.created' });
    await failed.getByText('Failed', { exact: true }).waitFor();
    await failed.getByRole('button').first().click();
    const attempts = staff.getByRole('table', { name: /Attempts of delivery/ });
    await attempts.waitFor();
    expect(await attempts.getByRole('row').count()).toBe(9);
    expect(await attempts.textContent()).toContain('500');
    await staff.screenshot({ path: join(SHOTS, 'admin-developers.png'), fullPage: true });
    receiver.behaviour = { kind: 'status', status: 200 };
    await failed.getByRole('button', { name: /Retry delivery/ }).click();
    await staff.getByText(/Delivery #\d+ queued again/).waitFor();
    await t.services.outbox.runDue();
    expect(receiver.received.at(-1)!.verifyError).toBeNull();
    await staff.getByRole('button', { name: 'Refresh' }).click();
    await settled(staff);
    await log.getByRole('row').filter({ hasText: 'client.created' }).getByText('Delivered', { exact: true }).waitFor();

    // Delete, after a confirmation.
    await staff.getByRole('row').filter({ hasText: receiver.url }).getByRole('button', { name: /^Delete endpoint/ }).click();
    await staff.getByRole('group', { name: 'Confirm' }).getByRole('button', { name: 'Delete' }).click();
    await staff.getByText(/Endpoint #\d+ deleted/).waitFor();
    expect((await t.admin('webhook/get_list', {})).result.total).toBe(0);
  }, 120_000);
});
