// Credit notes (issue 24 item 8) on SQLite, and on PostgreSQL + Redis when TEST_* are set: full and partial notes
// with proportional tax and its rounding; never more than a line or the invoice, also under concurrent requests; every
// refund (manual, full or partial) makes exactly one; credit to the balance writes one ledger line; numbers gapless
// under concurrency; the PDF; clients read only their own; the export; the webhook once; every failure path.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { inTransaction } from '../../../src/platform/transaction.ts';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectError, expectInvalid } from '../../helpers/assertions.ts';
import { expectLedgerConsistent } from '../../helpers/credit-ledger.ts';
import { asClient, asStaff, makeProduct, staffWith } from '../../helpers/selling-fixtures.ts';

const dir = mkdtempSync(join(tmpdir(), 'tollgate-cn-'));
let pdfs = 0;
function pdfText(bytes: Buffer): string {
  pdfs += 1;
  const file = join(dir, `note-${pdfs}.pdf`);
  writeFileSync(file, bytes);
  return execFileSync('pdftotext', ['-layout', file, '-'], { encoding: 'utf8' });
}

describe('credit notes', () => {
  let t: TestApp;
  let plan: number;
  beforeAll(async () => {
    t = await createTestApp({ WEBHOOK_ALLOW_PRIVATE: 'true' });
    plan = await makeProduct(t, { title: 'Pro plan' });
    // 7.25 %: 13.33 of lines → 0.966… → 0.97 of tax, so rounding shows.
    expect((await t.admin('invoice/tax_create', { name: 'Sales tax', rate: '7.25' })).body.error).toBeNull();
    expect((await t.admin('webhook/create', { url: 'http://127.0.0.1:9/hooks', events: ['credit_note.created'] })).body.error).toBeNull();
  });
  afterEach(async () => {
    await expectLedgerConsistent(t.services.db);
  });
  afterAll(async () => {
    await t.close();
  });

  const invoice = async (id: number) => (await t.admin('invoice/get', { id })).result;
  const note = async (id: number) => (await t.admin('invoice/credit_note_get', { id })).result;
  const balance = async (token: string) => (await asClient(t, token, 'client/balance_get_total')).result as string;
  const create = (params: Record<string, unknown>) => t.admin('invoice/credit_note_create', params);

  /** A paid invoice of two lines (10.00 and 3.33: a usage period's overage, the one kind of invoice with several) plus 7.25 % tax (0.97): 14.30. */
  async function paidInvoice(client?: { id: number; token: string }) {
    const buyer = client ?? (await t.createClient());
    expect((await asClient(t, buyer.token, 'cart/add_item', { id: plan, period: '1M' })).body.error).toBeNull();
    const checkout = await asClient(t, buyer.token, 'cart/checkout');
    expect(checkout.body.error).toBeNull();
    const orderId = checkout.result.order_id as number;
    const lines = [
      { title: 'Pro plan: requests over the included', amount: 1000 },
      { title: 'Extra seats', amount: 333 },
    ];
    const id = await inTransaction(t.services.db, (trx) => t.services.invoices.issueUsageInvoice(trx, { orderId, clientId: buyer.id, lines }, new Date()));
    expect((await t.admin('invoice/mark_as_paid', { id })).result).toBe(true);
    const paid = await invoice(id);
    expect(paid).toMatchObject({ subtotal: '13.33', tax: '0.97', total: '14.30', credited: '0.00', credit_notes: [] });
    expect(paid.items.map((item: { total: string; credited: string }) => [item.total, item.credited])).toEqual([
      ['10.00', '0.00'],
      ['3.33', '0.00'],
    ]);
    return { client: buyer, id };
  }

  it('credits a whole invoice to the balance: one note, one ledger line, the invoice shows it', async () => {
    const { client, id } = await paidInvoice();
    const noteId = (await create({ invoice_id: id, reason: 'Service outage' })).result as number;
    const full = await note(noteId);
    expect(full).toMatchObject({ invoice_id: id, client_id: client.id, method: 'balance', reason: 'Service outage', subtotal: '13.33', tax: '0.97', total: '14.30', tax_name: 'Sales tax', tax_rate: '7.25', transaction_id: null });
    expect(full.number).toMatch(/^CN-\d+$/);
    expect(full.lines).toEqual([
      { item: 0, title: expect.stringContaining('Pro plan'), amount: '10.00' },
      { item: 1, title: expect.stringContaining('Extra seats'), amount: '3.33' },
    ]);
    expect(await balance(client.token)).toBe('14.30');
    const lines = (await asClient(t, client.token, 'client/balance_get_list')).result.list;
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ type: 'refund', amount: '14.30', invoice_id: id });
    expect(lines[0].description).toContain(full.number);
    const credited = await invoice(id);
    expect(credited).toMatchObject({ status: 'paid', credited: '14.30', credit_notes: [{ id: noteId, number: full.number, method: 'balance', total: '14.30' }] });
    expect(credited.items.map((item: { credited: string }) => item.credited)).toEqual(['10.00', '3.33']);
    // Nothing is left: a second note, or a refund of money, is refused.
    expectError(await create({ invoice_id: id, reason: 'Again' }), 409);
    expectError(await t.admin('invoice/refund', { id }), 409);
  });

  it('partial notes by line take the tax in proportion, rounded on the running total, and stop at what is left', async () => {
    const { client, id } = await paidInvoice();
    const first = await note((await create({ invoice_id: id, reason: 'Seats unused', lines: [{ item: 1, amount: '1.11' }] })).result);
    // 1.11 of 13.33 net: tax round(0.97 × 1.11 / 13.33) = round(0.0807…) = 0.08.
    expect(first).toMatchObject({ subtotal: '1.11', tax: '0.08', total: '1.19', lines: [{ item: 1, amount: '1.11' }] });
    const second = await note((await create({ invoice_id: id, reason: 'Seats unused', lines: [{ item: 1, amount: 2.22 }, { item: 0, amount: '5' }] })).result);
    // Running net 8.33: round(0.97 × 8.33 / 13.33) = round(0.606…) = 0.61, less 0.08 already credited.
    expect(second).toMatchObject({ subtotal: '7.22', tax: '0.53', total: '7.75', lines: [{ item: 0, amount: '5.00' }, { item: 1, amount: '2.22' }] });
    // Line 1 is fully credited now; line 0 has 5.00 left.
    expectInvalid(await create({ invoice_id: id, reason: 'More', lines: [{ item: 1, amount: '0.01' }] }), 'lines[0].amount');
    expectInvalid(await create({ invoice_id: id, reason: 'More', lines: [{ item: 0, amount: '5.01' }] }), 'lines[0].amount');
    // A line named without an amount credits what is left of it: the rest of the tax comes with it, exactly.
    const last = await note((await create({ invoice_id: id, reason: 'Closing', lines: [{ item: 0 }] })).result);
    expect(last).toMatchObject({ subtotal: '5.00', tax: '0.36', total: '5.36' });
    expect((await invoice(id)).credited).toBe('14.30');
    expect(await balance(client.token)).toBe('14.30');
    // A gross amount is split into net and tax that add up to it.
    const other = await paidInvoice();
    const byAmount = await note((await create({ invoice_id: other.id, reason: 'Goodwill', amount: '5.00' })).result);
    expect(Number(byAmount.subtotal) * 100 + Number(byAmount.tax) * 100).toBeCloseTo(500, 6);
    expect(byAmount).toMatchObject({ total: '5.00', subtotal: '4.66', tax: '0.34' });
    expectInvalid(await create({ invoice_id: other.id, reason: 'Too much', amount: '9.31' }), 'amount');
    expect((await create({ invoice_id: other.id, reason: 'The rest', amount: '9.30' })).status).toBe(200);
  });

  it('refuses bad requests: missing or wrong-typed params, wrong role, another state, a top-up invoice', async () => {
    const { client, id } = await paidInvoice();
    expectInvalid(await create({ reason: 'x' }), 'invoice_id');
    expectInvalid(await create({ invoice_id: id }), 'reason');
    expectInvalid(await create({ invoice_id: 'one', reason: 'x' }), 'invoice_id');
    expectInvalid(await create({ invoice_id: id, reason: '' }), 'reason');
    expectInvalid(await create({ invoice_id: id, reason: '   ' }), 'reason');
    expectInvalid(await create({ invoice_id: id, reason: 42 }), 'reason');
    expectError(await create({ invoice_id: id, reason: 'x', lines: 'all' }), 422);
    expectError(await create({ invoice_id: id, reason: 'x', lines: [] }), 422);
    expectError(await create({ invoice_id: id, reason: 'x', lines: [{ item: -1 }] }), 422);
    expectError(await create({ invoice_id: id, reason: 'x', lines: [{ item: 0.5 }] }), 422);
    expectInvalid(await create({ invoice_id: id, reason: 'x', lines: [{ item: 2 }] }), 'lines[0].item');
    expectInvalid(await create({ invoice_id: id, reason: 'x', lines: [{ item: 0 }, { item: 0 }] }), 'lines[1].item');
    for (const amount of ['0', 0, '-1', '1.001', 'ten', '']) expectInvalid(await create({ invoice_id: id, reason: 'x', lines: [{ item: 0, amount }] }), 'lines[0].amount');
    for (const amount of ['0', '-1', '0.001', 'ten']) expectInvalid(await create({ invoice_id: id, reason: 'x', amount }), 'amount');
    expectInvalid(await create({ invoice_id: id, reason: 'x', amount: '1', lines: [{ item: 0 }] }), 'amount');
    expectError(await create({ invoice_id: 999_999, reason: 'x' }), 404);
    // Only a paid invoice: an unpaid one is a proforma with nothing to credit.
    await asClient(t, client.token, 'cart/add_item', { id: plan, period: '1M' });
    const unpaid = (await asClient(t, client.token, 'cart/checkout')).result.invoice_id;
    expectError(await create({ invoice_id: unpaid, reason: 'x' }), 409);
    // A top-up invoice is refunded, never credited to the balance it added to.
    const hash = (await asClient(t, client.token, 'invoice/funds_invoice', { amount: '5' })).result;
    const topUp = (await t.call('/api/guest/invoice/get', { hash })).result.id;
    expect((await t.admin('invoice/mark_as_paid', { id: topUp })).result).toBe(true);
    expectError(await create({ invoice_id: topUp, reason: 'x' }), 409);
    // Roles: a client cannot create notes; staff need invoice.manage to create and invoice.view to read.
    expectError(await t.call('/api/admin/invoice/credit_note_create', { invoice_id: id, reason: 'x' }, { basic: ['admin', client.token] }), 205, 401);
    expectError(await asClient(t, client.token, 'invoice/credit_note_create', { invoice_id: id, reason: 'x' }), 740, 404);
    const reader = await staffWith(t, ['invoice.view']);
    expectError(await asStaff(t, reader, 'invoice/credit_note_create', { invoice_id: id, reason: 'x' }), 403);
    expect((await asStaff(t, reader, 'invoice/credit_note_get_list', { invoice_id: id })).status).toBe(200);
    const nobody = await staffWith(t, ['client.view']);
    expectError(await asStaff(t, nobody, 'invoice/credit_note_get_list', {}), 403);
    expectError(await asStaff(t, nobody, 'invoice/credit_note_get', { id: 1 }), 403);
    expect((await invoice(id)).credited).toBe('0.00');
    expectError(await t.admin('invoice/credit_note_get', { id: 999_999 }), 404);
    expectInvalid(await t.admin('invoice/credit_note_get', {}), 'id');
  });

  it('concurrent notes on one invoice never credit more than it; their numbers are gapless', async () => {
    const { client, id } = await paidInvoice();
    const replies = await Promise.all(Array.from({ length: 10 }, (_, n) => create({ invoice_id: id, reason: `Concurrent ${n}`, amount: '3.00' })));
    const won = replies.filter((reply) => reply.status === 200);
    // 14.30 holds four notes of 3.00; every other request is told what is left (422), none over-credits.
    expect(won).toHaveLength(4);
    expect(replies.filter((reply) => reply.status !== 200).every((reply) => reply.status === 422)).toBe(true);
    expect((await invoice(id)).credited).toBe('12.00');
    expect(await balance(client.token)).toBe('12.00');
    // Concurrent full credits: one wins the 2.30 left.
    const rest = await Promise.all(Array.from({ length: 5 }, () => create({ invoice_id: id, reason: 'Rest' })));
    expect(rest.filter((reply) => reply.status === 200)).toHaveLength(1);
    expect((await invoice(id)).credited).toBe('14.30');
    // Notes on several invoices at once draw their numbers from the one sequence.
    const others = await Promise.all([paidInvoice(), paidInvoice(), paidInvoice()]);
    const spread = await Promise.all(others.flatMap(({ id: other }) => [1, 2].map((n) => create({ invoice_id: other, reason: `Spread ${n}`, amount: '1.00' }))));
    expect(spread.every((reply) => reply.status === 200)).toBe(true);
    // Every number given so far, across all invoices, is CN-1…CN-n with no gap and no repeat.
    const all = (await t.admin('invoice/credit_note_get_list', { per_page: 100 })).result;
    const numbers = all.list.map((row: { number: string }) => Number(row.number.slice(3))).toSorted((a: number, b: number) => a - b);
    expect(numbers).toEqual(Array.from({ length: all.total }, (_, index) => index + 1));
  });

  it('every manual refund makes exactly one refund note; refunds and balance credit share what is left', async () => {
    const { client, id } = await paidInvoice();
    expect((await create({ invoice_id: id, reason: 'Part to balance', amount: '4.30' })).status).toBe(200);
    expect((await t.admin('invoice/refund', { id, amount: '5.00', reason: 'Partial refund' })).result).toBe(true);
    // More than is left (5.00): 422 before any money moves.
    expectInvalid(await t.admin('invoice/refund', { id, amount: '5.01' }), 'amount');
    // Concurrent refunds of the rest: one refund, one note.
    const replies = await Promise.all(Array.from({ length: 5 }, () => t.admin('invoice/refund', { id })));
    expect(replies.filter((reply) => reply.status === 200)).toHaveLength(1);
    const notes = (await t.admin('invoice/credit_note_get_list', { invoice_id: id })).result;
    expect(notes.total).toBe(3);
    const refunds = notes.list.filter((row: { method: string }) => row.method === 'refund');
    expect(refunds.map((row: { total: string; reason: string }) => [row.total, row.reason])).toEqual([
      ['5.00', 'Refund'],
      ['5.00', 'Partial refund'],
    ]);
    const transactions = (await t.admin('invoice/transaction_get_list', { invoice_id: id })).result.list.filter((row: { type: string }) => row.type === 'refund');
    expect(refunds.map((row: { transaction_id: number }) => row.transaction_id).toSorted()).toEqual(transactions.map((row: { id: number }) => row.id).toSorted());
    expect(await invoice(id)).toMatchObject({ status: 'refunded', credited: '14.30' });
    expect(await balance(client.token)).toBe('4.30');
    expectError(await t.admin('invoice/refund', { id }), 409);
  });

  it('clients read, list and download only their own notes; the PDF has number, lines and totals', async () => {
    const { client, id } = await paidInvoice();
    const noteId = (await create({ invoice_id: id, reason: 'Billing error', lines: [{ item: 0, amount: '10.00' }] })).result;
    const other = await t.createClient();
    const own = await asClient(t, client.token, 'invoice/credit_note_get', { id: noteId });
    expect(own.result).toMatchObject({ id: noteId, invoice_id: id, total: '10.73' });
    expect((await asClient(t, client.token, 'invoice/credit_note_get_list', {})).result.list.map((row: { id: number }) => row.id)).toEqual([noteId]);
    expect((await asClient(t, client.token, 'invoice/get', { id })).result.credit_notes).toEqual([expect.objectContaining({ id: noteId, total: '10.73' })]);
    expectError(await asClient(t, other.token, 'invoice/credit_note_get', { id: noteId }), 404);
    expect((await asClient(t, other.token, 'invoice/credit_note_get_list', {})).result).toMatchObject({ list: [], total: 0 });
    expect((await asClient(t, other.token, 'invoice/credit_note_get_list', { invoice_id: id })).result.total).toBe(0);
    const foreign = await t.app.inject({ method: 'GET', url: `/api/client/invoice/credit_note_pdf?id=${noteId}`, headers: { authorization: `Basic ${Buffer.from(`client:${other.token}`).toString('base64')}` } });
    expect(foreign.statusCode).toBe(404);
    expectInvalid(await asClient(t, client.token, 'invoice/credit_note_get', { id: 'x' }), 'id');
    const pdf = await t.app.inject({ method: 'GET', url: `/api/client/invoice/credit_note_pdf?id=${noteId}`, headers: { authorization: `Basic ${Buffer.from(`client:${client.token}`).toString('base64')}` } });
    expect([pdf.statusCode, pdf.headers['content-type']]).toEqual([200, 'application/pdf']);
    const number = own.result.number as string;
    expect(pdf.headers['content-disposition']).toContain(`${number}.pdf`);
    const text = pdfText(pdf.rawPayload);
    const invoiceNumber = (await invoice(id)).number as string;
    for (const expected of [`Credit note ${number}`, `Credits invoice ${invoiceNumber}`, 'Billing error', 'Pro plan', '10.00 USD', 'Sales tax (7.25%)', '0.73 USD', 'Total credited', '10.73 USD']) {
      expect(text).toContain(expected);
    }
    const staffPdf = await t.app.inject({ method: 'GET', url: `/api/admin/invoice/credit_note_pdf?id=${noteId}`, headers: { authorization: `Basic ${Buffer.from(`admin:${t.adminToken}`).toString('base64')}` } });
    expect(staffPdf.statusCode).toBe(200);
  });

  it('exports credit notes as CSV and sends credit_note.created once per note', async () => {
    const { client, id } = await paidInvoice();
    const noteId = (await create({ invoice_id: id, reason: 'Export me', amount: '1.00' })).result;
    const number = (await note(noteId)).number;
    const csv = await t.app.inject({ method: 'GET', url: `/api/admin/export/credit_notes.csv?invoice_id=${id}`, headers: { authorization: `Basic ${Buffer.from(`admin:${t.adminToken}`).toString('base64')}` } });
    expect(csv.statusCode).toBe(200);
    // Fields are quoted; none of these hold a quote or a comma.
    const rows = csv.body.replaceAll('"', '').trim().split(/\r?\n/);
    expect(rows[0]).toBe('id,number,invoice_id,invoice_number,client_id,client_email,client_name,method,reason,subtotal,tax,total,currency,transaction_id,created_at,currency_rate,default_currency,total_in_default');
    expect(rows).toHaveLength(2);
    expect(rows[1]).toContain(`${noteId},${number},${id},`);
    expect(rows[1]).toContain(',balance,Export me,0.93,0.07,1.00,USD,');
    const filtered = await t.app.inject({ method: 'GET', url: `/api/admin/export/credit_notes.csv?type=refund&client_id=${client.id}`, headers: { authorization: `Basic ${Buffer.from(`admin:${t.adminToken}`).toString('base64')}` } });
    expect(filtered.body.trim().split(/\r?\n/)).toHaveLength(1);
    const bad = await t.app.inject({ method: 'GET', url: '/api/admin/export/credit_notes.csv?type=gift', headers: { authorization: `Basic ${Buffer.from(`admin:${t.adminToken}`).toString('base64')}` } });
    expect(bad.statusCode).toBe(422);
    const deliveries = await t.services.db.selectFrom('webhook_deliveries').select(['event_type', 'body']).where('event_type', '=', 'credit_note.created').execute();
    const mine = deliveries.map((row) => JSON.parse(row.body).data).filter((data) => data.credit_note_id === noteId);
    expect(mine).toEqual([{ credit_note_id: noteId, number, invoice_id: id, client_id: client.id, total: 100, currency: 'USD', method: 'balance' }]);
    // One delivery per note written so far in this file.
    const count = (await t.admin('invoice/credit_note_get_list', {})).result.total;
    expect(deliveries).toHaveLength(count);
  });

  it('a retried request with the same key makes one note and one ledger line', async () => {
    const { client, id } = await paidInvoice();
    const replies = await Promise.all(Array.from({ length: 5 }, () => create({ invoice_id: id, reason: 'Retried', amount: '2.00', key: 'ticket-881' })));
    expect(replies.every((reply) => reply.status === 200)).toBe(true);
    expect(new Set(replies.map((reply) => reply.result)).size).toBe(1);
    expect((await create({ invoice_id: id, reason: 'Retried', amount: '2.00', key: 'ticket-881' })).result).toBe(replies[0]!.result);
    expect((await t.admin('invoice/credit_note_get_list', { invoice_id: id })).result.total).toBe(1);
    expect(await balance(client.token)).toBe('2.00');
    // Another key is another note.
    expect((await create({ invoice_id: id, reason: 'Other', amount: '2.00', key: 'ticket-882' })).result).not.toBe(replies[0]!.result);
    expect(await balance(client.token)).toBe('4.00');
    expectInvalid(await create({ invoice_id: id, reason: 'x', key: '' }), 'key');
  });

  it('takes the number prefix from settings', async () => {
    expect((await t.admin('system/settings_update', { credit_note_prefix: 'CRN/' })).body.error).toBeNull();
    const { id } = await paidInvoice();
    const made = await note((await create({ invoice_id: id, reason: 'Prefix', amount: '1' })).result);
    expect(made.number).toMatch(/^CRN\/\d+$/);
    expect((await t.admin('system/settings_update', { credit_note_prefix: 'CN-' })).body.error).toBeNull();
  });
});
