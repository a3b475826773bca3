// The customer portal inside an iframe on another origin, in a real Chromium (issue 25 item 7). Tollgate answers at
// http://localhost:<port>; the operator's pages are tiny pages on http://127.0.0.1:<other ports> — another site, so
// the portal's cookies must be SameSite=None; Secure; Partitioned (Chromium takes Secure cookies from localhost
// over http, as from any https origin). On the origin listed in portal_frame_ancestors the framed portal opens its
// link and shows the client's keys and invoices (and only the pages of its scopes); on an origin not listed Chromium
// refuses the frame. axe finds no serious or critical violation at 1280 and 390 px; UPDATE_SCREENSHOTS=1 writes
// docs/screenshots/portal-1280.png and -390.png.
/// <reference lib="dom" />
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Browser, Frame, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { buyKey, createPlan } from '../helpers/apikey.ts';
import { HAVE_CHROMIUM, launchChromium, loginAsAdmin, newStaffPage, serveWeb, settled, SHOTS } from '../helpers/browser.ts';
import { reviewAtBothWidths, seriousViolations } from '../helpers/page-review.ts';
import { createLink } from '../helpers/portal.ts';
import { makeProduct } from '../helpers/selling-fixtures.ts';

/** The operator's page: its own heading and the portal framed under it. The iframe's src is set by the test. */
function hostPage(origin: string): Server {
  return createServer((request, response) => {
    const src = new URL(request.url ?? '/', origin).searchParams.get('portal') ?? '';
    const escaped = src.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    response.end(
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Acme app</title>` +
        `<meta name="viewport" content="width=device-width, initial-scale=1"></head>` +
        `<body style="margin:0;font-family:sans-serif;overflow:hidden"><header style="box-sizing:border-box;height:38px;padding:8px 16px;background:#123;color:#fff"><h1 style="font-size:18px;margin:0">Acme app — Billing</h1></header>` +
        // As tall as the window: a page taller than the viewport makes a full-page screenshot resize the window, and
        // Chromium does not repaint a cross-origin frame in time for it.
        `<main><iframe title="Billing portal" src="${escaped}" style="display:block;border:0;width:100%;height:calc(100vh - 38px)"></iframe></main></body></html>`,
    );
  });
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe.runIf(HAVE_CHROMIUM)('the customer portal, framed on another origin', () => {
  let t: TestApp;
  let web: FastifyInstance;
  let portalBase: string;
  let listed: Server;
  let unlisted: Server;
  let listedOrigin: string;
  let unlistedOrigin: string;
  let browser: Browser;
  let page: Page;
  let client: Awaited<ReturnType<TestApp['createClient']>>;
  let key: string;
  let invoiceId: number;

  beforeAll(async () => {
    t = await createTestApp();
    const served = await serveWeb(t);
    web = served.web;
    // localhost, not 127.0.0.1: the operator's pages below are then on another site, as in production.
    portalBase = served.base.replace('127.0.0.1', 'localhost');
    listed = hostPage('http://127.0.0.1');
    unlisted = hostPage('http://127.0.0.1');
    listedOrigin = await listen(listed);
    unlistedOrigin = await listen(unlisted);
    expect((await t.admin('system/settings_update', { portal_frame_ancestors: listedOrigin })).body.error).toBeNull();
    client = await t.createClient({ first_name: 'Ada', last_name: 'Lovelace' });
    expect((await t.admin('system/settings_update', { company_name: 'Acme Cloud' })).body.error).toBeNull();
    const plan = await createPlan(t, { monthlyLimit: 1000 });
    expect((await t.admin('product/update', { id: plan, title: 'Pro API' })).body.error).toBeNull();
    ({ key } = await buyKey(t, plan, client.id));
    const ordered = await t.admin('order/create', { client_id: client.id, product_id: await makeProduct(t, { title: 'Support plan' }), period: '1M', invoice_option: 'issue-invoice' });
    expect(ordered.body.error).toBeNull();
    invoiceId = (await t.admin('invoice/get_list', { client_id: client.id })).result.list[0].id as number;
    browser = await launchChromium();
    page = await newStaffPage(browser);
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await web?.close();
    listed?.close();
    unlisted?.close();
    await t?.close();
  });

  /** A fresh link's URL on the portal's origin. */
  async function portalUrl(params: Record<string, unknown> = {}): Promise<string> {
    const link = await createLink(t, { client_id: client.id, return_url: `${listedOrigin}/account`, ...params });
    return `${portalBase}/portal#token=${link.token}`;
  }

  async function framed(hostOrigin: string, url: string): Promise<Frame> {
    await page.goto(`${hostOrigin}/?portal=${encodeURIComponent(url)}`);
    await page.waitForLoadState('load');
    const frame = page.frames().find((candidate) => candidate !== page.mainFrame());
    expect(frame).toBeDefined();
    return frame!;
  }

  it('serves the portal with frame-ancestors of the setting, every other page with none', async () => {
    const portal = await fetch(`${portalBase}/portal/keys`);
    expect(portal.headers.get('content-security-policy')).toMatch(new RegExp(`frame-ancestors ${listedOrigin.replace(/[.:/]/g, '\\$&')}$`));
    expect(portal.headers.get('x-frame-options')).toBeNull();
    for (const path of ['/', '/keys', '/admin', '/portalx']) {
      const other = await fetch(`${portalBase}${path}`);
      expect(other.headers.get('content-security-policy'), path).toContain("frame-ancestors 'none'");
      expect(other.headers.get('x-frame-options'), path).toBe('DENY');
    }
  });

  it('framed on a listed origin, the link opens the portal: the keys and the invoices show, and nothing else', async () => {
    const frame = await framed(listedOrigin, await portalUrl({ scopes: ['keys', 'invoices'] }));
    await frame.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    await settled(page);
    // The token left the address bar at once; the session is the client's, restricted to its scopes.
    expect(frame.url()).toBe(`${portalBase}/portal/keys`);
    await frame.getByRole('button', { name: 'Show key' }).first().click();
    expect(await frame.getByTestId('api-key').first().textContent()).toBe(key);
    // Reset is there; rename, delete and the profile are not.
    expect(await frame.getByRole('button', { name: 'Reset key…' }).count()).toBe(1);
    expect(await frame.getByRole('button', { name: 'Rename…' }).count()).toBe(0);
    expect(await frame.getByRole('button', { name: 'Log out' }).count()).toBe(0);
    const nav = frame.getByRole('navigation', { name: 'Portal' });
    expect(await nav.getByRole('link').allTextContents()).toEqual(['API keys', 'Invoices']);
    expect(await frame.getByTestId('portal-back').getAttribute('href')).toBe(`${listedOrigin}/account`);

    await nav.getByRole('link', { name: 'Invoices' }).click();
    await frame.getByRole('heading', { name: 'Invoices', level: 1 }).waitFor();
    await settled(page);
    expect(frame.url()).toBe(`${portalBase}/portal/invoices`);
    await frame.locator(`a[href="/portal/invoices/${invoiceId}"]`).first().waitFor();
    // A reload inside the frame keeps the session (its partitioned cookie) and the framing.
    await frame.goto(`${portalBase}/portal/invoices/${invoiceId}`);
    await frame.getByText('Support plan').first().waitFor();
    await page.screenshot({ path: join(SHOTS, 'portal-framed.png'), fullPage: true });

    // A page of a scope it was not given is not part of the portal.
    await frame.goto(`${portalBase}/portal/wallet`);
    await frame.getByRole('heading', { name: 'Page not found' }).waitFor();
  });

  it('with usage and wallet only: the usage page shows each plan without its keys, the wallet its balance', async () => {
    const frame = await framed(listedOrigin, await portalUrl({ scopes: ['usage', 'wallet'] }));
    await frame.getByRole('heading', { name: 'Usage', level: 1 }).waitFor();
    await settled(page);
    const nav = frame.getByRole('navigation', { name: 'Portal' });
    expect(await nav.getByRole('link').allTextContents()).toEqual(['Usage', 'Wallet']);
    await frame.getByRole('heading', { name: /Pro API/ }).waitFor();
    expect(await frame.getByText('Checks, all keys').count()).toBeGreaterThan(0);
    // No key on this page: keys are the keys scope's.
    expect(await frame.content()).not.toContain(key);
    await nav.getByRole('link', { name: 'Wallet' }).click();
    await frame.getByRole('heading', { name: 'Wallet', level: 1 }).waitFor();
    await settled(page);
    expect(await frame.getByTestId('wallet-balance').textContent()).toContain('0.00');
    expect(await frame.getByRole('alert').count()).toBe(0);
  });

  it('the same link opened again (another frame) is refused', async () => {
    const url = await portalUrl();
    const first = await framed(listedOrigin, url);
    await first.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    const context = await browser.newContext();
    const again = await context.newPage();
    await again.goto(`${listedOrigin}/?portal=${encodeURIComponent(url)}`);
    const frame = again.frames().find((candidate) => candidate !== again.mainFrame())!;
    await frame.getByTestId('portal-ended').waitFor();
    expect(await frame.getByTestId('portal-ended').textContent()).toContain('expired or was already used');
    await context.close();
  });

  it('on an origin not listed the frame is refused', async () => {
    const refusals: string[] = [];
    page.on('console', (message) => {
      if (/frame-ancestors|Refused to frame/i.test(message.text())) refusals.push(message.text());
    });
    const url = await portalUrl();
    await page.goto(`${unlistedOrigin}/?portal=${encodeURIComponent(url)}`);
    await page.waitForLoadState('load');
    await expect.poll(() => refusals.length, { timeout: 10_000 }).toBeGreaterThan(0);
    const frame = page.frames().find((candidate) => candidate !== page.mainFrame())!;
    expect(await frame.getByRole('heading', { name: 'API keys' }).count()).toBe(0);
    // The link was never opened: the refused page ran no script.
    const row = await t.services.db.selectFrom('portal_links').select('used_at').where('token_hash', '=', t.services.secrets.hash(url.split('#token=')[1]!)).executeTakeFirstOrThrow();
    expect(row.used_at).toBeNull();
  });

  it('the framed portal passes axe at 1280 and 390 px', async () => {
    const frame = await framed(listedOrigin, await portalUrl());
    await frame.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    // axe on the operator's page does not see into a cross-origin frame: the portal's own document is checked too.
    const inFrame: string[][] = [];
    const found = await reviewAtBothWidths(page, 'portal', async () => {
      await frame.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
      await settled(page);
      // The frame lays out again after the viewport changed: two animation frames before it is looked at.
      await frame.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
      await page.waitForTimeout(200);
      inFrame.push(await seriousViolations(frame as unknown as Page));
    });
    expect(found).toEqual({ 1280: [], 390: [] });
    expect(inFrame).toEqual([[], []]);
  });

  it('staff set the framing origins and make a verifier token with the portal scope on the Developers page', async () => {
    const staff = await newStaffPage(browser);
    await loginAsAdmin(staff, portalBase.replace('localhost', '127.0.0.1'));
    await staff.getByRole('link', { name: 'Developers', exact: true }).click();
    const origins = staff.getByLabel('Origins allowed to frame the portal');
    await settled(staff);
    expect(await origins.inputValue()).toBe(listedOrigin);
    // A bad origin is refused at the field; a good list is saved normalised.
    await origins.fill('https://app.example.com/path');
    await staff.getByRole('button', { name: 'Save origins' }).click();
    await staff.getByText(/must list origins such as/).first().waitFor();
    await origins.fill(`${listedOrigin}, https://App.Example.com`);
    await staff.getByRole('button', { name: 'Save origins' }).click();
    await staff.getByText('Saved: the portal may be framed by these origins.').waitFor();
    expect((await t.admin('system/settings_get')).result.portal_frame_ancestors).toBe(`${listedOrigin} https://app.example.com`);

    await staff.getByLabel('Name').first().fill('Billing page');
    await staff.getByLabel('Also make customer-portal links (the portal scope)').check();
    await staff.getByRole('button', { name: 'Create token' }).click();
    await staff.getByRole('cell', { name: 'Verify keys, portal' }).waitFor();
    const made = ((await t.admin('staff/verifier_get_list')).result.list as Array<{ name: string; scopes: string[] }>).find((row) => row.name === 'Billing page');
    expect(made?.scopes).toEqual(['portal']);
    await staff.context().close();
  });
});
