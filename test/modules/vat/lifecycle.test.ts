// The EU VAT lifecycle (issue 26 "Done when"), on SQLite and on PostgreSQL + Redis when TEST_* are set: a German seller
// sells to a French company with a valid VAT number (reverse charge), to a French consumer (French VAT, an OSS line),
// to a US company (no EU VAT), to a German consumer (domestic) and to a Belgian consumer (partly credited); one VAT
// check is made while VIES is down and settled later (the unpaid invoice recalculated), another settled after payment
// (a credit note). The OSS report of the quarter is exact — by payment date, the quarter's credit notes subtracted,
// sales of the quarters before and after left out — and its CSV says the same; the invoice PDF carries the
// reverse-charge mention and both parties' VAT numbers. Dates are set in the current quarter (the correction note is
// dated when VIES answers, i.e. now).
//
// In EUR and USD: the seller's default currency is EUR and USD is sold at 1.0865 (10.00 EUR → 10.865 → 10.87 USD, the
// half rounded up). The French buyers pay in EUR; the US company, and Irish buyers beside an Irish consumer paying in
// EUR, pay in USD (chosen in the cart). The tax of a USD sale is worked out on its USD amounts (23% of 10.87 = 2.5001
// → 2.50), its correction note is in USD and goes to a USD balance, and the OSS report keeps one line per currency.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REVERSE_CHARGE_MENTION } from '../../../src/lib/eu-vat.ts';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectError, expectInvalid } from '../../helpers/assertions.ts';
import { asClient, asStaff, makeProduct, staffWith } from '../../helpers/selling-fixtures.ts';
import { ViesStandIn } from '../../helpers/vies-server.ts';

/** The current quarter's label, its first moment and the next quarter's. */
function currentQuarter(now = new Date()): { label: string; start: Date; next: Date } {
  const year = now.getUTCFullYear();
  const q = Math.floor(now.getUTCMonth() / 3);
  return { label: `${year}-Q${q + 1}`, start: new Date(Date.UTC(year, q * 3, 1)), next: new Date(Date.UTC(year, q * 3 + 3, 1)) };
}

function pdfText(bytes: Buffer): string {
  const file = join(mkdtempSync(join(tmpdir(), 'tollgate-vat-')), 'invoice.pdf');
  writeFileSync(file, bytes);
  return execFileSync('pdftotext', ['-layout', file, '-'], { encoding: 'utf8' });
}

describe('EU VAT lifecycle: a German seller, buyers across borders, the OSS report', () => {
  let t: TestApp;
  let plan: number;
  const vies = new ViesStandIn();
  const quarter = currentQuarter();
  /** A moment `hours` into the current quarter. */
  const at = (hours: number) => new Date(quarter.start.getTime() + hours * 3_600_000);
  const auth = () => ({ authorization: `Basic ${Buffer.from(`admin:${t.adminToken}`).toString('base64')}` });

  beforeAll(async () => {
    await vies.start();
    t = await createTestApp({ VIES_TIMEOUT_MS: '300', CURRENCY: 'EUR' });
    plan = await makeProduct(t, { title: 'API plan' });
    expect((await t.admin('currency/create', { code: 'USD', conversion_rate: '1.0865' })).result).toBe('USD');
    const settings = await t.admin('system/settings_update', {
      company_name: 'Seller GmbH',
      company_address_1: '1 Rechnungsweg',
      company_city: 'Berlin',
      company_country: 'DE',
      company_vat_number: 'DE123456789',
      eu_vat: true,
      vies_url: vies.url,
    });
    expect(settings.body.error).toBeNull();
  });
  afterAll(async () => {
    await t.close();
    await vies.close();
  });

  /**
   * Checks out one plan for the client at `when` (in `currency` when given, chosen in the cart as a buyer would) and
   * pays it at `paidAt` (unless null); answers the invoice.
   */
  async function sale(client: { id: number; token: string }, when: Date, paidAt: Date | null, currency?: string) {
    if (currency !== undefined) expect((await asClient(t, client.token, 'cart/set_currency', { currency })).result).toBe(true);
    expect((await asClient(t, client.token, 'cart/add_item', { id: plan, period: '1M' })).body.error).toBeNull();
    const placed = await t.services.carts.checkout(client.id, {}, when);
    if (paidAt !== null) await t.services.invoices.markAsPaid(placed.invoice_id!, {}, paidAt);
    return (await t.admin('invoice/get', { id: placed.invoice_id })).result;
  }

  let frenchCompanyInvoice: { id: number };
  let americanInvoice: { id: number; currency_rate_at: string | null };
  let irishDollarInvoice: { id: number };
  let expectedReport: Array<Record<string, unknown>>;

  it('sells across borders by the rules, settles a check made while VIES was down, and corrects a paid sale', async () => {
    // A French company with a valid number: reverse charge.
    vies.setValid('FRAA123456789', 'Acheteur SA', '1 Rue du Commerce 75001 Paris');
    const company = await t.createClient({ country: 'FR', company: 'Acheteur SA', vat_number: 'FRAA123456789' });
    await t.services.outbox.runDue(new Date());
    const b2b = await sale(company, at(1), at(2));
    expect(b2b).toMatchObject({ currency: 'EUR', currency_rate: '1', currency_base: 'EUR', tax_rule: 'reverse_charge', tax: '0.00', total: '10.00', tax_note: REVERSE_CHARGE_MENTION, buyer: { vat_number: 'FRAA123456789' }, seller: { vat_number: 'DE123456789' } });
    frenchCompanyInvoice = b2b;
    // A French consumer: French VAT through the OSS.
    const consumer = await t.createClient({ country: 'FR' });
    expect(await sale(consumer, at(3), at(4))).toMatchObject({ currency: 'EUR', tax_rule: 'oss', tax_name: 'VAT FR', tax_rate: '20', tax: '2.00', total: '12.00', tax_note: null });
    // A US company paying in dollars: no EU VAT, whatever its number; the invoice in USD at the rate of the sale.
    const american = await t.createClient({ country: 'US', company: 'Buyer Inc', vat_number: '12-3456789' });
    americanInvoice = await sale(american, at(5), at(6), 'USD');
    expect(americanInvoice).toMatchObject({ currency: 'USD', currency_rate: '1.0865', currency_base: 'EUR', tax_rule: 'export', tax_name: null, tax_rate: '0', subtotal: '10.87', tax: '0.00', total: '10.87', items: [{ price: '10.87', tax_rule: 'export' }] });
    expect(americanInvoice.currency_rate_at).toEqual(expect.any(String));
    expect((await t.admin('client/get', { id: american.id })).result.currency).toBe('USD');
    // An Irish consumer paying in euros and another paying in dollars: Irish VAT on each sale's own amounts.
    expect(await sale(await t.createClient({ country: 'IE' }), at(5), at(6))).toMatchObject({ currency: 'EUR', tax_rule: 'oss', tax_name: 'VAT IE', tax_rate: '23', tax: '2.30', total: '12.30' });
    irishDollarInvoice = await sale(await t.createClient({ country: 'IE' }), at(5), at(6), 'USD');
    expect(irishDollarInvoice).toMatchObject({ currency: 'USD', currency_rate: '1.0865', tax_rule: 'oss', tax_name: 'VAT IE', tax_rate: '23', subtotal: '10.87', tax: '2.50', total: '13.37' });
    // A German consumer and a German company: the seller's own rate, VAT number or not.
    expect(await sale(await t.createClient({ country: 'DE' }), at(7), at(8))).toMatchObject({ tax_rule: 'domestic', tax_name: 'VAT DE', tax_rate: '19', tax: '1.90', total: '11.90' });
    vies.setValid('DE987654321');
    const german = await t.createClient({ country: 'DE', company: 'Käufer GmbH', vat_number: 'DE987654321' });
    await t.services.outbox.runDue(new Date());
    expect((await sale(german, at(9), null)).tax_rule).toBe('domestic');

    // A French company whose check is made while VIES is down: taxed as a consumer, then recalculated before payment.
    vies.mode = 'MS_UNAVAILABLE';
    vies.setValid('FRBB123456789');
    const waiting = await t.createClient({ country: 'FR', company: 'Attente SARL', vat_number: 'FRBB123456789' });
    await t.services.outbox.runDue(new Date());
    const pending = await sale(waiting, at(10), null);
    expect(pending).toMatchObject({ tax_rule: 'oss', tax: '2.00', total: '12.00' });
    // Another, paid before VIES answers: the credit note takes the sale out of the OSS.
    vies.setValid('FRCC123456789');
    const early = await t.createClient({ country: 'FR', company: 'Pressé SARL', vat_number: 'FRCC123456789' });
    const paidEarly = await sale(early, at(11), at(12));
    expect(paidEarly).toMatchObject({ tax_rule: 'oss', status: 'paid', total: '12.00' });
    // An Irish company paying in dollars, also paid before VIES answers: its correction is in dollars.
    vies.setValid('IE1234567WA');
    const irish = await t.createClient({ country: 'IE', company: 'Ceannaí Teo', vat_number: 'IE1234567WA' });
    const paidEarlyUsd = await sale(irish, at(11), at(12), 'USD');
    expect(paidEarlyUsd).toMatchObject({ currency: 'USD', tax_rule: 'oss', tax_rate: '23', status: 'paid', tax: '2.50', total: '13.37' });
    vies.mode = 'normal';
    await t.services.outbox.runDue(new Date(Date.now() + 30 * 60_000));
    const settled = (await t.admin('invoice/get', { id: pending.id })).result;
    expect(settled).toMatchObject({ tax_rule: 'reverse_charge', tax: '0.00', total: '10.00', status: 'unpaid' });
    await t.services.invoices.markAsPaid(pending.id, {}, at(13));
    const corrected = (await t.admin('invoice/get', { id: paidEarly.id })).result;
    expect(corrected).toMatchObject({ tax_rule: 'oss', credited: '2.00' });
    const correctedUsd = (await t.admin('invoice/get', { id: paidEarlyUsd.id })).result;
    expect(correctedUsd).toMatchObject({ currency: 'USD', tax_rule: 'oss', credited: '2.50', credit_notes: [{ total: '2.50' }] });
    expect((await t.admin('invoice/credit_note_get', { id: correctedUsd.credit_notes[0].id })).result).toMatchObject({ currency: 'USD', subtotal: '0.00', tax: '2.50', total: '2.50' });
    expect((await asClient(t, irish.token, 'client/balance_get_total')).result).toBe('2.50');
    expect((await asClient(t, early.token, 'client/balance_get_total')).result).toBe('2.00');

    // A Belgian consumer, credited half (gross 6.05 = 5.00 net + 1.05 VAT) within the quarter.
    const belgian = await t.createClient({ country: 'BE' });
    const be = await sale(belgian, at(14), at(15));
    expect(be).toMatchObject({ tax_rule: 'oss', tax_rate: '21', tax: '2.10', total: '12.10' });
    await t.services.creditNotes.create({ invoiceId: be.id, reason: 'Half the month', lines: null, amount: 605, staffId: null, key: null }, at(16));

    // Left out: an OSS sale paid before the quarter, one paid after it, and one never paid.
    const before = await t.createClient({ country: 'FR' });
    await sale(before, new Date(quarter.start.getTime() - 7_200_000), new Date(quarter.start.getTime() - 1000));
    const after = await t.createClient({ country: 'IT' });
    await sale(after, at(17), quarter.next);
    await sale(await t.createClient({ country: 'AT' }), at(18), null);

    expectedReport = [
      { country: 'BE', rate: '21', currency: 'EUR', net: '5.00', vat: '1.05', invoices: 1, credit_notes: 1 },
      // The consumer's sale and the early company's, less the latter's correction note (net and VAT both).
      { country: 'FR', rate: '20', currency: 'EUR', net: '10.00', vat: '2.00', invoices: 2, credit_notes: 1 },
      { country: 'IE', rate: '23', currency: 'EUR', net: '10.00', vat: '2.30', invoices: 1, credit_notes: 0 },
      // The dollar consumer's sale and the Irish company's, less the latter's correction note: in USD, never converted.
      { country: 'IE', rate: '23', currency: 'USD', net: '10.87', vat: '2.50', invoices: 2, credit_notes: 1 },
    ];
  });

  it('reports the quarter exactly by payment date, and the quarters around it apart', async () => {
    const report = await t.admin('invoice/oss_report', { quarter: quarter.label });
    expect(report.status).toBe(200);
    expect(report.result).toEqual({ quarter: quarter.label, from: quarter.start.toISOString().replace('.000', ''), to: quarter.next.toISOString().replace('.000', ''), lines: expectedReport });
    const previous = currentQuarter(new Date(quarter.start.getTime() - 1000));
    expect((await t.admin('invoice/oss_report', { quarter: previous.label.toLowerCase() })).result.lines).toEqual([{ country: 'FR', rate: '20', currency: 'EUR', net: '10.00', vat: '2.00', invoices: 1, credit_notes: 0 }]);
    const next = currentQuarter(quarter.next);
    expect((await t.admin('invoice/oss_report', { quarter: next.label })).result.lines).toEqual([{ country: 'IT', rate: '22', currency: 'EUR', net: '10.00', vat: '2.20', invoices: 1, credit_notes: 0 }]);
  });

  it('gives the same report as CSV, and refuses bad quarters, wrong roles and missing permissions', async () => {
    const csv = await t.app.inject({ method: 'GET', url: `/api/admin/export/oss_report.csv?quarter=${quarter.label}`, headers: auth() });
    expect(csv.statusCode).toBe(200);
    expect(csv.headers['content-type']).toContain('text/csv');
    expect(csv.body.replaceAll('"', '').trim().split(/\r?\n/)).toEqual([
      'quarter,country,rate,currency,net,vat,invoices,credit_notes',
      `${quarter.label},BE,21,EUR,5.00,1.05,1,1`,
      `${quarter.label},FR,20,EUR,10.00,2.00,2,1`,
      `${quarter.label},IE,23,EUR,10.00,2.30,1,0`,
      `${quarter.label},IE,23,USD,10.87,2.50,2,1`,
    ]);
    for (const bad of ['2026-Q5', '2026Q4', 'Q4-2026', '', '2020-Q1']) expectInvalid(await t.admin('invoice/oss_report', { quarter: bad }), 'quarter');
    expectInvalid(await t.admin('invoice/oss_report', {}), 'quarter');
    expectInvalid(await t.admin('invoice/oss_report', { quarter: 2026 }), 'quarter');
    const badCsv = await t.app.inject({ method: 'GET', url: '/api/admin/export/oss_report.csv?quarter=2026-Q9', headers: auth() });
    expect(badCsv.statusCode).toBe(422);
    expect(JSON.parse(badCsv.body).error.message).toContain('"quarter"');
    const client = await t.createClient();
    expectError(await asClient(t, client.token, 'invoice/oss_report', { quarter: quarter.label }), 740, 404);
    const outsider = await staffWith(t, ['client.view']);
    expectError(await asStaff(t, outsider, 'invoice/oss_report', { quarter: quarter.label }), 403);
    const viewer = await staffWith(t, ['invoice.view']);
    expect((await asStaff(t, viewer, 'invoice/oss_report', { quarter: quarter.label })).result.lines).toEqual(expectedReport);
  });

  it('lets staff edit the rate table, which later sales use and earlier invoices keep', async () => {
    const rates = (await t.admin('invoice/vat_rate_get_list')).result as Array<{ country: string; rate: string; standard_rate: string }>;
    expect(rates).toHaveLength(27);
    expect(rates.find((rate) => rate.country === 'FR')).toMatchObject({ rate: '20', standard_rate: '20', name: 'France' });
    expect((await t.admin('invoice/vat_rate_update', { country: 'fr', rate: '5.5' })).result).toBe(true);
    const consumer = await t.createClient({ country: 'FR' });
    expect(await sale(consumer, new Date(), null)).toMatchObject({ tax_rule: 'oss', tax_rate: '5.5', tax: '0.55', total: '10.55' });
    expect((await t.admin('invoice/oss_report', { quarter: quarter.label })).result.lines).toEqual(expectedReport);
    expectInvalid(await t.admin('invoice/vat_rate_update', { country: 'US', rate: 10 }), 'country');
    expectInvalid(await t.admin('invoice/vat_rate_update', { country: 'FR', rate: '101' }), 'rate');
    expectInvalid(await t.admin('invoice/vat_rate_update', { country: 'FR', rate: 'high' }), 'rate');
    expectInvalid(await t.admin('invoice/vat_rate_update', { country: 'FR' }), 'rate');
    const viewer = await staffWith(t, ['invoice.view']);
    expectError(await asStaff(t, viewer, 'invoice/vat_rate_update', { country: 'FR', rate: 20 }), 403);
    expect((await t.admin('invoice/vat_rate_update', { country: 'FR', rate: 20 })).result).toBe(true);
  });

  it("prints the reverse-charge mention and both parties' VAT numbers on the invoice PDF", async () => {
    const pdf = await t.app.inject({ method: 'GET', url: `/api/admin/invoice/pdf?id=${frenchCompanyInvoice.id}`, headers: auth() });
    expect(pdf.statusCode).toBe(200);
    const text = pdfText(pdf.rawPayload).replace(/\s+/g, ' ');
    expect(text).toContain('VAT: DE123456789');
    expect(text).toContain('VAT: FRAA123456789');
    expect(text).toContain(REVERSE_CHARGE_MENTION);
    expect(text).toContain('Reverse charge (0%)');
  });

  it("prints a dollar sale's amounts in dollars on its PDF, as on the invoice", async () => {
    const text = async (id: number) => {
      const pdf = await t.app.inject({ method: 'GET', url: `/api/admin/invoice/pdf?id=${id}`, headers: auth() });
      expect(pdf.statusCode).toBe(200);
      return pdfText(pdf.rawPayload).replace(/\s+/g, ' ');
    };
    const oss = await text(irishDollarInvoice.id);
    expect(oss).toContain('Subtotal 10.87 USD');
    expect(oss).toContain('VAT IE (23%) 2.50 USD');
    expect(oss).toContain('Total 13.37 USD');
    expect(oss).not.toContain('EUR');
    const exported = await text(americanInvoice.id);
    expect(exported).toContain('Total 10.87 USD');
    expect(exported).not.toContain('Reverse charge');
  });
});
