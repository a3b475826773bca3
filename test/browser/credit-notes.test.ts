// Credit notes in a real Chromium (issue 24 item 8): the admin's credit-note form on the invoice page (a refused
// amount shown at its field, a note issued and listed, the balance credited) and the client's credit-note PDF
// downloaded from the invoice page. Screenshots land in test-results/.
/// <reference lib="dom" />
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inTransaction } from '../../src/platform/transaction.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { HAVE_CHROMIUM, launchChromium, loginAsAdmin, newStaffPage, serveWeb, settled, SHOTS } from '../helpers/browser.ts';
import { expectLedgerConsistent } from '../helpers/credit-ledger.ts';
import { asClient, makeProduct } from '../helpers/selling-fixtures.ts';

describe.runIf(HAVE_CHROMIUM)('credit notes, in the browser', () => {
  let t: TestApp;
  let web: FastifyInstance;
  let base: string;
  let browser: Browser;
  let staff: Page;
  let page: Page;
  let buyer: Awaited<ReturnType<TestApp['createClient']>>;
  let invoiceId: number;

  beforeAll(async () => {
    t = await createTestApp();
    ({ web, base } = await serveWeb(t));
    browser = await launchChromium();
    staff = await newStaffPage(browser);
    page = await newStaffPage(browser);
    const plan = await makeProduct(t, { title: 'Credit plan' });
    buyer = await t.createClient();
    expect((await asClient(t, buyer.token, 'cart/add_item', { id: plan, period: '1M' })).body.error).toBeNull();
    const orderId = (await asClient(t, buyer.token, 'cart/checkout')).result.order_id as number;
    // An invoice of two lines (a usage period's overage), paid: 6.00 + 4.00.
    const lines = [
      { title: 'Requests over the included', amount: 600 },
      { title: 'Tokens over the included', amount: 400 },
    ];
    invoiceId = await inTransaction(t.services.db, (trx) => t.services.invoices.issueUsageInvoice(trx, { orderId, clientId: buyer.id, lines }, new Date()));
    expect((await t.admin('invoice/mark_as_paid', { id: invoiceId })).result).toBe(true);
  }, 240_000);

  afterAll(async () => {
    await expectLedgerConsistent(t.services.db);
    await browser?.close();
    await web?.close();
    await t?.close();
  });

  it("staff credit part of a paid invoice to the client's balance from the invoice page", async () => {
    await loginAsAdmin(staff, base);
    await staff.goto(`${base}/admin/invoices/${invoiceId}`);
    const form = staff.getByRole('form', { name: 'Credit note', exact: true });
    await form.waitFor();
    await settled(staff);
    // More than is left of the line: the field says so, nothing is written.
    await form.getByLabel('Reason').fill('Outage on the 3rd');
    await form.getByLabel(/Requests over the included: amount to credit/).fill('6.01');
    await form.getByRole('button', { name: 'Issue credit note' }).click();
    await form.getByText(/must not be more than what is left/).first().waitFor();
    expect((await t.admin('invoice/credit_note_get_list', { invoice_id: invoiceId })).result.total).toBe(0);

    await form.getByLabel(/Requests over the included: amount to credit/).fill('2.50');
    await form.getByRole('button', { name: 'Issue credit note' }).click();
    await staff.getByText(/Credit note CN-\d+ credited/).waitFor();
    const notes = staff.getByRole('region', { name: 'Credit notes' });
    await notes.waitFor();
    const number = (await t.admin('invoice/credit_note_get_list', { invoice_id: invoiceId })).result.list[0].number as string;
    await notes.getByRole('cell', { name: number, exact: true }).waitFor();
    expect(await notes.textContent()).toContain('Credited to the account balance');
    expect((await asClient(t, buyer.token, 'client/balance_get_total')).result).toBe('2.50');
    // What is left of the line is shown beside it now.
    await form.getByLabel(/Requests over the included: amount to credit \(net, .*3\.50.*left\)/).waitFor();
    await staff.screenshot({ path: join(SHOTS, 'credit-note-admin.png'), fullPage: true });
    // Once everything is credited the form is gone.
    expect((await t.admin('invoice/credit_note_create', { invoice_id: invoiceId, reason: 'The rest' })).body.error).toBeNull();
    await staff.reload();
    await staff.getByRole('region', { name: 'Credit notes' }).waitFor();
    await settled(staff);
    expect(await staff.getByRole('form', { name: 'Credit note', exact: true }).count()).toBe(0);
  });

  it("the client sees the note under the invoice and downloads its PDF", async () => {
    await page.goto(`${base}/login`);
    await page.getByLabel('E-mail').fill(buyer.email);
    await page.getByLabel('Password').fill(buyer.password);
    await page.getByLabel('Password').press('Enter');
    await page.getByText(`Signed in as ${buyer.email}`).waitFor();
    await page.goto(`${base}/invoices/${invoiceId}`);
    const notes = page.getByRole('region', { name: 'Credit notes' });
    await notes.waitFor();
    await settled(page);
    const note = (await asClient(t, buyer.token, 'invoice/credit_note_get_list', {})).result.list[0];
    const [download] = await Promise.all([page.waitForEvent('download'), notes.getByRole('button', { name: `Download ${note.number} (PDF)` }).click()]);
    expect(download.suggestedFilename()).toBe(`${note.number}.pdf`);
    const file = await download.path();
    expect(readFileSync(file).subarray(0, 4).toString()).toBe('%PDF');
    const text = execFileSync('pdftotext', ['-layout', file, '-'], { encoding: 'utf8' });
    // Both notes are listed under the invoice; the newest is the one downloaded here.
    const first = (await asClient(t, buyer.token, 'invoice/credit_note_get_list', {})).result.list.at(-1);
    await notes.getByRole('cell', { name: first.number, exact: true }).waitFor();
    for (const expected of [`Credit note ${note.number}`, 'The rest', 'Requests over the included', '3.50 USD', 'Tokens over the included', 'Total credited', '7.50 USD']) expect(text).toContain(expected);
    await page.screenshot({ path: join(SHOTS, 'credit-note-client.png'), fullPage: true });
  });
});
