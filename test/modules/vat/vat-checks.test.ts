// VAT numbers checked, not believed (issue 26 item 1), on SQLite and on PostgreSQL + Redis when TEST_* are set, against
// the VIES stand-in (test/helpers/vies-server.ts): malformed numbers are a 422 naming vat_number on every road; VIES is
// asked through the outbox with the seller's number as requester; VIES down, slow, answering garbage or MS_UNAVAILABLE
// never blocks a checkout nor answers a 5xx (the sale is a consumer sale, the check retried); a late confirmation
// recalculates the unpaid invoice or credits the paid one's tax; a number VIES later calls invalid makes later sales
// consumer sales again; staff re-check and read the result, the client reads its own; roles and permissions hold.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REVERSE_CHARGE_MENTION } from '../../../src/lib/eu-vat.ts';
import { Browser, createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectError, expectInvalid } from '../../helpers/assertions.ts';
import { asClient, asStaff, inBrowser, makeProduct, signUp, staffWith } from '../../helpers/selling-fixtures.ts';
import { ViesStandIn } from '../../helpers/vies-server.ts';

describe('EU VAT numbers and VIES', () => {
  let t: TestApp;
  let plan: number;
  const vies = new ViesStandIn();
  /** Past every retry delay of the vat_check kind. */
  const later = (minutes: number) => new Date(Date.now() + minutes * 60_000);

  beforeAll(async () => {
    await vies.start();
    t = await createTestApp({ VIES_TIMEOUT_MS: '300' });
    plan = await makeProduct(t, { title: 'Pro plan' });
    const settings = await t.admin('system/settings_update', { company_name: 'Seller GmbH', company_country: 'DE', company_vat_number: 'DE 123 456 789', eu_vat: true, vies_url: vies.url });
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
  const status = async (id: number) => (await t.admin('client/vat_status', { id })).result;

  it('refuses malformed numbers with a 422 naming vat_number on every road, and stores good ones normalised', async () => {
    expectInvalid(await t.admin('client/create', { email: 'bad1@example.com', first_name: 'A', country: 'FR', vat_number: 'FR123' }), 'vat_number');
    expectInvalid(await t.admin('client/create', { email: 'bad2@example.com', first_name: 'A', country: 'DE', vat_number: 'DE12345678X' }), 'vat_number');
    const client = await t.createClient({ country: 'FR', company: 'Acheteur SA', vat_number: 'fr xx 123 456 789' });
    expect((await t.admin('client/get', { id: client.id })).result.vat_number).toBe('FRXX123456789');
    expectInvalid(await t.admin('client/update', { id: client.id, vat_number: 'FRXX12345678' }), 'vat_number');
    // A new country re-reads the number kept: a French number does not stay on a German address.
    expectInvalid(await t.admin('client/update', { id: client.id, country: 'DE' }), 'vat_number');
    expectInvalid(await asClient(t, client.token, 'profile/update', { vat_number: '12' }), 'vat_number');
    expect((await t.admin('client/get', { id: client.id })).result).toMatchObject({ country: 'FR', vat_number: 'FRXX123456789' });
    // The guest's own sign-up.
    const browser = new Browser();
    await t.call('/api/guest/cart/get', {}, { browser });
    const signup = await t.call(
      '/api/guest/client/create',
      { email: 'bad3@example.com', first_name: 'A', password: 'Str0ng-Passw0rd!', password_confirm: 'Str0ng-Passw0rd!', country: 'IT', vat_number: 'IT123' },
      { browser, csrf: true },
    );
    expectInvalid(signup, 'vat_number');
    // Outside the EU the number is kept as typed; blank clears it.
    const us = await t.createClient({ country: 'US', vat_number: '12-3456789' });
    expect((await t.admin('client/get', { id: us.id })).result.vat_number).toBe('12-3456789');
    expect((await status(us.id)).status).toBe('not_applicable');
    expect((await t.admin('client/update', { id: us.id, vat_number: '' })).result).toBe(true);
    expect(await status(us.id)).toMatchObject({ vat_number: null, status: 'none' });
  });

  it('checks a new number with VIES through the outbox, with the seller as requester; a valid one makes sales reverse-charged', async () => {
    vies.setValid('FRAB123456789', 'Acheteur SA', '1 Rue du Commerce\n75001 Paris');
    const client = await t.createClient({ country: 'FR', company: 'Acheteur SA', vat_number: 'FRAB123456789' });
    expect((await status(client.id)).status).toBe('pending');
    await t.services.outbox.runDue(new Date());
    const checked = await status(client.id);
    expect(checked).toMatchObject({ vat_number: 'FRAB123456789', status: 'valid', name: 'Acheteur SA', address: '1 Rue du Commerce 75001 Paris', last_error: null, attempts: 1 });
    expect(checked.consultation_number).toMatch(/^WAPI/);
    expect(vies.requests.at(-1)).toEqual({ countryCode: 'FR', vatNumber: 'AB123456789', requesterMemberStateCode: 'DE', requesterNumber: '123456789' });
    // The client sees its own status.
    expect((await asClient(t, client.token, 'profile/vat_status')).result).toMatchObject({ status: 'valid', consultation_number: checked.consultation_number });
    const invoice = await checkout(client.token);
    expect(invoice).toMatchObject({ tax_rule: 'reverse_charge', tax_rate: '0', tax: '0.00', total: '10.00', tax_name: 'Reverse charge', tax_note: REVERSE_CHARGE_MENTION });
    expect(invoice.items.map((item: { tax_rule: string }) => item.tax_rule)).toEqual(['reverse_charge']);
    expect(invoice.tax_evidence).toMatchObject({ seller_country: 'DE', billing_country: 'FR', place_of_supply: 'FR', vat_number: 'FRAB123456789', vat_status: 'valid', consultation_number: checked.consultation_number, conflict: false });
  });

  for (const mode of ['down', 'slow', 'garbage', 'MS_UNAVAILABLE', 'MS_MAX_CONCURRENT_REQ', 'SERVICE_UNAVAILABLE'] as const) {
    it(`VIES ${mode}: checkout goes on as a consumer sale (OSS), staff's re-check answers pending, and a later answer recalculates the unpaid invoice`, async () => {
      const number = `FR${String(mode.length).padStart(2, '1')}${String(Date.now()).slice(-9)}`;
      vies.setValid(number);
      vies.mode = mode;
      vies.slowMs = 1000;
      const client = await t.createClient({ country: 'FR', company: 'Acheteur SA', vat_number: number });
      await t.services.outbox.runDue(new Date());
      expect(await status(client.id)).toMatchObject({ status: 'pending', attempts: 1, last_error: expect.stringMatching(/VIES/) });
      const invoice = await checkout(client.token);
      expect(invoice).toMatchObject({ tax_rule: 'oss', tax_name: 'VAT FR', tax_rate: '20', tax: '2.00', total: '12.00', tax_note: null });
      expect(invoice.tax_evidence).toMatchObject({ vat_status: 'pending', vat_number: number, place_of_supply: 'FR' });
      const recheck = await t.admin('client/vat_check', { id: client.id });
      expect(recheck.status).toBe(200);
      expect(recheck.result).toMatchObject({ status: 'pending', attempts: 2, last_error: expect.stringMatching(/VIES/) });
      // VIES answers again: the retry (past its backoff) confirms the number and the unpaid invoice is recalculated.
      vies.mode = 'normal';
      await t.services.outbox.runDue(later(20));
      expect((await status(client.id)).status).toBe('valid');
      const recalculated = (await t.admin('invoice/get', { id: invoice.id })).result;
      expect(recalculated).toMatchObject({ status: 'unpaid', tax_rule: 'reverse_charge', tax: '0.00', total: '10.00', tax_note: REVERSE_CHARGE_MENTION });
      expect(recalculated.tax_evidence).toMatchObject({ vat_status: 'valid', corrected_at: expect.any(String), consultation_number: expect.stringMatching(/^WAPI/) });
      expect(recalculated.items[0].tax_rule).toBe('reverse_charge');
    });
  }

  it('a number confirmed after the invoice was paid gets a credit note for the tax, to the balance, once', async () => {
    vies.mode = 'MS_UNAVAILABLE';
    const client = await t.createClient({ country: 'FR', company: 'Acheteur SA', vat_number: 'FRCD123456789' });
    vies.setValid('FRCD123456789');
    const invoice = await checkout(client.token);
    expect(invoice).toMatchObject({ tax_rule: 'oss', tax: '2.00', total: '12.00' });
    expect((await t.admin('invoice/mark_as_paid', { id: invoice.id })).result).toBe(true);
    vies.mode = 'normal';
    expect((await t.admin('client/vat_check', { id: client.id })).result.status).toBe('valid');
    const paid = (await t.admin('invoice/get', { id: invoice.id })).result;
    // The paid document stays as issued; the note credits its tax.
    expect(paid).toMatchObject({ status: 'paid', tax_rule: 'oss', tax: '2.00', total: '12.00', credited: '2.00' });
    expect(paid.credit_notes).toHaveLength(1);
    const note = (await t.admin('invoice/credit_note_get', { id: paid.credit_notes[0].id })).result;
    expect(note).toMatchObject({ method: 'balance', subtotal: '0.00', tax: '2.00', total: '2.00', reason: expect.stringContaining('FRCD123456789') });
    expect((await asClient(t, client.token, 'client/balance_get_total')).result).toBe('2.00');
    // A second confirmation (staff re-check) changes nothing.
    expect((await t.admin('client/vat_check', { id: client.id })).result.status).toBe('valid');
    expect((await t.admin('invoice/get', { id: invoice.id })).result.credit_notes).toHaveLength(1);
  });

  it('concurrent confirmations (staff re-checks and the outbox at once) correct a paid sale once', async () => {
    vies.mode = 'down';
    const client = await t.createClient({ country: 'FR', company: 'Acheteur SA', vat_number: 'FRDD123456789' });
    vies.setValid('FRDD123456789');
    const unpaid = await checkout(client.token);
    const paid = await checkout(client.token);
    expect((await t.admin('invoice/mark_as_paid', { id: paid.id })).result).toBe(true);
    vies.mode = 'normal';
    const answers = await Promise.all([
      t.admin('client/vat_check', { id: client.id }),
      t.admin('client/vat_check', { id: client.id }),
      t.services.outbox.runDue(later(20)).then(() => null),
      t.admin('client/vat_check', { id: client.id }),
    ]);
    for (const answer of answers) if (answer !== null) expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect((await status(client.id)).status).toBe('valid');
    const credited = (await t.admin('invoice/get', { id: paid.id })).result;
    expect(credited.credit_notes).toHaveLength(1);
    expect(credited.credited).toBe('2.00');
    expect((await asClient(t, client.token, 'client/balance_get_total')).result).toBe('2.00');
    expect((await t.admin('invoice/get', { id: unpaid.id })).result).toMatchObject({ tax_rule: 'reverse_charge', total: '10.00' });
  });

  it('a number VIES now calls invalid is stored so, and later sales are consumer sales again', async () => {
    vies.setValid('FREF123456789');
    const client = await t.createClient({ country: 'FR', company: 'Acheteur SA', vat_number: 'FREF123456789' });
    await t.services.outbox.runDue(new Date());
    expect((await checkout(client.token)).tax_rule).toBe('reverse_charge');
    vies.setInvalid('FREF123456789');
    expect((await t.admin('client/vat_check', { id: client.id })).result).toMatchObject({ status: 'invalid', name: null });
    const next = await checkout(client.token);
    expect(next).toMatchObject({ tax_rule: 'oss', tax: '2.00', total: '12.00' });
    expect(next.tax_evidence.vat_status).toBe('invalid');
    // A new number starts a new check.
    vies.setValid('FRGH123456789');
    expect((await t.admin('client/update', { id: client.id, vat_number: 'FRGH123456789' })).result).toBe(true);
    expect((await status(client.id)).status).toBe('pending');
    await t.services.outbox.runDue(new Date());
    expect((await status(client.id)).status).toBe('valid');
    // The invoice issued while the old number was invalid is left as it was.
    expect((await t.admin('invoice/get', { id: next.id })).result.tax_rule).toBe('oss');
  });

  it('takes the IP country as evidence when a header is configured, and records a conflict with the billing country', async () => {
    expect((await t.admin('system/settings_update', { ip_country_header: 'CF-IPCountry' })).body.error).toBeNull();
    const client = await t.createClient({ country: 'IT' });
    expect((await asClient(t, client.token, 'cart/add_item', { id: plan, period: '1M' })).body.error).toBeNull();
    const done = await t.call('/api/client/cart/checkout', {}, { basic: ['client', client.token], headers: { 'CF-IPCountry': 'es' } });
    expect(done.body.error).toBeNull();
    const invoice = (await t.admin('invoice/get', { id: done.result.invoice_id })).result;
    expect(invoice).toMatchObject({ tax_rule: 'oss', tax_name: 'VAT IT', tax_rate: '22', tax: '2.20' });
    expect(invoice.tax_evidence).toMatchObject({ billing_country: 'IT', ip_country: 'ES', place_of_supply: 'IT', conflict: true, vat_status: 'none' });
    expect((await t.admin('system/settings_update', { ip_country_header: '' })).body.error).toBeNull();
  });

  it('refuses the wrong role, missing permissions, unknown clients and clients without an EU number', async () => {
    const client = await t.createClient({ country: 'FR' });
    expectError(await asClient(t, client.token, 'client/vat_check', { id: client.id }), 740, 404);
    const viewer = await staffWith(t, ['client.view']);
    expect((await asStaff(t, viewer, 'client/vat_status', { id: client.id })).result.status).toBe('none');
    expectError(await asStaff(t, viewer, 'client/vat_check', { id: client.id }), 403);
    const nobody = await staffWith(t, ['invoice.view']);
    expectError(await asStaff(t, nobody, 'client/vat_status', { id: client.id }), 403);
    expectError(await t.admin('client/vat_check', { id: 999_999 }), 404);
    expectError(await t.admin('client/vat_status', { id: 999_999 }), 404);
    expectInvalid(await t.admin('client/vat_check', {}), 'id');
    expectInvalid(await t.admin('client/vat_check', { id: 'one' }), 'id');
    expectError(await t.admin('client/vat_check', { id: client.id }), 409);
    const us = await t.createClient({ country: 'US', vat_number: 'EIN 12-3456789' });
    expectError(await t.admin('client/vat_check', { id: us.id }), 409);
    // A guest has no VAT status to read.
    expectError(await t.call('/api/guest/profile/vat_status', {}), 740, 404);
    const browser = (await signUp(t)).browser;
    expect((await inBrowser(t, browser, 'profile/vat_status')).result.status).toBe('none');
  });
});
