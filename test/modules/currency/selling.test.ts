// Selling in several currencies (issue 26 items 6–7): the cart's currency (guest/cart/set_currency, get_currency), prices
// per currency (own, or converted and rounded to x.99), the client's currency fixed by the first order, invoices with
// their stored rate, Stripe amounts in minor units (JPY none, KWD three), overage at the close, a top-up and credit
// notes in the client's currency, exports in the default currency at the stored rates — and the failure paths: missing,
// wrong-typed and unknown codes, a currency change after an order, deleting a currency in use, a delete racing a
// checkout. On SQLite and, with TEST_DATABASE_URL and TEST_REDIS_URL, PostgreSQL + Redis.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { Browser, type TestApp } from '../../helpers/app.ts';
import { expectError, expectInvalid } from '../../helpers/assertions.ts';
import { asClient, asStaff, staffWith } from '../../helpers/selling-fixtures.ts';
import { payByCard, stripeStand, type StripeStand } from '../../helpers/stripe-fixtures.ts';
import { receivedAmounts } from '../../helpers/stripe-server.ts';

let stand: StripeStand;
let t: TestApp;
/** USD 10.00 a month, no own prices. */
let plain: number;
/** USD 20.00 a month, with an own EUR price of 8.50 for 1M. */
let priced: number;

const MONTH = (price: string) => ({ type: 'recurrent', recurrent: { '1M': { price, setup: '0', enabled: true } } });

beforeAll(async () => {
  stand = await stripeStand();
  t = stand.t;
  // USD is the default; EUR converts at 0.9 and rounds up to x.99; JPY and KWD convert plainly.
  expect((await t.admin('currency/create', { code: 'EUR', conversion_rate: '0.9', price_rounding: { step: '1', ending: '0.99' } })).result).toBe('EUR');
  expect((await t.admin('currency/create', { code: 'JPY', conversion_rate: '150' })).result).toBe('JPY');
  expect((await t.admin('currency/create', { code: 'KWD', conversion_rate: '0.307' })).result).toBe('KWD');
  plain = await product('Plain', MONTH('10.00'));
  priced = await product('Priced', { ...MONTH('20.00'), prices: { EUR: { recurrent: { '1M': { price: '8.50' } } } } });
}, 60_000);

afterAll(async () => {
  vi.useRealTimers();
  await stand?.close();
});

afterEach(() => {
  vi.useRealTimers();
});

async function product(title: string, pricing: Record<string, unknown>, config: Record<string, unknown> = {}): Promise<number> {
  const prepared = await t.admin('product/prepare', { title, type: 'apikey' });
  const id = prepared.result as number;
  const updated = await t.admin('product/update', { id, status: 'enabled', setup: 'after_payment', pricing, config });
  expect(updated.body, JSON.stringify(updated.body)).toEqual({ result: true, error: null });
  return id;
}

/** A client who checks out `productId` in `currency` (chosen in the cart); the invoice as staff see it. */
async function checkoutIn(currency: string | null, productId: number, buyer?: { id: number; token: string }) {
  const client = buyer ?? (await t.createClient());
  if (currency !== null) expect((await asClient(t, client.token, 'cart/set_currency', { currency })).body).toEqual({ result: true, error: null });
  expect((await asClient(t, client.token, 'cart/add_item', { id: productId, period: '1M' })).body.error).toBeNull();
  const checkout = await asClient(t, client.token, 'cart/checkout');
  expect(checkout.body.error, JSON.stringify(checkout.body)).toBeNull();
  const invoice = (await t.admin('invoice/get', { id: checkout.result.invoice_id })).result;
  return { client, orderId: checkout.result.order_id as number, invoice };
}

describe('the cart currency (guest/cart/set_currency, get_currency)', () => {
  it('starts in the default, shows prices and totals in the chosen currency: own price, or converted and rounded to x.99', async () => {
    const browser = new Browser();
    const guest = (action: string, params: Record<string, unknown> = {}) => t.call(`/api/guest/cart/${action}`, params, { browser });
    expect((await guest('get_currency')).result).toMatchObject({ code: 'USD', default: true });
    expect((await guest('set_currency', { currency: 'eur' })).body).toEqual({ result: true, error: null });
    expect((await guest('get_currency')).result).toMatchObject({ code: 'EUR', conversion_rate: '0.9', minor_unit: 2 });
    await guest('add_item', { id: plain, period: '1M' });
    await guest('add_item', { id: priced, period: '1M', multiple: true });
    const cart = (await guest('get')).result;
    // 10.00 USD × 0.9 = 9.00 EUR, rounded up to 9.99; the priced plan's own 8.50 EUR is not rounded.
    expect(cart).toMatchObject({ currency: 'EUR', subtotal: '18.49', total: '18.49', items: [{ price: '9.99' }, { price: '8.50' }] });
    expect((await guest('set_currency', { currency: 'JPY' })).result).toBe(true);
    expect((await guest('get')).result).toMatchObject({ currency: 'JPY', total: '4500', items: [{ price: '1500' }, { price: '3000' }] });
  });

  it('refuses a missing, wrong-typed, malformed or unknown currency with a 422 naming it, and changes nothing', async () => {
    const browser = new Browser();
    const guest = (action: string, params: Record<string, unknown> = {}) => t.call(`/api/guest/cart/${action}`, params, { browser });
    await guest('set_currency', { currency: 'KWD' });
    expectInvalid(await guest('set_currency', {}), 'currency');
    expectInvalid(await guest('set_currency', { currency: { code: 'EUR' } }), 'currency');
    expectInvalid(await guest('set_currency', { currency: 'EURO' }), 'currency');
    // Not a code at all, and an ISO 4217 code this shop does not sell in.
    expectInvalid(await guest('set_currency', { currency: 'XYZ' }), 'currency');
    expectInvalid(await guest('set_currency', { currency: 'GBP' }), 'currency');
    expect((await guest('get_currency')).result.code).toBe('KWD');
    // The catalogue the same way.
    expectInvalid(await t.call('/api/guest/product/get_list', { currency: 'GBP' }), 'currency');
  });

  it('shows the catalogue in the asked currency, and keeps the default without one', async () => {
    const list = (currency?: string) => t.call('/api/guest/product/get_list', currency === undefined ? {} : { currency });
    const inEur = (await list('EUR')).result.list as Array<{ id: number; currency: string; pricing: { recurrent: Record<string, { price: string }> } }>;
    expect(inEur.find((p) => p.id === plain)).toMatchObject({ currency: 'EUR', pricing: { recurrent: { '1M': { price: '9.99' } } } });
    expect(inEur.find((p) => p.id === priced)).toMatchObject({ currency: 'EUR', pricing: { recurrent: { '1M': { price: '8.50' } } } });
    const inKwd = (await t.call('/api/guest/product/get', { id: plain, currency: 'KWD' })).result;
    expect(inKwd).toMatchObject({ currency: 'KWD', pricing: { recurrent: { '1M': { price: '3.070' } } } });
    expect(((await list()).result.list as Array<{ id: number; currency: string }>).find((p) => p.id === plain)).toMatchObject({ currency: 'USD' });
  });
});

describe('prices per currency (admin/product/update pricing.prices)', () => {
  it('shows staff the own prices, and refuses unknown or default currencies, unknown periods and too many decimals', async () => {
    expect((await t.admin('product/get', { id: priced })).result.pricing.prices).toEqual({ EUR: { once: null, recurrent: { '1M': { price: '8.50', setup: '0.00' } } } });
    const update = (prices: unknown) => t.admin('product/update', { id: priced, pricing: { prices } });
    expectInvalid(await update({ GBP: { recurrent: { '1M': { price: '1' } } } }), 'pricing.prices.GBP');
    expectInvalid(await update({ USD: { recurrent: { '1M': { price: '1' } } } }), 'pricing.prices.USD');
    expectInvalid(await update({ EUR: { recurrent: { '3M': { price: '1' } } } }), 'pricing.prices.EUR.recurrent.3M');
    expectInvalid(await update({ JPY: { recurrent: { '1M': { price: '10.5' } } } }), 'pricing.prices.JPY.recurrent.1M.price');
    expectInvalid(await update({ EUR: { recurrent: { '1M': { price: '-1' } } } }), 'pricing.prices.EUR.recurrent.1M.price');
    expectInvalid(await update('EUR'), 'pricing.prices');
    // Nothing changed by the refusals.
    expect((await t.admin('product/get', { id: priced })).result.pricing.prices.EUR.recurrent['1M'].price).toBe('8.50');
    // A staff member without product rights cannot set them.
    const viewer = await staffWith(t, ['client.view']);
    expectError(await asStaff(t, viewer, 'product/update', { id: priced, pricing: { prices: {} } }), 403);
  });
});

describe('a sale in the client currency', () => {
  it('checks out in EUR and in USD for two clients: orders and invoices in it, the rate stored on the invoice', async () => {
    const eur = await checkoutIn('EUR', plain);
    expect(eur.invoice).toMatchObject({ currency: 'EUR', currency_rate: '0.9', currency_base: 'USD', total: '9.99', items: [{ price: '9.99' }] });
    expect((await t.admin('order/get', { id: eur.orderId })).result).toMatchObject({ currency: 'EUR', price: '9.99' });
    expect((await t.admin('client/get', { id: eur.client.id })).result.currency).toBe('EUR');

    const usd = await checkoutIn(null, priced);
    expect(usd.invoice).toMatchObject({ currency: 'USD', currency_rate: '1', currency_base: 'USD', total: '20.00' });

    // A rate changed after the invoice leaves the invoice's stored rate.
    expect((await t.admin('currency/update', { code: 'EUR', conversion_rate: '0.95' })).result).toBe(true);
    expect((await t.admin('invoice/get', { id: eur.invoice.id })).result).toMatchObject({ currency_rate: '0.9', total: '9.99' });
    await t.admin('currency/update', { code: 'EUR', conversion_rate: '0.9' });
  });

  it('converts an absolute coupon into the sale’s currency, at checkout and on each renewal', async () => {
    const promo = await t.admin('product/promo_create', { code: 'TWOOFF', type: 'absolute', value: '2.00', recurring: true });
    expect(promo.body.error).toBeNull();
    const client = await t.createClient();
    await asClient(t, client.token, 'cart/set_currency', { currency: 'EUR' });
    await asClient(t, client.token, 'cart/add_item', { id: plain, period: '1M' });
    expect((await asClient(t, client.token, 'cart/apply_promo', { promocode: 'TWOOFF' })).result).toBe(true);
    // 2.00 USD × 0.9 = 1.80 EUR off 9.99 EUR.
    expect((await asClient(t, client.token, 'cart/get')).result).toMatchObject({ currency: 'EUR', discount: '1.80', total: '8.19' });
    const checkout = await asClient(t, client.token, 'cart/checkout');
    expect((await t.admin('invoice/get', { id: checkout.result.invoice_id })).result).toMatchObject({ currency: 'EUR', discount: '1.80', total: '8.19' });
    expect((await t.admin('invoice/mark_as_paid', { id: checkout.result.invoice_id })).result).toBe(true);
    const renewal = await asClient(t, client.token, 'invoice/renewal_invoice', { order_id: checkout.result.order_id });
    expect(renewal.body.error, JSON.stringify(renewal.body)).toBeNull();
    expect((await t.admin('invoice/get', { id: renewal.result })).result).toMatchObject({ currency: 'EUR', currency_rate: '0.9', discount: '1.80', total: '8.19' });
  });

  it('keeps a client’s currency after the first order: changing it is a 409, the same one is fine', async () => {
    const { client } = await checkoutIn('EUR', priced);
    expectError(await t.admin('client/update', { id: client.id, currency: 'USD' }), 409);
    expectError(await asClient(t, client.token, 'profile/update', { currency: 'JPY' }), 409);
    expectError(await asClient(t, client.token, 'cart/set_currency', { currency: 'USD' }), 409);
    expect((await asClient(t, client.token, 'cart/set_currency', { currency: 'EUR' })).result).toBe(true);
    expect((await t.admin('client/update', { id: client.id, currency: 'eur' })).result).toBe(true);
    expect((await t.admin('client/get', { id: client.id })).result.currency).toBe('EUR');
    // A second order is in it too.
    const again = await checkoutIn(null, plain, client);
    expect(again.invoice).toMatchObject({ currency: 'EUR', total: '9.99' });
  });

  it('lets staff set the currency before any order, which the client’s cart then shows; unknown codes are 422', async () => {
    const client = await t.createClient();
    expectInvalid(await t.admin('client/update', { id: client.id, currency: 'GBP' }), 'currency');
    expectInvalid(await t.admin('client/create', { email: 'gbp@example.com', first_name: 'G', currency: 'GBP' }), 'currency');
    expect((await t.admin('client/update', { id: client.id, currency: 'KWD' })).result).toBe(true);
    expect((await asClient(t, client.token, 'cart/get_currency')).result.code).toBe('KWD');
    await asClient(t, client.token, 'cart/add_item', { id: plain, period: '1M' });
    expect((await asClient(t, client.token, 'cart/get')).result).toMatchObject({ currency: 'KWD', total: '3.070' });
  });

  it('refuses to delete a currency in use (409), and a delete racing a checkout leaves no sale in a deleted currency', async () => {
    // A client bought in euros: EUR is in use.
    await checkoutIn('EUR', plain);
    expectError(await t.admin('currency/delete', { code: 'EUR' }), 409);
    expect((await t.admin('currency/create', { code: 'CHF', conversion_rate: '0.88' })).result).toBe('CHF');
    const client = await t.createClient();
    await asClient(t, client.token, 'cart/set_currency', { currency: 'CHF' });
    await asClient(t, client.token, 'cart/add_item', { id: plain, period: '1M' });
    const [checkout, deleted] = await Promise.all([asClient(t, client.token, 'cart/checkout'), t.admin('currency/delete', { code: 'CHF' })]);
    expect(checkout.status).toBe(200);
    const invoice = (await t.admin('invoice/get', { id: checkout.result.invoice_id })).result;
    if (deleted.status === 200) {
      // The delete came first: the cart's choice was forgotten and the sale is in the client's currency.
      expect(invoice.currency).toBe('USD');
    } else {
      expectError(deleted, 409);
      expect(invoice).toMatchObject({ currency: 'CHF', currency_rate: '0.88' });
    }
  });
});

describe('zero- and three-decimal currencies through Stripe, a credit note, a top-up and overage', () => {
  it('charges JPY and KWD through Stripe in integer minor units and pays the invoice once', async () => {
    const jpy = await checkoutIn('JPY', plain);
    expect(jpy.invoice).toMatchObject({ currency: 'JPY', total: '1500', currency_rate: '150' });
    receivedAmounts.length = 0;
    await payByCard(stand, jpy.invoice.hash);
    expect(receivedAmounts).toEqual([{ param: 'line_items[0][price_data][unit_amount]', value: '1500' }]);
    expect((await t.admin('invoice/get', { id: jpy.invoice.id })).result.status).toBe('paid');

    const kwd = await checkoutIn('KWD', plain);
    expect(kwd.invoice).toMatchObject({ currency: 'KWD', total: '3.070' });
    receivedAmounts.length = 0;
    await payByCard(stand, kwd.invoice.hash);
    expect(receivedAmounts).toEqual([{ param: 'line_items[0][price_data][unit_amount]', value: '3070' }]);
    const transactions = await t.admin('invoice/transaction_get_list', { invoice_id: kwd.invoice.id });
    expect(transactions.result.list).toMatchObject([{ amount: '3.070', currency: 'KWD', status: 'processed' }]);

    // Credit notes are in their invoice's currency, with its decimals: yen take none, dinars three.
    expectInvalid(await t.admin('invoice/credit_note_create', { invoice_id: jpy.invoice.id, reason: 'Goodwill', amount: '100.5' }), 'amount');
    const yenNote = await t.admin('invoice/credit_note_create', { invoice_id: jpy.invoice.id, reason: 'Goodwill', amount: '500' });
    expect(yenNote.body.error).toBeNull();
    expect((await t.admin('invoice/credit_note_get', { id: yenNote.result })).result).toMatchObject({ currency: 'JPY', total: '500' });
    expectInvalid(await t.admin('invoice/credit_note_create', { invoice_id: kwd.invoice.id, reason: 'Goodwill', amount: '1.0005' }), 'amount');
    const dinarNote = await t.admin('invoice/credit_note_create', { invoice_id: kwd.invoice.id, reason: 'Goodwill', amount: '1.005' });
    expect((await t.admin('invoice/credit_note_get', { id: dinarNote.result })).result).toMatchObject({ currency: 'KWD', total: '1.005' });
    // The notes went to the clients' balances, in their currencies.
    expect((await asClient(t, jpy.client.token, 'client/balance_get_total')).result).toBe('500');
    expect((await asClient(t, kwd.client.token, 'client/balance_get_total')).result).toBe('1.005');
  });

  it('tops up a yen wallet in yen: decimals refused, the invoice and the balance in JPY', async () => {
    const { client } = await checkoutIn('JPY', plain);
    expectInvalid(await asClient(t, client.token, 'invoice/funds_invoice', { amount: '10.5' }), 'amount');
    const hash = (await asClient(t, client.token, 'invoice/funds_invoice', { amount: '2000' })).result as string;
    const invoice = (await t.call('/api/guest/invoice/get', { hash })).result;
    expect(invoice).toMatchObject({ currency: 'JPY', total: '2000' });
    receivedAmounts.length = 0;
    await payByCard(stand, hash);
    expect(receivedAmounts).toEqual([{ param: 'line_items[0][price_data][unit_amount]', value: '2000' }]);
    expect((await asClient(t, client.token, 'client/balance_get_total')).result).toBe('2000');
  });

  it('bills overage at the close converted at the rate, rounded once in the currency’s minor unit', async () => {
    const metered = await product('Metered', MONTH('10.00'), { usage_period: 'calendar_month', included: 10, overage: { mode: 'per_unit', unit_price: '0.013' } });
    const at = (iso: string) => {
      vi.useFakeTimers({ toFake: ['Date'], now: Date.parse(iso) });
    };
    at('2031-03-10T12:00:00Z');
    const orders: Record<string, number> = {};
    for (const code of ['JPY', 'KWD', 'USD']) {
      const client = await t.createClient();
      await t.admin('client/update', { id: client.id, currency: code });
      const created = await t.admin('order/create', { client_id: client.id, product_id: metered, period: '1M', activate: true });
      expect(created.body.error).toBeNull();
      orders[code] = created.result as number;
      const key = (await t.admin('serviceapikey/get', { order_id: orders[code] })).result.api_key as string;
      for (let i = 0; i < 25; i++) expect((await t.call('/api/guest/serviceapikey/check', { key })).result).toBe(true);
    }
    await t.services.apikeys.flushUsage();
    at('2031-04-01T00:01:00Z');
    await t.services.usageCloser.closePeriods(new Date());
    const usage = async (orderId: number) =>
      t.services.db
        .selectFrom('invoice_items')
        .innerJoin('invoices', 'invoices.id', 'invoice_items.invoice_id')
        .select(['invoices.currency', 'invoice_items.total'])
        .where('invoice_items.order_id', '=', orderId)
        .where('invoice_items.task', '=', 'usage')
        .execute();
    // 15 uses over at 0.013 USD = 0.195 USD: ¥29.25 → ¥29; 0.059865 KWD → 0.060 (60 fils); 0.20 USD (half up).
    expect(await usage(orders.JPY!)).toEqual([{ currency: 'JPY', total: 29 }]);
    expect(await usage(orders.KWD!)).toEqual([{ currency: 'KWD', total: 60 }]);
    expect(await usage(orders.USD!)).toEqual([{ currency: 'USD', total: 20 }]);
  });
});

describe('reports in the default currency at the stored rates', () => {
  it('exports each invoice with its rate and its amounts in the default currency, named in the header and the rows', async () => {
    const { invoice } = await checkoutIn('EUR', plain);
    // The rate moves after the invoice: the export still converts at the invoice's 0.9.
    await t.admin('currency/update', { code: 'EUR', conversion_rate: '0.5' });
    const response = await t.app.inject({ method: 'GET', url: `/api/admin/export/invoices.csv?client_id=${invoice.client_id}`, headers: { authorization: `Basic ${Buffer.from(`admin:${t.adminToken}`).toString('base64')}` } });
    await t.admin('currency/update', { code: 'EUR', conversion_rate: '0.9' });
    expect(response.statusCode, response.body).toBe(200);
    // Cells are quoted ("a","b"): compare them unquoted.
    const [header, row] = response.body.trim().split('\n').map((line) => line.replaceAll('"', ''));
    expect(header).toContain('currency_rate,default_currency,subtotal_in_default,total_in_default');
    // 9.99 EUR ÷ 0.9 = 11.10 USD.
    expect(row).toMatch(/,EUR,9\.99,9\.99,.*,0\.9,USD,11\.10,11\.10$/);
    const converter = await t.services.selling.storedRateConverter();
    expect(converter.toDefault(999, { currency: 'EUR', currency_rate: '0.9', currency_base: 'USD' })).toBe(1110);
    expect(converter.toDefault(1500, { currency: 'JPY', currency_rate: '150', currency_base: 'USD' })).toBe(1000);
    expect(converter.toDefault(3070, { currency: 'KWD', currency_rate: '0.307', currency_base: 'USD' })).toBe(1000);
  });
});
