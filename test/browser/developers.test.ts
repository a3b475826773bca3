// The Developers page's verifier tokens and SDK quick start in a real Chromium: staff create a verifier token (shown
// once; it verifies keys), rotate it (the old one is refused at once), revoke it (refused), and read a quick start
// that names this instance's own base URL (PUBLIC_URL). Screenshots land in test-results/.
/// <reference lib="dom" />
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { expectError } from '../helpers/assertions.ts';
import { HAVE_CHROMIUM, launchChromium, loginAsAdmin, newStaffPage, serveWeb, settled, SHOTS } from '../helpers/browser.ts';

const PUBLIC_URL = 'https://billing.tollgate-test.example';

describe.runIf(HAVE_CHROMIUM)('Developers: verifier tokens and the SDK quick start in the browser', () => {
  let t: TestApp;
  let web: FastifyInstance;
  let base: string;
  let browser: Browser;
  let staff: Page;
  const check = (token: string) => t.call('/api/admin/serviceapikey/check', { key: 'FFFFFFFF-FFFFFFFF', ip: '203.0.113.4' }, { basic: ['admin', token] });
  const shownToken = async (): Promise<string> => {
    const token = ((await staff.locator('code.secret').first().textContent()) ?? '').trim();
    expect(token.length).toBeGreaterThan(15);
    return token;
  };

  beforeAll(async () => {
    t = await createTestApp({ PUBLIC_URL: `${PUBLIC_URL}/` });
    ({ web, base } = await serveWeb(t));
    browser = await launchChromium();
    staff = await newStaffPage(browser);
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await web?.close();
    await t?.close();
  });

  it('creates, rotates and revokes a verifier token', async () => {
    await loginAsAdmin(staff, base);
    await staff.getByRole('link', { name: 'Developers', exact: true }).click();
    await staff.getByRole('heading', { name: 'Verifier tokens', exact: true }).waitFor();
    await settled(staff);

    // A name makes a token, shown once, which verifies keys.
    await staff.getByLabel('Name', { exact: true }).fill('Production API');
    await staff.getByRole('button', { name: 'Create token' }).click();
    await staff.getByText('The verifier token — copy it now').waitFor();
    const first = await shownToken();
    expect((await check(first)).body).toEqual({ result: false, error: null });
    await staff.screenshot({ path: join(SHOTS, 'developers-verifier-created.png'), fullPage: true });
    await staff.getByRole('button', { name: 'Done' }).click();
    expect(await staff.locator('code.secret').count()).toBe(0);
    await settled(staff);
    const row = staff.getByRole('table', { name: 'Verifier tokens' }).getByRole('row').filter({ hasText: 'Production API' });
    expect(await row.count()).toBe(1);
    // The list never shows the token again.
    expect(await staff.content()).not.toContain(first);

    // Rotate: a new token is shown; the old one is refused at once.
    await row.getByRole('button', { name: /Rotate verifier token/ }).click();
    await staff.getByText(/rotated: the old token no longer works/).waitFor();
    const second = await shownToken();
    expect(second).not.toBe(first);
    expectError(await check(first), 205, 401);
    expect((await check(second)).result).toBe(false);
    await staff.getByRole('button', { name: 'Done' }).click();

    // Revoke, after a confirmation: the row goes and the token is refused.
    await row.getByRole('button', { name: /Revoke verifier token/ }).click();
    await staff.getByRole('group', { name: 'Confirm' }).getByRole('button', { name: 'Revoke' }).click();
    await staff.getByText(/Verifier token #\d+ revoked/).waitFor();
    await settled(staff);
    expect(await staff.getByRole('table', { name: 'Verifier tokens' }).getByRole('row').filter({ hasText: 'Production API' }).count()).toBe(0);
    expectError(await check(second), 205, 401);
  });

  it("shows the SDK quick start for Express, Fastify, Hono, Python, PHP and plain HTTP with this instance's base URL", async () => {
    await staff.getByRole('heading', { name: 'SDK quick start' }).waitFor();
    await settled(staff);
    expect(await staff.getByTestId('base-url').textContent()).toBe(PUBLIC_URL);
    const section = staff.locator('section', { has: staff.getByRole('heading', { name: 'SDK quick start' }) });
    for (const heading of ['Express', 'Fastify', 'Hono', 'Python (Flask)', 'Python (FastAPI)', 'PHP', 'Plain HTTP (any language)']) {
      await section.getByRole('heading', { name: heading, exact: true }).waitFor();
    }
    const code = await section.locator('pre code').allTextContents();
    expect(code).toHaveLength(7);
    for (const snippet of code.slice(0, 3)) expect(snippet).toContain(`new Tollgate({ baseUrl: '${PUBLIC_URL}'`);
    expect(code[0]).toContain("from '@tollgate/sdk/express'");
    expect(code[1]).toContain("from '@tollgate/sdk/fastify'");
    expect(code[2]).toContain("from '@tollgate/sdk/hono'");
    // The Python snippets run as servers in test/processes/sdk-python.test.ts, the PHP one in sdk-php.test.ts.
    for (const snippet of code.slice(3, 5)) expect(snippet).toContain(`tollgate = Tollgate('${PUBLIC_URL}'`);
    expect(code[5]).toContain(`new \\Tollgate\\Client('${PUBLIC_URL}'`);
    expect(code.at(-1)).toContain(`${PUBLIC_URL}/api/admin/serviceapikey/get_info`);
    await section.screenshot({ path: join(SHOTS, 'developers-quick-start.png') });
  });
});
