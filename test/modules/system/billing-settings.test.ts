// CONTRACT §8 settings: staff read and change them (system.manage), the environment gives the defaults, secrets are
// stored sealed and never returned; the company, country and phone-code lists; client country and phone checks.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectError, expectInvalid } from '../../helpers/assertions.ts';
import { asClient, asStaff, staffWith } from '../../helpers/selling-fixtures.ts';

describe('settings', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ COMPANY_NAME: 'Env Corp', STRIPE_SECRET_KEY: 'sk_test_from_env', DUNNING_RETRY_DAYS: '2,4' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('takes defaults from the environment and reports secrets only as set or not', async () => {
    const reply = await t.admin('system/settings_get');
    expect(reply.status).toBe(200);
    expect(reply.result).toMatchObject({
      company_name: 'Env Corp',
      invoice_prefix: 'INV-',
      invoice_next_number: 1,
      require_email_verification: false,
      auto_pay_default: true,
      dunning_retry_days: [2, 4],
      invoice_reminder_days: [-3, -1, 1, 3, 7],
      stripe_secret_key_set: true,
      stripe_webhook_secret_set: false,
      smtp_password_set: false,
    });
    expect(JSON.stringify(reply.body)).not.toContain('sk_test_from_env');
    expect(reply.result).not.toHaveProperty('stripe_secret_key');
    expect(await t.services.settings.secret('stripe_secret_key')).toBe('sk_test_from_env');
    expect(await t.services.settings.get('dunning_retry_days')).toEqual([2, 4]);
  });

  it('saves settings, seals secrets at rest, and serves them to the services at once', async () => {
    expect(await t.services.settings.get('company_name')).toBe('Env Corp');
    const update = await t.admin('system/settings_update', {
      company_name: 'Acme API Ltd',
      company_email: 'billing@acme.example',
      company_address_1: '1 Road',
      company_city: 'Berlin',
      company_postcode: '10115',
      company_country: 'de',
      company_vat_number: 'DE123456789',
      stripe_webhook_secret: 'whsec_supersecret0123456789',
      require_email_verification: 'true',
      dunning_retry_days: '1,3,5',
      unknown_setting: 'ignored',
    });
    expect(update.body).toEqual({ result: true, error: null });
    expect(await t.services.settings.get('company_name')).toBe('Acme API Ltd');
    expect(await t.services.settings.get('require_email_verification')).toBe(true);
    expect(await t.services.settings.secret('stripe_webhook_secret')).toBe('whsec_supersecret0123456789');
    const stored = await t.services.db.selectFrom('settings').selectAll().where('name', '=', 'stripe_webhook_secret').executeTakeFirstOrThrow();
    expect(stored.value).not.toContain('supersecret');
    const read = await t.admin('system/settings_get');
    expect(read.result).toMatchObject({ company_country: 'DE', stripe_webhook_secret_set: true, require_email_verification: true });
    expect(JSON.stringify(read.body)).not.toContain('supersecret');
    // A secret set to "" is cleared.
    await t.admin('system/settings_update', { stripe_webhook_secret: '' });
    expect((await t.admin('system/settings_get')).result.stripe_webhook_secret_set).toBe(false);
    expect(await t.services.settings.secret('stripe_webhook_secret')).toBeNull();

    const company = await t.call('/api/guest/system/company');
    expect(company.result).toEqual({
      name: 'Acme API Ltd',
      email: 'billing@acme.example',
      address_1: '1 Road',
      address_2: null,
      address_3: null,
      city: 'Berlin',
      postcode: '10115',
      country: 'DE',
      vat_number: 'DE123456789',
      logo_url: null,
      public_url: t.services.config.publicUrl,
      show_staff_login_link: false,
    });
  });

  it('refuses bad values with a 422 naming the setting, saving none of the batch', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ company_country: 'XX' }, 'company_country'],
      [{ company_country: 'Germany' }, 'company_country'],
      [{ company_email: 'not-an-email' }, 'company_email'],
      [{ company_logo_url: 'javascript:alert(1)' }, 'company_logo_url'],
      [{ invoice_prefix: 'INV 2026 with spaces' }, 'invoice_prefix'],
      [{ invoice_next_number: 0 }, 'invoice_next_number'],
      [{ invoice_next_number: 'ten' }, 'invoice_next_number'],
      [{ dunning_retry_days: '5,3' }, 'dunning_retry_days'],
      [{ dunning_retry_days: '0' }, 'dunning_retry_days'],
      [{ dunning_retry_days: 'soon' }, 'dunning_retry_days'],
      [{ invoice_reminder_days: '1,1' }, 'invoice_reminder_days'],
      [{ require_email_verification: 'maybe' }, 'require_email_verification'],
      [{ company_name: 'x'.repeat(256) }, 'company_name'],
      [{ company_name: 42 }, 'company_name'],
    ];
    for (const [params, name] of cases) {
      expectInvalid(await t.admin('system/settings_update', { company_city: 'Changed', ...params }), name);
    }
    expect((await t.call('/api/guest/system/company')).result.city).toBe('Berlin');
  });

  it('shows the payment_instructions setting with the manual gateway at once', async () => {
    const before = (await t.call('/api/guest/invoice/gateways')).result as Array<{ code: string; instructions: string }>;
    expect(before.find((gateway) => gateway.code === 'custom')?.instructions).toContain('bank transfer');
    await t.admin('system/settings_update', { payment_instructions: 'IBAN DE00 1234, quote the invoice number' });
    const after = (await t.call('/api/guest/invoice/gateways')).result as Array<{ code: string; instructions: string }>;
    expect(after.find((gateway) => gateway.code === 'custom')?.instructions).toBe('IBAN DE00 1234, quote the invoice number');
  });

  it('moves the next invoice number forward only', async () => {
    expect((await t.admin('system/settings_update', { invoice_next_number: 100 })).result).toBe(true);
    expect((await t.admin('system/settings_get')).result.invoice_next_number).toBe(100);
    expectInvalid(await t.admin('system/settings_update', { invoice_next_number: 99 }), 'invoice_next_number');
    expect((await t.admin('system/settings_update', { invoice_next_number: '150' })).result).toBe(true);
    expect((await t.admin('system/settings_get')).result.invoice_next_number).toBe(150);
  });

  it('needs system.manage, and staff or nothing for the admin actions', async () => {
    const without = await staffWith(t, ['client.manage']);
    const holder = await staffWith(t, ['system.manage']);
    expectError(await asStaff(t, without, 'system/settings_get'), 403);
    expectError(await asStaff(t, without, 'system/settings_update', { company_name: 'X' }), 403);
    expect((await asStaff(t, holder, 'system/settings_get')).status).toBe(200);
    expectError(await t.call('/api/admin/system/settings_get'), 201, 401);
    const client = await t.createClient();
    expectError(await asClient(t, client.token, 'system/settings_get'), 740, 404);
    expect((await t.call('/api/admin/system/settings_get', {}, { basic: ['client', client.token] })).status).toBe(401);
  });

  it('lists countries and phone codes from the data packages', async () => {
    const countries = (await t.call('/api/guest/system/countries')).result as Record<string, string>;
    expect(countries.DE).toBe('Germany');
    expect(countries.US).toMatch(/United States/);
    expect(Object.keys(countries).length).toBeGreaterThan(240);
    expect(Object.keys(countries).every((code) => /^[A-Z]{2}$/.test(code))).toBe(true);
    const codes = (await t.call('/api/guest/system/phone_codes')).result as Record<string, string>;
    expect(codes).toMatchObject({ DE: '49', US: '1', CH: '41', GB: '44' });
  });
});

describe('client country, phone, VAT number and tax exemption', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('accepts ISO alpha-2 countries and valid phone numbers on every create and update path', async () => {
    const created = await t.admin('client/create', { email: 'de@example.com', first_name: 'D', country: 'de', phone: '030 123456', vat_number: 'DE111111111' });
    expect(created.status).toBe(200);
    expect((await t.admin('client/get', { id: created.result })).result).toMatchObject({ country: 'DE', phone: '030 123456', vat_number: 'DE111111111', tax_exempt: false });
    expect((await t.admin('client/update', { id: created.result, tax_exempt: true, phone: '+41 44 668 18 00' })).result).toBe(true);
    expect((await t.admin('client/get', { id: created.result })).result).toMatchObject({ tax_exempt: true, phone: '+41 44 668 18 00' });
    const password = 'Signup-Passw0rd';
    const signup = await t.call('/api/guest/client/create', { email: 'us@example.com', first_name: 'U', password, password_confirm: password, country: 'US', phone: '+1 212 555 0100' });
    expect(signup.status).toBe(200);
  });

  it('refuses unknown countries and impossible phones with 422, creating or changing nothing', async () => {
    const password = 'Signup-Passw0rd';
    expectInvalid(await t.admin('client/create', { email: 'x1@example.com', first_name: 'X', country: 'XX' }), 'country');
    expectInvalid(await t.admin('client/create', { email: 'x2@example.com', first_name: 'X', country: 'Germany' }), 'country');
    expectInvalid(await t.admin('client/create', { email: 'x3@example.com', first_name: 'X', phone: '12' }), 'phone');
    expectInvalid(await t.admin('client/create', { email: 'x4@example.com', first_name: 'X', country: 'DE', phone: '+1 555 0100' }), 'phone');
    expectInvalid(
      await t.call('/api/guest/client/create', { email: 'x5@example.com', first_name: 'X', password, password_confirm: password, country: 'ZZ' }),
      'country',
    );
    expect((await t.admin('client/get_list', { search: 'x' })).result.list.filter((c: { email: string }) => c.email.startsWith('x'))).toEqual([]);
    const client = await t.createClient({ country: 'GB' });
    expectInvalid(await asClient(t, client.token, 'profile/update', { country: 'UK' }), 'country');
    // A national number is read in the client's stored country.
    expect((await asClient(t, client.token, 'profile/update', { phone: '020 7946 0018' })).result).toBe(true);
    expectInvalid(await asClient(t, client.token, 'profile/update', { phone: 'call me' }), 'phone');
    expectInvalid(await t.admin('client/update', { id: client.id, tax_exempt: 'perhaps' }), 'tax_exempt');
    // A client cannot make itself tax-exempt: the parameter is not the client's.
    await asClient(t, client.token, 'profile/update', { tax_exempt: true });
    expect((await t.admin('client/get', { id: client.id })).result).toMatchObject({ country: 'GB', tax_exempt: false, phone: '020 7946 0018' });
    expectError(await t.admin('client/update', { id: 999_999, tax_exempt: true }), 404);
  });
});
