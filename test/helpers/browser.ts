// What the browser tests share: Debian's Chromium driven by playwright-core, the UI served on a real socket over a
// test app's services, waiting for a page to settle, and logging staff in to the admin panel.
/// <reference lib="dom" />
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { chromium, type Browser, type Page } from 'playwright-core';
import { buildApp } from '../../src/app.ts';
import { ensureWebBuilt, WEB_DIST_DIR } from '../../src/http/web-build.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD, type TestApp } from './app.ts';

export const CHROMIUM = '/usr/bin/chromium';
/** Screenshots (and failure pictures) land here. */
export const SHOTS = join(process.cwd(), 'test-results');
export const HAVE_CHROMIUM = existsSync(CHROMIUM);

export function launchChromium(): Promise<Browser> {
  mkdirSync(SHOTS, { recursive: true });
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
  });
}

/**
 * The UI and the API on 127.0.0.1 with an ephemeral port, served by a second Fastify instance over the test app's
 * services (createTestApp's own app has no UI routes). Builds the UI first when it is out of date.
 */
export async function serveWeb(t: TestApp): Promise<{ web: FastifyInstance; base: string }> {
  await ensureWebBuilt();
  const web = buildApp(t.services, { webDistDir: WEB_DIST_DIR });
  await web.listen({ host: '127.0.0.1', port: 0 });
  const address = web.server.address();
  if (address === null || typeof address === 'string') throw new Error('no address');
  return { web, base: `http://127.0.0.1:${address.port}` };
}

/** A page in a fresh browser context (its own cookies), as staff at a desktop use it. */
export async function newStaffPage(browser: Browser): Promise<Page> {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  page.setDefaultTimeout(20_000);
  return page;
}

/** Waits until no element on the page reports aria-busy="true" (loads and actions finished). */
export async function settled(page: Page): Promise<void> {
  await page.waitForFunction(() => document.querySelectorAll('[aria-busy="true"]').length === 0);
}

/** Logs the first administrator in to the admin panel and waits for the dashboard. */
export async function loginAsAdmin(page: Page, base: string): Promise<void> {
  await page.goto(`${base}/admin`);
  await page.getByLabel('E-mail').fill(ADMIN_EMAIL);
  await page.getByLabel('Password').fill(ADMIN_PASSWORD);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
}
