// The currency module's actions (issue 26, FOSSBilling's Currency module): create, get, get_list, update, the rate
// history, update_rates, set_default (rates restated), delete, the guest's pairs/get/format — and every failure path:
// missing and wrong-typed parameters, codes ISO 4217 lacks, bad rates, duplicates, the default or a currency in use,
// wrong role and missing permission, and two staff members at once. On SQLite and, with TEST_DATABASE_URL and
// TEST_REDIS_URL, PostgreSQL + Redis.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectError, expectInvalid } from '../../helpers/assertions.ts';
import { asClient, asStaff, staffWith } from '../../helpers/selling-fixtures.ts';

let t: TestApp;

beforeAll(async () => {
  t = await createTestApp();
}, 60_000);

afterAll(async () => {
  await t?.close();
});

beforeEach(async () => {
  // Each test starts with the seeded default (USD) alone, and no rate history but its own.
  await t.services.currencies.setDefault('USD', null);
  await t.services.db.deleteFrom('currencies').where('is_default', '=', 0).execute();
  await t.services.db.deleteFrom('currency_rates').where('code', '!=', 'USD').execute();
});

const guest = (action: string, params: Record<string, unknown> = {}) => t.call(`/api/guest/currency/${action}`, params);

describe('create, get, get_list, update', () => {
  it('adds a currency with its rate and shows it with FOSSBilling’s fields', async () => {
    const created = await t.admin('currency/create', { code: 'eur', conversion_rate: '0.920000' });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.result).toBe('EUR');
    const got = await t.admin('currency/get', { code: 'EUR' });
    expect(got.result).toMatchObject({
      code: 'EUR',
      name: 'Euro',
      symbol: '€',
      conversion_rate: '0.92',
      is_rate_manual: false,
      format_pattern: null,
      fraction_digits: null,
      default: false,
      minor_unit: 2,
      price_rounding: null,
    });
    await t.admin('currency/create', { code: 'JPY', conversion_rate: 151.37 });
    await t.admin('currency/create', { code: 'KWD', conversion_rate: '0.307', price_rounding: { step: '1', ending: '0.990' } });
    expect((await t.admin('currency/get', { code: 'kwd' })).result).toMatchObject({ minor_unit: 3, price_rounding: { step: '1.000', ending: '0.990' } });

    const list = await t.admin('currency/get_list', { per_page: 2 });
    expect(list.result).toMatchObject({ page: 1, per_page: 2, pages: 2, total: 4 });
    expect(list.result.list.map((c: { code: string }) => c.code)).toEqual(['EUR', 'JPY']);
    const second = await t.admin('currency/get_list', { per_page: 2, page: 2 });
    expect(second.result.list.map((c: { code: string }) => c.code)).toEqual(['KWD', 'USD']);
    const searched = await t.admin('currency/get_list', { search: 'u' });
    expect(searched.result.list.map((c: { code: string }) => c.code)).toEqual(['EUR', 'USD']);
    expect((await t.admin('currency/get_list', { search: '%' })).result.total).toBe(0);
  });

  it('update changes the rate (kept in the history with its moment), display and rounding; absent fields stay', async () => {
    await t.admin('currency/create', { code: 'GBP', conversion_rate: '0.79', format_pattern: '{amount} GBP' });
    const updated = await t.admin('currency/update', { code: 'GBP', conversion_rate: '0.8', fraction_digits: 3, is_rate_manual: true });
    expect(updated.result).toBe(true);
    const got = (await t.admin('currency/get', { code: 'GBP' })).result;
    expect(got).toMatchObject({ conversion_rate: '0.8', fraction_digits: 3, is_rate_manual: true, format_pattern: '{amount} GBP' });
    await t.admin('currency/update', { code: 'GBP', format_pattern: '', fraction_digits: '', price_rounding: { step: '0.05', ending: 0 } });
    expect((await t.admin('currency/get', { code: 'GBP' })).result).toMatchObject({ format_pattern: null, fraction_digits: null, price_rounding: { step: '0.05', ending: '0.00' }, conversion_rate: '0.8' });
    await t.admin('currency/update', { code: 'GBP', price_rounding: '' });
    expect((await t.admin('currency/get', { code: 'GBP' })).result.price_rounding).toBeNull();

    const history = await t.admin('currency/rate_get_list', { code: 'GBP' });
    expect(history.result.total).toBe(2);
    expect(history.result.list.map((r: { rate: string }) => r.rate)).toEqual(['0.8', '0.79']);
    expect(history.result.list[0]).toMatchObject({ code: 'GBP', base_code: 'USD', staff_id: expect.any(Number), created_at: expect.any(String) });
    // The rate in force at a moment, for an invoice that records the rate it used.
    expect((await t.services.currencies.rateAt('GBP'))?.rate).toBe('0.8');
    expect(await t.services.currencies.rateAt('GBP', '2000-01-01T00:00:00Z')).toBeNull();
  });

  it('update_rates sets several rates in one go, all or none; without rates it changes nothing', async () => {
    await t.admin('currency/create', { code: 'EUR', conversion_rate: '0.9' });
    await t.admin('currency/create', { code: 'CHF', conversion_rate: '0.88' });
    expect((await t.admin('currency/update_rates', { rates: { EUR: '0.93', chf: 0.87 } })).result).toBe(true);
    expect((await t.admin('currency/get', { code: 'EUR' })).result.conversion_rate).toBe('0.93');
    expect((await t.admin('currency/get', { code: 'CHF' })).result.conversion_rate).toBe('0.87');
    expectError(await t.admin('currency/update_rates', { rates: { EUR: '0.95', GBP: '0.8' } }), 404);
    expectInvalid(await t.admin('currency/update_rates', { rates: { EUR: '0.95', CHF: '0' } }), 'rates.CHF');
    expectInvalid(await t.admin('currency/update_rates', { rates: { USD: '2' } }), 'rates.USD');
    expect((await t.admin('currency/get', { code: 'EUR' })).result.conversion_rate).toBe('0.93');
    expect((await t.admin('currency/update_rates', {})).result).toBe(true);
    expect((await t.admin('currency/is_cron_enabled')).result).toBe(false);
  });

  it('set_default restates every rate against the new default, and the old default becomes an ordinary currency', async () => {
    await t.admin('currency/create', { code: 'EUR', conversion_rate: '0.8' });
    await t.admin('currency/create', { code: 'JPY', conversion_rate: '150' });
    expect((await t.admin('currency/set_default', { code: 'EUR' })).result).toBe(true);
    const eur = (await t.admin('currency/get_default')).result;
    expect(eur).toMatchObject({ code: 'EUR', default: true, conversion_rate: '1' });
    expect((await t.admin('currency/get', { code: 'USD' })).result).toMatchObject({ default: false, conversion_rate: '1.25' });
    expect((await t.admin('currency/get', { code: 'JPY' })).result.conversion_rate).toBe('187.5');
    expect((await t.admin('currency/rate_get_list', { code: 'JPY' })).result.list[0]).toMatchObject({ rate: '187.5', base_code: 'EUR' });
    expect((await t.admin('currency/set_default', { code: 'EUR' })).result).toBe(true); // already: nothing changes
    expect((await t.admin('currency/set_default', { code: 'usd' })).result).toBe(true);
    expect((await t.admin('currency/get', { code: 'JPY' })).result.conversion_rate).toBe('150');
    expect((await t.admin('currency/get', { code: 'EUR' })).result.conversion_rate).toBe('0.8');
  });
});

describe('bad input', () => {
  it('create: a missing or ill-formed code, one ISO 4217 lacks, a duplicate, a bad rate or setting', async () => {
    expectInvalid(await t.admin('currency/create', { conversion_rate: '1' }), 'code');
    expectInvalid(await t.admin('currency/create', { code: 12, conversion_rate: '1' }), 'code');
    expectInvalid(await t.admin('currency/create', { code: 'EURO', conversion_rate: '1' }), 'code');
    expectInvalid(await t.admin('currency/create', { code: 'E1R', conversion_rate: '1' }), 'code');
    for (const code of ['XXX', 'XTS', 'ABC', 'XAU']) expectInvalid(await t.admin('currency/create', { code, conversion_rate: '1' }), 'code');
    expectInvalid(await t.admin('currency/create', { code: 'EUR' }), 'conversion_rate');
    for (const rate of ['0', 0, '-1', -0.5, 'abc', '', '1e3', true, '12345678901'])
      expectInvalid(await t.admin('currency/create', { code: 'EUR', conversion_rate: rate }), 'conversion_rate');
    expectInvalid(await t.admin('currency/create', { code: 'EUR', conversion_rate: '1', fraction_digits: 7 }), 'fraction_digits');
    expectInvalid(await t.admin('currency/create', { code: 'EUR', conversion_rate: '1', format_pattern: 'EUR' }), 'format_pattern');
    expectInvalid(await t.admin('currency/create', { code: 'EUR', conversion_rate: '1', format_pattern: '{amount} {amount}' }), 'format_pattern');
    expectInvalid(await t.admin('currency/create', { code: 'EUR', conversion_rate: '1', format_pattern: '{amount}\n€' }), 'format_pattern');
    expectInvalid(await t.admin('currency/create', { code: 'EUR', conversion_rate: '1', price_rounding: { step: '1', ending: '1' } }), 'price_rounding.ending');
    expectInvalid(await t.admin('currency/create', { code: 'EUR', conversion_rate: '1', price_rounding: { step: '0', ending: '0' } }), 'price_rounding.step');
    expectInvalid(await t.admin('currency/create', { code: 'JPY', conversion_rate: '1', price_rounding: { step: '100', ending: '0.5' } }), 'price_rounding.ending');
    // Wrong types, as the schema sees them.
    expectInvalid(await t.admin('currency/create', { code: 'EUR', conversion_rate: { value: 1 } }), 'conversion_rate');
    expectInvalid(await t.admin('currency/create', { code: ['EUR'], conversion_rate: '1' }), 'code');
    expectInvalid(await t.admin('currency/create', { code: 'EUR', conversion_rate: '1', is_rate_manual: 'perhaps' }), 'is_rate_manual');
    expectInvalid(await t.admin('currency/create', { code: 'EUR', conversion_rate: '1', price_rounding: 'x.99' }), 'price_rounding');
    expectInvalid(await t.admin('currency/update_rates', { rates: 'EUR=0.9' }), 'rates');
    expectInvalid(await t.admin('currency/update_rates', { rates: { EUR: { rate: 1 } } }), 'rates.EUR');
    expectInvalid(await t.admin('currency/get_list', { page: 0 }), 'page');
    expectInvalid(await guest('format', { price: { amount: 1 } }), 'price');
    expect((await t.admin('currency/get_list')).result.total).toBe(1); // nothing was added

    await t.admin('currency/create', { code: 'EUR', conversion_rate: '0.9' });
    expectError(await t.admin('currency/create', { code: 'EUR', conversion_rate: '0.9' }), 409);
    expectError(await t.admin('currency/create', { code: 'eur', conversion_rate: '0.9' }), 409);
    expectError(await t.admin('currency/create', { code: 'USD', conversion_rate: '1' }), 409);
  });

  it('update, get, set_default, rate_get_list of a currency that is not there → 404; the default keeps rate 1', async () => {
    for (const action of ['get', 'update', 'delete', 'set_default', 'rate_get_list']) {
      expectError(await t.admin(`currency/${action}`, { code: 'EUR' }), 404);
      expectInvalid(await t.admin(`currency/${action}`, {}), 'code');
      expectInvalid(await t.admin(`currency/${action}`, { code: 'E' }), 'code');
    }
    expectError(await guest('get', { code: 'EUR' }), 404);
    expectInvalid(await t.admin('currency/update', { code: 'USD', conversion_rate: '2' }), 'conversion_rate');
    expectInvalid(await t.admin('currency/update', { code: 'USD', is_rate_manual: true }), 'is_rate_manual');
    expect((await t.admin('currency/update', { code: 'USD', conversion_rate: '1.000' })).result).toBe(true);
    await t.admin('currency/create', { code: 'EUR', conversion_rate: '0.9' });
    expectInvalid(await t.admin('currency/update', { code: 'EUR', conversion_rate: '-0.9' }), 'conversion_rate');
    expectInvalid(await t.admin('currency/update', { code: 'EUR', conversion_rate: 'NaN' }), 'conversion_rate');
    expectInvalid(await t.admin('currency/update', { code: 'EUR', fraction_digits: -1 }), 'fraction_digits');
    expect((await t.admin('currency/get', { code: 'EUR' })).result.conversion_rate).toBe('0.9');
  });

  it('delete refuses the default currency and one in use by a client, an invoice or a credit balance', async () => {
    expectError(await t.admin('currency/delete', { code: 'USD' }), 409);
    await t.admin('currency/create', { code: 'EUR', conversion_rate: '0.9' });
    const client = await t.createClient();
    await t.services.db.updateTable('clients').set({ currency: 'EUR' }).where('id', '=', client.id).execute();
    const inUse = await t.admin('currency/delete', { code: 'EUR' });
    expectError(inUse, 409);
    expect(inUse.body.error?.message).toContain('clients');
    await t.services.db.updateTable('clients').set({ currency: 'USD' }).where('id', '=', client.id).execute();

    await t.services.db
      .insertInto('credit_entries')
      .values({ client_id: client.id, currency: 'EUR', kind: 'grant', amount: 100, expires_at: null, idempotency_key: `currency-test-${Date.now()}`, invoice_id: null, staff_id: null, note: null, reverses_id: null, created_at: new Date().toISOString() })
      .execute();
    expectError(await t.admin('currency/delete', { code: 'EUR' }), 409);
    await t.services.db.deleteFrom('credit_entries').where('currency', '=', 'EUR').execute();

    expect((await t.admin('currency/delete', { code: 'eur' })).result).toBe(true);
    expectError(await t.admin('currency/get', { code: 'EUR' }), 404);
    // Its rates stay: an invoice may still name one.
    expect((await t.admin('currency/rate_get_list', { code: 'EUR' })).result.total).toBe(1);
  });
});

describe('roles and permissions', () => {
  it('a client gets 740 (no client actions) and 205 with its token on admin; staff need the currency permissions', async () => {
    const client = await t.createClient();
    expectError(await asClient(t, client.token, 'currency/get_list'), 740, 404);
    expectError(await t.call('/api/admin/currency/get_list', {}, { basic: ['admin', client.token] }), 205, 401);
    expectError(await t.call('/api/admin/currency/get_default'), 201, 401);

    const nobody = await staffWith(t, ['email.view']);
    for (const [action, params] of [
      ['get_list', {}],
      ['get_pairs', {}],
      ['get', { code: 'USD' }],
      ['get_default', {}],
      ['create', { code: 'EUR', conversion_rate: '1' }],
      ['update', { code: 'USD' }],
      ['update_rates', {}],
      ['is_cron_enabled', {}],
      ['set_default', { code: 'USD' }],
      ['delete', { code: 'USD' }],
      ['rate_get_list', { code: 'USD' }],
    ] as const) {
      expectError(await asStaff(t, nobody, `currency/${action}`, params), 403);
    }
    const viewer = await staffWith(t, ['currency.view']);
    expect((await asStaff(t, viewer, 'currency/get_default')).result.code).toBe('USD');
    expectError(await asStaff(t, viewer, 'currency/create', { code: 'EUR', conversion_rate: '1' }), 403);
    const creator = await staffWith(t, ['currency.create']);
    expect((await asStaff(t, creator, 'currency/create', { code: 'EUR', conversion_rate: '1' })).result).toBe('EUR');
    expectError(await asStaff(t, creator, 'currency/delete', { code: 'EUR' }), 403);
  });
});

describe('guest actions', () => {
  it('get_pairs lists the instance’s currencies; get answers one, or the default', async () => {
    await t.admin('currency/create', { code: 'EUR', conversion_rate: '0.9' });
    expect((await guest('get_pairs')).result).toEqual({ EUR: 'Euro', USD: 'US Dollar' });
    expect((await guest('get')).result).toMatchObject({ code: 'USD', default: true });
    expect((await guest('get', { code: 'eur' })).result).toMatchObject({ code: 'EUR', default: false });
    expect((await t.call('/api/guest/currency/get', { code: 'EUR' }, { method: 'GET' })).result.code).toBe('EUR');
  });

  it('format converts from the default as prices are (rate, half up, price rounding) and formats exactly', async () => {
    await t.admin('currency/create', { code: 'EUR', conversion_rate: '0.92' });
    await t.admin('currency/create', { code: 'JPY', conversion_rate: '151.37', price_rounding: { step: 100, ending: 80 } });
    await t.admin('currency/create', { code: 'KWD', conversion_rate: '0.307', format_pattern: 'KD {amount}' });
    expect((await guest('format', { price: '1234.5' })).result).toBe('$1,234.50');
    expect((await guest('format', { price: '10', code: 'EUR' })).result).toBe('€9.20');
    expect((await guest('format', { price: '10', code: 'EUR', convert: false })).result).toBe('€10.00');
    expect((await guest('format', { price: '19.99', code: 'JPY' })).result).toBe('¥3,080'); // 3,026 → …80
    expect((await guest('format', { price: '10', code: 'KWD' })).result).toBe('KD 3.070');
    expect((await guest('format', { price: '10', code: 'KWD', without_currency: true })).result).toBe('3.070');
    expect((await guest('format', { price: '-10', code: 'EUR' })).result).toBe('-€9.20');
    expect((await guest('format', { code: 'EUR' })).result).toBe('€0.00');
    expect((await t.call('/api/guest/currency/format', { price: '10', code: 'EUR', convert: '0' }, { method: 'GET' })).result).toBe('€10.00');
    await t.admin('currency/update', { code: 'EUR', fraction_digits: 0 });
    expect((await guest('format', { price: '10', code: 'EUR' })).result).toBe('€9');
    expectInvalid(await guest('format', { price: 'ten' }), 'price');
    expectInvalid(await guest('format', { price: '1.001' }), 'price');
    expectInvalid(await guest('format', { price: '10', code: 'EUR', convert: 'maybe' }), 'convert');
    expectError(await guest('format', { price: '10', code: 'GBP' }), 404);
  });
});

describe('two staff members at once', () => {
  it('the same currency created five times at once: one is added, four get 409', async () => {
    const replies = await Promise.all(Array.from({ length: 5 }, () => t.admin('currency/create', { code: 'SEK', conversion_rate: '10.5' })));
    expect(replies.filter((r) => r.status === 200)).toHaveLength(1);
    for (const reply of replies.filter((r) => r.status !== 200)) expectError(reply, 409);
    expect((await t.admin('currency/rate_get_list', { code: 'SEK' })).result.total).toBe(1);
  });

  it('two set_default at once: both succeed one after the other, one default remains, cross rates hold', async () => {
    await t.admin('currency/create', { code: 'EUR', conversion_rate: '0.8' });
    await t.admin('currency/create', { code: 'GBP', conversion_rate: '0.5' });
    const replies = await Promise.all([t.admin('currency/set_default', { code: 'EUR' }), t.admin('currency/set_default', { code: 'GBP' })]);
    for (const reply of replies) expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    const all = (await t.admin('currency/get_list')).result.list as Array<{ code: string; default: boolean; conversion_rate: string }>;
    expect(all.filter((c) => c.default)).toHaveLength(1);
    const rate = (code: string): number => Number(all.find((c) => c.code === code)!.conversion_rate);
    // Whichever ran last, GBP per EUR is still 0.5 / 0.8.
    expect(rate('GBP') / rate('EUR')).toBeCloseTo(0.625, 9);
  });

  it('a delete waits for a transaction that has started using the currency, then refuses it', async () => {
    await t.admin('currency/create', { code: 'EUR', conversion_rate: '0.9' });
    const client = await t.createClient();
    const { inTransaction } = await import('../../../src/platform/transaction.ts');
    let deleting: Promise<Awaited<ReturnType<TestApp['admin']>>> | undefined;
    await inTransaction(t.services.db, async (trx) => {
      expect((await t.services.currencies.useCurrency(trx, 'EUR')).code).toBe('EUR');
      deleting = t.admin('currency/delete', { code: 'EUR' });
      await new Promise((resolve) => setTimeout(resolve, 100));
      await trx.updateTable('clients').set({ currency: 'EUR' }).where('id', '=', client.id).execute();
    });
    expectError(await deleting!, 409);
    await t.services.db.updateTable('clients').set({ currency: 'USD' }).where('id', '=', client.id).execute();
    expect((await t.admin('currency/delete', { code: 'EUR' })).result).toBe(true);
    // A use after the delete finds no currency.
    await expect(t.services.currencies.useCurrency(t.services.db, 'EUR')).rejects.toMatchObject({ code: 404 });
  });
});
