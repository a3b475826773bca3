// Issue 21 item 1: an invoice has one name. Before payment it is "Pro forma <id>" everywhere a person reads it (mails,
// the manual gateway's reference, the card page's line, the PDF, exports); once paid it is "Invoice <number>" — the
// number with the prefix in force at payment, continuing across a prefix change. Never "#<id>". Runs on SQLite and,
// with TEST_DATABASE_URL, PostgreSQL + Redis.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { up as renameInvoicePlaceholders } from '../../../src/db/migrations/020_invoice_names.ts';
import { invoiceFileName, invoiceLabel, invoiceReference } from '../../../src/lib/invoice-label.ts';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectError } from '../../helpers/assertions.ts';
import { asClient, makeProduct } from '../../helpers/selling-fixtures.ts';

const dir = mkdtempSync(join(tmpdir(), 'tollgate-names-'));
let t: TestApp;
let productId: number;

function pdfText(bytes: Buffer, name: string): string {
  const file = join(dir, name);
  writeFileSync(file, bytes);
  return execFileSync('pdftotext', ['-layout', file, '-'], { encoding: 'utf8' });
}

const basic = (): Record<string, string> => ({ authorization: `Basic ${Buffer.from(`admin:${t.adminToken}`).toString('base64')}` });

async function checkout(): Promise<{ client: { id: number; token: string }; invoiceId: number; hash: string }> {
  const client = await t.createClient();
  expect((await asClient(t, client.token, 'cart/add_item', { id: productId, period: '1M' })).body.error).toBeNull();
  const reply = await asClient(t, client.token, 'cart/checkout');
  expect(reply.body.error).toBeNull();
  return { client, invoiceId: reply.result.invoice_id as number, hash: reply.result.invoice_hash as string };
}

async function mailsOf(clientId: number) {
  return t.services.db.selectFrom('emails').selectAll().where('client_id', '=', clientId).orderBy('id').execute();
}

beforeAll(async () => {
  t = await createTestApp({ PUBLIC_URL: 'https://billing.example.com', INVOICE_PREFIX: 'NWD-' });
  productId = await makeProduct(t, { title: 'Pro plan' });
});

afterAll(async () => {
  await t.close();
});

describe('invoiceLabel', () => {
  it('names a paid invoice by its number and an unpaid one as a pro forma, never by a bare id', () => {
    expect(invoiceLabel({ id: 12, number: 'NWD-4' })).toBe('Invoice NWD-4');
    expect(invoiceLabel({ id: 12, number: null })).toBe('Pro forma 12');
    expect(invoiceLabel({ id: 12, number: '' })).toBe('Pro forma 12');
    expect(invoiceReference({ id: 12, number: 'NWD-4' })).toBe('NWD-4');
    expect(invoiceReference({ id: 12, number: null })).toBe('Pro forma 12');
    expect(invoiceFileName({ id: 12, number: 'NWD-4' })).toBe('NWD-4.pdf');
    expect(invoiceFileName({ id: 12, number: null })).toBe('proforma-12.pdf');
  });
});

describe('one name for an invoice', () => {
  it('every mail before payment says "Pro forma <id>", the receipt says "Invoice <number>", none says "#<id>"', async () => {
    const { client, invoiceId } = await checkout();
    const [created] = (await mailsOf(client.id)).filter((mail) => mail.template === 'invoice_created');
    expect(created!.subject).toBe(`Pro forma ${invoiceId}: 10.00 USD`);
    expect(created!.text).toContain(`Pro forma ${invoiceId} for 10.00 USD is due on`);

    expect((await t.admin('invoice/mark_as_paid', { id: invoiceId })).body.error).toBeNull();
    const { number } = (await t.admin('invoice/get', { id: invoiceId })).result as { number: string };
    expect(number).toMatch(/^NWD-\d+$/);
    const receipt = (await mailsOf(client.id)).find((mail) => mail.template === 'invoice_paid')!;
    expect(receipt.subject).toBe(`Receipt: Invoice ${number}`);
    expect(receipt.text).toContain(`for Invoice ${number}.`);
    for (const mail of await mailsOf(client.id)) {
      expect(mail.subject).not.toContain(`#${invoiceId}`);
      expect(mail.text).not.toContain(`#${invoiceId}`);
    }
  });

  it('a reminder and a failed payment name the unpaid invoice as a pro forma', async () => {
    const { client, invoiceId } = await checkout();
    // Due one day ago: the scheduled jobs send the "1 day overdue" reminder.
    const due = new Date(Date.now() - 86_400_000 - 60_000);
    await t.services.db.updateTable('invoices').set({ due_at: due.toISOString().slice(0, 19) + 'Z' }).where('id', '=', invoiceId).execute();
    expect((await t.services.cron.run(new Date())).invoice_reminders).toBeGreaterThanOrEqual(1);
    const reminders = (await mailsOf(client.id)).filter((mail) => mail.template === 'invoice_reminder');
    expect(reminders.map((mail) => mail.subject)).toEqual([`Overdue: Pro forma ${invoiceId}`]);
    await t.services.events.emit('invoice.payment_failed', { invoiceId, clientId: client.id, message: 'Your card was declined.' }, t.services.db);
    const failed = (await mailsOf(client.id)).find((mail) => mail.template === 'invoice_payment_failed')!;
    expect(failed.subject).toBe(`Payment of Pro forma ${invoiceId} failed`);
  });

  it('the manual gateway gives the reference to quote: the pro forma label, not a number the invoice does not have', async () => {
    const { invoiceId, hash } = await checkout();
    const reply = await t.call('/api/guest/invoice/payment', { hash, gateway_id: 'custom' });
    expect(reply.body.error).toBeNull();
    expect(reply.result.instructions).toMatch(new RegExp(`Reference to quote: Pro forma ${invoiceId}$`));
    // The general instructions (no invoice) carry no reference.
    const gateways = await t.call('/api/guest/invoice/gateways', {});
    expect(gateways.result.find((gateway: { code: string }) => gateway.code === 'custom').instructions).not.toContain('Reference');
    // An unknown invoice stays a 404; a paid one cannot be paid again (409).
    expectError(await t.call('/api/guest/invoice/payment', { hash: 'x'.repeat(32), gateway_id: 'custom' }), 404);
    await t.admin('invoice/mark_as_paid', { id: invoiceId });
    expectError(await t.call('/api/guest/invoice/payment', { hash, gateway_id: 'custom' }), 409);
  });

  it('the PDF is titled with the one name, before and after payment', async () => {
    const { client, invoiceId } = await checkout();
    const before = await t.app.inject({ method: 'GET', url: `/api/admin/invoice/pdf?id=${invoiceId}`, headers: basic() });
    expect(before.statusCode).toBe(200);
    const proforma = pdfText(before.rawPayload, `before-${invoiceId}.pdf`);
    expect(proforma).toContain(`Pro forma ${invoiceId}`);
    expect(proforma).not.toContain(`#${invoiceId}`);
    await t.admin('invoice/mark_as_paid', { id: invoiceId });
    const { number } = (await t.admin('invoice/get', { id: invoiceId })).result as { number: string };
    const after = await t.app.inject({ method: 'GET', url: `/api/admin/invoice/pdf?id=${invoiceId}`, headers: basic() });
    expect(after.headers['content-disposition']).toContain(`${number}.pdf`);
    const paid = pdfText(after.rawPayload, `after-${invoiceId}.pdf`);
    expect(paid).toContain(`Invoice ${number}`);
    expect(paid).not.toContain('Pro forma');
    expect(client.id).toBeGreaterThan(0);
  });

  it('transactions carry the invoice number; the exports name each invoice', async () => {
    const paid = await checkout();
    await t.admin('invoice/mark_as_paid', { id: paid.invoiceId, transaction_id: 'BANK-77' });
    const { number } = (await t.admin('invoice/get', { id: paid.invoiceId })).result as { number: string };
    const unpaid = await checkout();

    const list = await t.admin('invoice/transaction_get_list', { invoice_id: paid.invoiceId });
    expect(list.result.list).toEqual([expect.objectContaining({ invoice_id: paid.invoiceId, invoice_number: number })]);
    // Another client's transactions are not the client's to see (the client list has no such action: 404 path).
    expect((await asClient(t, unpaid.client.token, 'invoice/transaction_get_list', {})).status).toBe(404);
    // Staff only: a client's token is refused on the admin list.
    expect((await t.call('/api/admin/invoice/transaction_get_list', {}, { headers: { authorization: `Bearer ${unpaid.client.token}` } })).status).toBeGreaterThanOrEqual(401);

    const transactions = await t.app.inject({ method: 'GET', url: `/api/admin/export/transactions.csv?invoice_id=${paid.invoiceId}`, headers: basic() });
    expect(transactions.statusCode).toBe(200);
    const [header, row] = transactions.body.trim().split(/\r?\n/);
    // The name column follows the earlier ones; the default-currency columns (issue 26) come after it.
    const at = header!.split(',').indexOf('"invoice"');
    expect(at).toBe(13);
    expect(row!.split(',')[at]).toBe(`"Invoice ${number}"`);

    const invoices = await t.app.inject({ method: 'GET', url: `/api/admin/export/invoices.csv?client_id=${unpaid.client.id}`, headers: basic() });
    const lines = invoices.body.trim().split(/\r?\n/);
    expect(lines[0]!.split(',').indexOf('"invoice"')).toBe(12);
    expect(lines[1]!.split(',')[12]).toBe(`"Pro forma ${unpaid.invoiceId}"`);
  });

  it('numbers continue across a prefix change', async () => {
    const first = await checkout();
    await t.admin('invoice/mark_as_paid', { id: first.invoiceId });
    const before = ((await t.admin('invoice/get', { id: first.invoiceId })).result as { number: string }).number;
    expect((await t.admin('system/settings_update', { invoice_prefix: 'ACME/' })).body.error).toBeNull();
    const second = await checkout();
    await t.admin('invoice/mark_as_paid', { id: second.invoiceId });
    const after = ((await t.admin('invoice/get', { id: second.invoiceId })).result as { number: string }).number;
    expect(after).toBe(`ACME/${Number(before.replace('NWD-', '')) + 1}`);
    // The earlier invoice keeps its number.
    expect(((await t.admin('invoice/get', { id: first.invoiceId })).result as { number: string }).number).toBe(before);
    await t.admin('system/settings_update', { invoice_prefix: 'NWD-' });
  });

  it('a plan change refused for an unpaid invoice names it as a pro forma', async () => {
    const { client, invoiceId } = await checkout();
    await t.admin('invoice/mark_as_paid', { id: invoiceId });
    const orders = await asClient(t, client.token, 'order/get_list', {});
    const orderId = orders.result.list[0].id as number;
    const renewal = await asClient(t, client.token, 'invoice/renewal_invoice', { order_id: orderId });
    expect(renewal.body.error).toBeNull();
    const refused = await asClient(t, client.token, 'order/change_plan', { id: orderId, product_id: productId, period: '1M' });
    expectError(refused, 409);
    expect(refused.body.error!.message).toContain(`Pro forma ${renewal.result as number} of this order is unpaid`);
  });

  it('migration 020 drops the "#" before {{invoice_number}} in templates staff customised, and nothing else', async () => {
    const now = new Date().toISOString();
    await t.services.db
      .insertInto('email_templates')
      .values({ code: 'invoice_created', subject: 'Bill #{{invoice_number}} (#1 choice)', content: '<p>Pay invoice #{{invoice_number}} now</p>', enabled: 1, updated_at: now })
      .onConflict((oc) => oc.column('code').doUpdateSet({ subject: 'Bill #{{invoice_number}} (#1 choice)', content: '<p>Pay invoice #{{invoice_number}} now</p>' }))
      .execute();
    await renameInvoicePlaceholders(t.services.db);
    const row = await t.services.db.selectFrom('email_templates').selectAll().where('code', '=', 'invoice_created').executeTakeFirstOrThrow();
    expect(row.subject).toBe('Bill {{invoice_number}} (#1 choice)');
    expect(row.content).toBe('<p>Pay invoice {{invoice_number}} now</p>');
    const preview = await t.admin('email/template_render', { code: 'invoice_created' });
    expect(preview.result.subject).toBe('Bill Pro forma 42 (#1 choice)');
    await t.services.db.deleteFrom('email_templates').where('code', '=', 'invoice_created').execute();
  });
});
