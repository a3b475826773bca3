// Tax-inclusive prices (issue 26 item 4), on SQLite and on PostgreSQL + Redis when TEST_* are set: the buyer pays the
// price shown and the tax is extracted from it, rounded once per invoice; a reverse-charged or exported sale pays the
// same price with no tax (as Stripe Tax does with inclusive prices); the manual rules extract the same way; credit notes
// of an inclusive invoice credit net and tax adding up to what was paid, never more; a late VIES confirmation keeps the
// total; the forms learn "incl. VAT" from guest/system/billing and the PDF says so.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectInvalid } from '../../helpers/assertions.ts';
import { asClient, makeProduct } from '../../helpers/selling-fixtures.ts';
import { ViesStandIn } from '../../helpers/vies-server.ts';

describe('tax-inclusive prices', () => {
  let t: TestApp;
  let plan: number;
  const vies = new ViesStandIn();

  beforeAll(async () => {
    await vies.start();
    t = await createTestApp({ VIES_TIMEOUT_MS: '300', CURRENCY: 'EUR' });
    plan = await makeProduct(t, { title: 'API plan' });
    expect((await t.call('/api/guest/system/billing', {})).result).toEqual({ currency: 'EUR', tax_applies: false, tax_inclusive: false });
    const settings = await t.admin('system/settings_update', { company_country: 'DE', company_vat_number: 'DE123456789', eu_vat: true, tax_inclusive: true, vies_url: vies.url });
    expect(settings.body.error).toBeNull();
  });
  afterAll(async () => {
    await t.close();
    await vies.close();
  });

  async function checkout(token: string) {
    expect((await asClient(t, token, 'cart/add_item', { id: plan, period: '1M' })).body.error).toBeNull();
    const done = await asClient(t, token, 'cart/checkout');
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    return (await t.admin('invoice/get', { id: done.result.invoice_id })).result;
  }

  it('tells the forms that prices include tax, and that tax applies', async () => {
    expect((await t.call('/api/guest/system/billing', {})).result).toEqual({ currency: 'EUR', tax_applies: true, tax_inclusive: true });
    expectInvalid(await t.admin('system/settings_update', { tax_inclusive: 'sometimes' }), 'tax_inclusive');
  });

  it('extracts the tax from the price the buyer pays, at the rate the rule chose', async () => {
    const german = await checkout((await t.createClient({ country: 'DE' })).token);
    // 10.00 × 19/119 = 1.5966… → 1.60; the total is the price.
    expect(german).toMatchObject({ tax_inclusive: true, tax_rule: 'domestic', subtotal: '10.00', tax_rate: '19', tax: '1.60', total: '10.00' });
    const french = await checkout((await t.createClient({ country: 'FR' })).token);
    expect(french).toMatchObject({ tax_inclusive: true, tax_rule: 'oss', tax_rate: '20', tax: '1.67', total: '10.00' });
    const american = await checkout((await t.createClient({ country: 'US' })).token);
    expect(american).toMatchObject({ tax_rule: 'export', tax: '0.00', total: '10.00' });
    vies.setValid('FRAA123456789');
    const company = await t.createClient({ country: 'FR', company: 'Acheteur SA', vat_number: 'FRAA123456789' });
    await t.services.outbox.runDue(new Date());
    // Reverse charge on an inclusive instance: the full price, no tax (the buyer pays what it was shown).
    expect(await checkout(company.token)).toMatchObject({ tax_rule: 'reverse_charge', tax: '0.00', total: '10.00' });
  });

  it('keeps the total when a late confirmation turns an unpaid sale into a reverse charge', async () => {
    vies.mode = 'down';
    vies.setValid('FRBB123456789');
    const company = await t.createClient({ country: 'FR', company: 'Attente SARL', vat_number: 'FRBB123456789' });
    const invoice = await checkout(company.token);
    expect(invoice).toMatchObject({ tax_rule: 'oss', tax: '1.67', total: '10.00' });
    vies.mode = 'normal';
    await t.services.outbox.runDue(new Date(Date.now() + 30 * 60_000));
    expect((await t.admin('invoice/get', { id: invoice.id })).result).toMatchObject({ tax_rule: 'reverse_charge', tax: '0.00', total: '10.00' });
  });

  it('credits net and tax of an inclusive invoice adding up to what was paid, never more', async () => {
    const client = await t.createClient({ country: 'DE' });
    const invoice = await checkout(client.token);
    expect((await t.admin('invoice/mark_as_paid', { id: invoice.id })).result).toBe(true);
    const half = await t.admin('invoice/credit_note_create', { invoice_id: invoice.id, amount: '5.00', reason: 'Half' });
    expect(half.body.error).toBeNull();
    const first = (await t.admin('invoice/credit_note_get', { id: half.result })).result;
    expect(first).toMatchObject({ subtotal: '4.20', tax: '0.80', total: '5.00' });
    const rest = await t.admin('invoice/credit_note_create', { invoice_id: invoice.id, reason: 'The rest' });
    const second = (await t.admin('invoice/credit_note_get', { id: rest.result })).result;
    // 8.40 net + 1.60 tax = 10.00 in all: the two notes together credit exactly the invoice.
    expect(second).toMatchObject({ subtotal: '4.20', tax: '0.80', total: '5.00' });
    expect((await t.admin('invoice/get', { id: invoice.id })).result.credited).toBe('10.00');
    expect((await t.admin('invoice/credit_note_create', { invoice_id: invoice.id, reason: 'More' })).status).toBe(409);
  });

  it('extracts with the manual rules too, when the EU rules are off', async () => {
    expect((await t.admin('system/settings_update', { eu_vat: false })).body.error).toBeNull();
    expect((await t.admin('invoice/tax_create', { name: 'Sales tax', rate: '7.25', country: 'US' })).body.error).toBeNull();
    // 10.00 × 7.25/107.25 = 0.676… → 0.68.
    expect(await checkout((await t.createClient({ country: 'US' })).token)).toMatchObject({ tax_rule: 'manual', tax_name: 'Sales tax', tax: '0.68', total: '10.00', tax_inclusive: true });
    expect(await checkout((await t.createClient({ country: 'FR' })).token)).toMatchObject({ tax_rule: 'manual', tax_name: null, tax: '0.00', total: '10.00' });
    expect((await t.admin('system/settings_update', { eu_vat: true })).body.error).toBeNull();
  });

  it('says on the PDF that the prices include the tax', async () => {
    const invoice = await checkout((await t.createClient({ country: 'DE' })).token);
    const pdf = await t.app.inject({ method: 'GET', url: `/api/admin/invoice/pdf?id=${invoice.id}`, headers: { authorization: `Basic ${Buffer.from(`admin:${t.adminToken}`).toString('base64')}` } });
    expect(pdf.statusCode).toBe(200);
    const file = join(mkdtempSync(join(tmpdir(), 'tollgate-vat-')), 'invoice.pdf');
    writeFileSync(file, pdf.rawPayload);
    const text = execFileSync('pdftotext', ['-layout', file, '-'], { encoding: 'utf8' }).replace(/\s+/g, ' ');
    expect(text).toContain('Prices include VAT DE');
    expect(text).toContain('VAT DE (19%)');
  });
});
