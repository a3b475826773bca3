// CONTRACT §8 invoices people accept: tax rules (admin/invoice/tax_*), the buyer's rule, tax-exempt clients, seller
// and buyer snapshots, numbers given at payment (gapless under concurrent payments), and the PDF read back with
// pdftotext.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectError, expectInvalid } from '../../helpers/assertions.ts';
import { asClient, asStaff, makeProduct, staffWith } from '../../helpers/selling-fixtures.ts';

const dir = mkdtempSync(join(tmpdir(), 'tollgate-pdf-'));
let pdfCount = 0;

/** The text of a PDF, as pdftotext reads it. */
export function pdfText(bytes: Buffer): string {
  pdfCount += 1;
  const file = join(dir, `invoice-${pdfCount}.pdf`);
  writeFileSync(file, bytes);
  return execFileSync('pdftotext', ['-layout', file, '-'], { encoding: 'utf8' });
}

describe('taxes, snapshots, numbers and PDFs', () => {
  let t: TestApp;
  let product: number;

  /** An invoice of 10.00 for a new client with these profile fields. */
  async function invoiceFor(profile: Record<string, unknown>): Promise<{ client: Awaited<ReturnType<TestApp['createClient']>>; invoice: Record<string, any> }> {
    const client = await t.createClient(profile);
    await asClient(t, client.token, 'cart/add_item', { id: product, period: '1M' });
    const checkout = await asClient(t, client.token, 'cart/checkout');
    expect(checkout.body.error).toBeNull();
    const invoice = (await t.admin('invoice/get', { id: checkout.result.invoice_id })).result;
    return { client, invoice };
  }

  beforeAll(async () => {
    t = await createTestApp();
    product = await makeProduct(t, { title: 'Pro plan' });
    await t.admin('system/settings_update', {
      company_name: 'Acme API Ltd',
      company_address_1: '1 Invoice Road',
      company_city: 'Berlin',
      company_postcode: '10115',
      company_country: 'DE',
      company_vat_number: 'DE999999999',
      invoice_prefix: 'ACME-',
    });
  });
  afterAll(async () => {
    await t.close();
  });

  it('manages tax rules and refuses bad ones', async () => {
    const created = await t.admin('invoice/tax_create', { name: 'VAT', rate: '19', country: 'de' });
    expect(created.status).toBe(200);
    const id = created.result as number;
    expect((await t.admin('invoice/tax_get', { id })).result).toEqual({
      id,
      name: 'VAT',
      rate: '19',
      country: 'DE',
      state: null,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expectError(await t.admin('invoice/tax_create', { name: 'Again', rate: 7, country: 'DE' }), 409);
    expectInvalid(await t.admin('invoice/tax_create', { name: 'X', rate: '101' }), 'rate');
    expectInvalid(await t.admin('invoice/tax_create', { name: 'X', rate: '-1' }), 'rate');
    expectInvalid(await t.admin('invoice/tax_create', { name: 'X', rate: '7.1234' }), 'rate');
    expectInvalid(await t.admin('invoice/tax_create', { name: 'X', rate: 'lots' }), 'rate');
    expectInvalid(await t.admin('invoice/tax_create', { name: 'X', rate: 5, country: 'XX' }), 'country');
    expectInvalid(await t.admin('invoice/tax_create', { name: 'X', rate: 5, state: 'CA' }), 'state');
    expectInvalid(await t.admin('invoice/tax_create', { rate: 5 }), 'name');
    expectInvalid(await t.admin('invoice/tax_create', { name: 'X' }), 'rate');
    expectInvalid(await t.admin('invoice/tax_update', { id, rate: 200 }), 'rate');
    expectError(await t.admin('invoice/tax_get', { id: 999_999 }), 404);
    expectError(await t.admin('invoice/tax_update', { id: 999_999, rate: 5 }), 404);
    expectError(await t.admin('invoice/tax_delete', { id: 999_999 }), 404);
    const viewer = await staffWith(t, ['invoice.view']);
    expect((await asStaff(t, viewer, 'invoice/tax_get_list')).result.total).toBe(1);
    expectError(await asStaff(t, viewer, 'invoice/tax_create', { name: 'Y', rate: 1 }), 403);
    expectError(await asStaff(t, viewer, 'invoice/tax_delete', { id }), 403);
    const client = await t.createClient();
    expectError(await asClient(t, client.token, 'invoice/tax_get_list'), 740, 404);
    const temp = (await t.admin('invoice/tax_create', { name: 'Temp', rate: 1, country: 'FR' })).result;
    expect((await t.admin('invoice/tax_update', { id: temp, rate: '5.5', name: 'TVA' })).result).toBe(true);
    expect((await t.admin('invoice/tax_get', { id: temp })).result).toMatchObject({ name: 'TVA', rate: '5.5', country: 'FR' });
    expect((await t.admin('invoice/tax_delete', { id: temp })).result).toBe(true);
    expectError(await t.admin('invoice/tax_get', { id: temp }), 404);
  });

  it("applies the buyer's country-and-state rule, else the country's, else the rule without country, else none", async () => {
    expect((await invoiceFor({ country: 'US', state: 'CA' })).invoice).toMatchObject({ tax_name: null, tax_rate: '0', tax: '0.00', total: '10.00' });
    await t.admin('invoice/tax_create', { name: 'World tax', rate: '10' });
    await t.admin('invoice/tax_create', { name: 'US federal', rate: '5', country: 'US' });
    await t.admin('invoice/tax_create', { name: 'California', rate: '7.25', country: 'US', state: 'CA' });
    expect((await invoiceFor({ country: 'US', state: 'ca' })).invoice).toMatchObject({ tax_name: 'California', tax_rate: '7.25', tax: '0.73', total: '10.73' });
    expect((await invoiceFor({ country: 'US', state: 'NY' })).invoice).toMatchObject({ tax_name: 'US federal', tax_rate: '5', tax: '0.50', total: '10.50' });
    expect((await invoiceFor({ country: 'JP' })).invoice).toMatchObject({ tax_name: 'World tax', tax: '1.00', total: '11.00' });
    expect((await invoiceFor({})).invoice).toMatchObject({ tax_name: 'World tax', tax: '1.00' });
    const german = await invoiceFor({ country: 'DE' });
    expect(german.invoice).toMatchObject({ tax_name: 'VAT', tax_rate: '19', subtotal: '10.00', discount: '0.00', tax: '1.90', total: '11.90' });
    // Tax-exempt clients pay none.
    expect((await invoiceFor({ country: 'DE', tax_exempt: true })).invoice).toMatchObject({ tax_name: null, tax: '0.00', total: '10.00' });
  });

  it('snapshots the seller and the buyer when the invoice is issued', async () => {
    const { client, invoice } = await invoiceFor({ country: 'DE', company: 'Buyer GmbH', address_1: '2 Kunde Str', city: 'Hamburg', vat_number: 'DE111111111' });
    expect(invoice.number).toBeNull();
    expect(invoice.seller).toMatchObject({ name: 'Acme API Ltd', address_1: '1 Invoice Road', city: 'Berlin', country: 'DE', vat_number: 'DE999999999' });
    expect(invoice.buyer).toMatchObject({ name: expect.stringContaining('Test'), company: 'Buyer GmbH', address_1: '2 Kunde Str', city: 'Hamburg', country: 'DE', vat_number: 'DE111111111' });
    // Later changes of either party do not rewrite an issued invoice.
    await t.admin('system/settings_update', { company_city: 'Munich' });
    await t.admin('client/update', { id: client.id, company: 'Renamed GmbH' });
    const again = (await asClient(t, client.token, 'invoice/get', { id: invoice.id })).result;
    expect(again.seller.city).toBe('Berlin');
    expect(again.buyer.company).toBe('Buyer GmbH');
    await t.admin('system/settings_update', { company_city: 'Berlin' });
  });

  it('numbers an invoice when it is paid, consecutively, and never twice', async () => {
    const before = (await t.admin('system/settings_get')).result.invoice_next_number as number;
    const first = (await invoiceFor({ country: 'DE' })).invoice;
    const second = (await invoiceFor({ country: 'DE' })).invoice;
    expect((await t.admin('invoice/mark_as_paid', { id: second.id })).result).toBe(true);
    expect((await t.admin('invoice/mark_as_paid', { id: first.id })).result).toBe(true);
    expect((await t.admin('invoice/get', { id: second.id })).result.number).toBe(`ACME-${before}`);
    expect((await t.admin('invoice/get', { id: first.id })).result.number).toBe(`ACME-${before + 1}`);
    expectError(await t.admin('invoice/mark_as_paid', { id: first.id }), 409);
    expect((await t.admin('invoice/get', { id: first.id })).result.number).toBe(`ACME-${before + 1}`);
    // A refund keeps the number; a canceled invoice never gets one.
    await t.admin('invoice/refund', { id: first.id });
    expect((await t.admin('invoice/get', { id: first.id })).result.number).toBe(`ACME-${before + 1}`);
    const canceled = (await invoiceFor({})).invoice;
    await t.admin('invoice/cancel', { id: canceled.id });
    expectError(await t.admin('invoice/mark_as_paid', { id: canceled.id }), 409);
    expect((await t.admin('invoice/get', { id: canceled.id })).result.number).toBeNull();
    expect((await t.admin('system/settings_get')).result.invoice_next_number).toBe(before + 2);
  });

  it('gives 50 concurrent payments 50 distinct consecutive numbers', async () => {
    const ids: number[] = [];
    for (let i = 0; i < 50; i++) ids.push((await invoiceFor({})).invoice.id);
    const start = (await t.admin('system/settings_get')).result.invoice_next_number as number;
    // Each invoice is also paid twice at once: exactly one payment of each wins.
    const replies = await Promise.all([...ids, ...ids].map((id) => t.admin('invoice/mark_as_paid', { id })));
    expect(replies.filter((reply) => reply.status === 200)).toHaveLength(50);
    expect(replies.filter((reply) => reply.status === 409)).toHaveLength(50);
    const numbers = await Promise.all(ids.map(async (id) => (await t.admin('invoice/get', { id })).result.number as string));
    const values = numbers.map((number) => Number(number.replace('ACME-', ''))).toSorted((a, b) => a - b);
    expect(values).toEqual(Array.from({ length: 50 }, (_, i) => start + i));
    expect((await t.admin('system/settings_get')).result.invoice_next_number).toBe(start + 50);
  });

  it('renders the invoice as a PDF for staff, its client and the hash holder, and errors as envelopes', async () => {
    const { client, invoice } = await invoiceFor({ country: 'DE', company: 'Buyer GmbH', vat_number: 'DE222222222' });
    const guest = await t.app.inject({ method: 'GET', url: `/api/guest/invoice/pdf?hash=${invoice.hash}` });
    expect(guest.statusCode).toBe(200);
    expect(guest.headers['content-type']).toBe('application/pdf');
    expect(guest.headers['content-disposition']).toContain(`proforma-${invoice.id}.pdf`);
    expect(guest.headers['cache-control']).toBe('no-store');
    const proforma = pdfText(guest.rawPayload);
    expect(proforma).toContain(`Pro forma ${invoice.id}`);
    expect(proforma).toContain('Acme API Ltd');
    expect(proforma).toContain('DE999999999');
    expect(proforma).toContain('Buyer GmbH');
    expect(proforma).toContain('DE222222222');
    expect(proforma).toContain('Pro plan');
    expect(proforma).toMatch(/VAT \(19%\)\s+1\.90 USD/);
    expect(proforma).toMatch(/Total\s+11\.90 USD/);
    expect(proforma).toContain('unpaid');

    await t.admin('invoice/mark_as_paid', { id: invoice.id });
    const number = (await t.admin('invoice/get', { id: invoice.id })).result.number as string;
    const basic = `Basic ${Buffer.from(`client:${client.token}`).toString('base64')}`;
    const own = await t.app.inject({ method: 'POST', url: '/api/client/invoice/pdf', payload: { id: invoice.id }, headers: { authorization: basic } });
    expect(own.headers['content-type']).toBe('application/pdf');
    const paid = pdfText(own.rawPayload);
    expect(paid).toContain(`Invoice ${number}`);
    expect(paid).not.toContain('Pro forma');
    expect(paid).toContain('paid');
    const staff = await t.app.inject({ method: 'POST', url: '/api/admin/invoice/pdf', payload: { id: invoice.id }, headers: { authorization: `Basic ${Buffer.from(`admin:${t.adminToken}`).toString('base64')}` } });
    expect(staff.rawPayload.subarray(0, 5).toString()).toBe('%PDF-');

    // Errors stay JSON envelopes.
    const other = await t.createClient();
    expectError(await asClient(t, other.token, 'invoice/pdf', { id: invoice.id }), 404);
    expectError(await t.call('/api/guest/invoice/pdf', { hash: 'wrong-hash' }), 404);
    expectInvalid(await t.call('/api/guest/invoice/pdf', {}), 'hash');
    expectInvalid(await asClient(t, other.token, 'invoice/pdf', { id: 'one' }), 'id');
    expectError(await t.call('/api/client/invoice/pdf', { id: invoice.id }), 201, 401);
    expectError(await t.admin('invoice/pdf', { id: 999_999 }), 404);
    const nobody = await staffWith(t, []);
    expectError(await asStaff(t, nobody, 'invoice/pdf', { id: invoice.id }), 403);
    // The service call the e-mail receipt uses.
    expect((await t.services.invoices.pdf(invoice.id)).subarray(0, 5).toString()).toBe('%PDF-');
  });
});
