// FOSSBilling's own E2E tests for the Currency module (src/modules/Currency/tests/E2E/ApiAdminTest.php), asked the way
// its ApiClient asks: POST with a form body (http_build_query), Basic "admin:<token>". And the default currency's seed:
// CURRENCY at the first start, untouched by later starts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../helpers/app.ts';

let t: TestApp;

beforeAll(async () => {
  t = await createTestApp();
}, 60_000);

afterAll(async () => {
  await t?.close();
});

/** ApiClient::request($endpoint, $payload): a form POST with Basic credentials; wasSuccessful() = no error. */
async function request(endpoint: string, payload: Record<string, string> = {}) {
  const reply = await t.call(`/api/${endpoint}`, {}, { basic: ['admin', t.adminToken], raw: { body: new URLSearchParams(payload).toString(), contentType: 'application/x-www-form-urlencoded' } });
  return { wasSuccessful: reply.body.error === null, result: reply.result };
}

describe('FOSSBilling E2E: Currency ApiAdminTest', () => {
  it('gets currency pairs', async () => {
    const reply = await request('admin/currency/get_pairs');
    expect(reply.wasSuccessful).toBe(true);
    const list = reply.result as Record<string, string>;
    for (const code of ['USD', 'EUR', 'GBP', 'JPY', 'CHF', 'AUD', 'CAD', 'NZD', 'INR', 'HKD']) expect(list).toHaveProperty(code);
    for (const code of ['XXX', 'XTS']) expect(list).not.toHaveProperty(code);
    expect(list.USD).toMatch(/^USD \(.*\)$/);
  });

  it('currency defaults', async () => {
    const reply = await request('admin/currency/get_default');
    expect(reply.wasSuccessful).toBe(true);
    const defaults = reply.result as Record<string, unknown>;
    expect(defaults.code).toEqual('USD');
    expect(defaults.name).toEqual('US Dollar');
    expect(defaults.symbol).toEqual('$');
    expect(defaults).toHaveProperty('conversion_rate');
    expect(defaults.default).toBe(true);
  });

  it('takes FOSSBilling’s form parameters for create and update', async () => {
    expect((await request('admin/currency/create', { code: 'EUR', conversion_rate: '0.92', is_rate_manual: '1' })).result).toBe('EUR');
    expect((await request('admin/currency/update', { code: 'EUR', conversion_rate: '0.93', fraction_digits: '', format_pattern: '{amount} €', 'price_rounding[step]': '1', 'price_rounding[ending]': '0.99' })).result).toBe(true);
    expect((await request('admin/currency/get', { code: 'EUR' })).result).toMatchObject({ conversion_rate: '0.93', is_rate_manual: true, format_pattern: '{amount} €', price_rounding: { step: '1.00', ending: '0.99' } });
    expect((await request('admin/currency/update_rates', { 'rates[EUR]': '0.94' })).result).toBe(true);
    expect((await request('admin/currency/delete', { code: 'EUR' })).result).toBe(true);
  });
});

describe('the default currency’s seed', () => {
  it('a new instance starts with CURRENCY as its default; a later start with another CURRENCY changes nothing', async () => {
    // A fresh database (no template): migrated and seeded by this start.
    const euro = await createTestApp({ DATABASE_URL: 'sqlite::memory:', CURRENCY: 'eur' });
    try {
      expect(await euro.services.currencies.getDefault()).toMatchObject({ code: 'EUR', default: true, conversion_rate: '1', name: 'Euro' });
      expect((await euro.services.currencies.rates('EUR', {})).list).toEqual([expect.objectContaining({ rate: '1', base_code: 'EUR', staff_id: null })]);
      await euro.services.currencies.seedDefault('JPY');
      expect((await euro.services.currencies.getDefault()).code).toBe('EUR');
      expect((await euro.services.currencies.list({})).total).toBe(1);
    } finally {
      await euro.close();
    }
  });

  it('a CURRENCY ISO 4217 lacks (an old setting) still becomes the default, named by its code', async () => {
    const db = t.services.db;
    // On this app's own database: without its default, the seed makes the configured code the default again.
    await db.updateTable('currencies').set({ is_default: 0 }).where('code', '=', 'USD').execute();
    await t.services.currencies.seedDefault('BGN');
    expect(await t.services.currencies.getDefault()).toMatchObject({ code: 'BGN', name: 'BGN', symbol: 'BGN', minor_unit: 2, default: true });
    await db.deleteFrom('currencies').where('code', '=', 'BGN').execute();
    await db.updateTable('currencies').set({ is_default: 1 }).where('code', '=', 'USD').execute();
  });
});
