// Issue 21 item 3: the buyer sees what they will pay. One function words a plan's usage terms (src/lib/usage-terms.ts,
// shared by the browser UI and the server); the catalogue exposes the terms (additive to config.custom), the cart line,
// the order and the checkout invoice's line carry them in words. Runs on SQLite, and on PostgreSQL + Redis when TEST_*
// are set.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { overageText, perCallText, unitWords, usageTerms, usageTermsText } from '../../../src/lib/usage-terms.ts';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectError } from '../../helpers/assertions.ts';
import { asClient, makeProduct } from '../../helpers/selling-fixtures.ts';

describe('the wording (one function for the pages and the server)', () => {
  it('words each overage mode, graduated tiers included, in the given currency', () => {
    expect(overageText({ mode: 'package', package_size: 100, package_price: '1' }, 'USD')).toBe('then 1.00 USD per 100 calls');
    expect(overageText({ mode: 'package', package_size: 1, package_price: '0.5' }, 'EUR')).toBe('then 0.50 EUR per call');
    expect(overageText({ mode: 'per_unit', unit_price: '0.5' }, 'USD')).toBe('then 0.50 USD per call');
    // A price below the smallest coin reads per a round number of calls.
    expect(overageText({ mode: 'per_unit', unit_price: '0.001' }, 'USD')).toBe('then 1.00 USD per 1,000 calls');
    expect(overageText({ mode: 'per_unit', unit_price: '0.015' }, 'USD')).toBe('then 1.50 USD per 100 calls');
    expect(perCallText('2', 'JPY')).toBe('2 JPY per call');
    expect(perCallText('0.5', 'JPY')).toBe('5 JPY per 10 calls');
    expect(
      overageText(
        {
          mode: 'graduated',
          tiers: [
            { up_to: 1000, unit_price: '0.01' },
            { up_to: 10000, unit_price: '0.005', flat_price: '2' },
            { up_to: null, unit_price: '0.001' },
          ],
        },
        'USD',
      ),
    ).toBe(
      'then 0.01 USD per call for the first 1,000 calls extra, 5.00 USD per 1,000 calls up to 10,000 calls extra plus 2.00 USD once the tier is reached, 1.00 USD per 1,000 calls beyond 10,000 calls extra',
    );
    expect(overageText({ mode: 'graduated', tiers: [{ up_to: null, unit_price: '0.02' }] }, 'USD')).toBe('then 0.02 USD per call for every extra call');
  });

  it('words each meter of a plan by its name and unit, volume tiers included (issue 23)', () => {
    expect(unitWords('token')).toEqual({ one: 'token', many: 'tokens' });
    expect(unitWords('GB')).toEqual({ one: 'GB', many: 'GB' });
    expect(unitWords('request/s')).toEqual({ one: 'request/s', many: 'request/s' });
    const meters = [
      {
        code: 'tokens', name: 'Tokens', unit: 'token', aggregation: 'sum', included: 1_000_000,
        overage: { mode: 'graduated', tiers: [{ up_to: 1_000_000, unit_price: '0.000002' }, { up_to: null, unit_price: '0.000001' }] },
      },
      { code: 'requests', name: 'Requests', unit: 'request', aggregation: 'count', hard_limit: 50_000 },
      { code: 'users', name: 'End users', unit: 'user', aggregation: 'unique_count', property: 'user', included: 100, overage: { mode: 'per_unit', unit_price: '0.10' } },
      { code: 'gpu', name: 'GPU time', unit: 'ms', aggregation: 'sum', included: 0, overage: { mode: 'volume', tiers: [{ up_to: 1000, unit_price: '0.001' }, { up_to: null, unit_price: '0.0005' }] } },
      { code: 'seats', name: 'Seats', unit: 'seat', aggregation: 'latest' },
    ];
    expect(usageTerms({ meters }, 'USD')).toEqual([
      'Tokens: 1,000,000 tokens included per calendar month',
      'Tokens: then 2.00 USD per 1,000,000 tokens for the first 1,000,000 tokens extra, 1.00 USD per 1,000,000 tokens beyond 1,000,000 tokens extra',
      'Requests: hard limit 50,000 requests per calendar month',
      'End users: 100 users included per calendar month',
      'End users: then 0.10 USD per user',
      'GPU time: 0 ms included per calendar month',
      'GPU time: then, all extra ms at the tier their number reaches: 1.00 USD per 1,000 ms for the first 1,000 ms extra, 5.00 USD per 10,000 ms beyond 1,000 ms extra',
      'Seats: seats measured per calendar month',
    ]);
  });

  it('lists included calls with the usage period, overage, hard limit, rate limit and keys', () => {
    expect(
      usageTerms(
        {
          custom: {},
          included: 1000,
          usage_period: 'billing_period',
          overage: { mode: 'package', package_size: 100, package_price: '1.00' },
          hard_limit: 5000,
          rate_limit: { limit: 10, window_seconds: 1 },
          max_keys: 3,
        },
        'USD',
      ),
    ).toEqual([
      '1,000 calls included per billing period',
      'then 1.00 USD per 100 calls',
      'hard limit 5,000 calls per billing period',
      'at most 10 calls per second',
      'up to 3 API keys',
    ]);
    // The quota falls back to the monthlyLimit parameter, as the key applies it; enforced without overage it stops.
    expect(usageTermsText({ custom: { monthlyLimit: 500 }, enforce_limit: true }, 'USD')).toBe('500 calls included per calendar month; no calls beyond them');
    expect(usageTermsText({ custom: {}, rate_limit: { limit: 100, window_seconds: 60 } }, 'USD')).toBe('at most 100 calls per minute');
    // Nothing metered: no words.
    expect(usageTermsText({ custom: { tier: 'pro' } }, 'USD')).toBeNull();
    expect(usageTermsText({}, 'USD')).toBeNull();
    expect(usageTermsText(null, 'USD')).toBeNull();
    // Unlimited included calls: an overage rule can never apply, so it is not promised.
    expect(usageTerms({ overage: { mode: 'per_unit', unit_price: '1' } }, 'USD')).toEqual([]);
    // Unreadable parts are left out rather than guessed.
    expect(usageTerms({ included: 10, overage: { mode: 'per_unit', unit_price: 'cheap' }, hard_limit: -1 }, 'USD')).toEqual(['10 calls included per calendar month']);
  });
});

describe('over HTTP', () => {
  let t: TestApp;
  let client: Awaited<ReturnType<TestApp['createClient']>>;
  let metered: number;
  let plain: number;
  const TERMS = '1,000 calls included per billing period; then 1.00 USD per 100 calls; hard limit 5,000 calls per billing period; at most 10 calls per second; up to 2 API keys';

  beforeAll(async () => {
    t = await createTestApp({ CURRENCY: 'USD' });
    client = await t.createClient({ country: 'US' });
    metered = await makeProduct(t, {
      title: 'Metered',
      type: 'apikey',
      config: {
        included: 1000,
        usage_period: 'billing_period',
        overage: { mode: 'package', package_size: 100, package_price: '1' },
        hard_limit: 5000,
        rate_limit: { limit: 10, window_seconds: 1 },
        max_keys: 2,
        length: 40,
        custom: { tier: 'pro' },
      },
    });
    plain = await makeProduct(t, { title: 'Support', type: 'custom', config: { custom: { hours: 2 } } });
  });
  afterAll(async () => {
    await t.close();
  });

  it('the catalogue exposes the usage terms beside config.custom, never the key options', async () => {
    const got = (await t.call('/api/guest/product/get', { id: metered })).result;
    expect(got.config).toEqual({
      custom: { tier: 'pro' },
      included: 1000,
      usage_period: 'billing_period',
      overage: { mode: 'package', package_size: 100, package_price: '1' },
      hard_limit: 5000,
      rate_limit: { limit: 10, window_seconds: 1 },
      max_keys: 2,
    });
    const listed = (await t.call('/api/guest/product/get_list', {})).result.list as Array<{ id: number; config: Record<string, unknown> }>;
    expect(listed.find((product) => product.id === metered)?.config).toEqual(got.config);
    expect(usageTermsText(got.config as Record<string, unknown>, 'USD')).toBe(TERMS);
    // A disabled product stays out of the catalogue; a wrong-typed id is a 422.
    expectError(await t.call('/api/guest/product/get', { id: 'x' }), 422);
    expectError(await t.call('/api/guest/product/get', { id: 999_999 }), 404);
  });

  it('the cart line, the order and the checkout invoice line carry the terms in words', async () => {
    const token = client.token;
    expect((await asClient(t, token, 'cart/add_item', { id: metered, period: '1M' })).body.error).toBeNull();
    expect((await asClient(t, token, 'cart/add_item', { id: plain, period: '1M', multiple: true })).body.error).toBeNull();
    const cart = (await asClient(t, token, 'cart/get')).result as { items: Array<{ product_id: number; usage_terms: string | null }> };
    expect(cart.items.map((item) => [item.product_id, item.usage_terms])).toEqual([
      [metered, TERMS],
      [plain, null],
    ]);
    const checkout = (await asClient(t, token, 'cart/checkout')).result as { orders: number[]; invoice_id: number };
    const invoice = (await asClient(t, token, 'invoice/get', { id: checkout.invoice_id })).result as { items: Array<{ title: string }> };
    expect(invoice.items.map((line) => line.title)).toEqual([`Metered (Every month) — ${TERMS}`, 'Support (Every month)']);
    const order = (await asClient(t, token, 'order/get', { id: checkout.orders[0] })).result as { usage_terms: string | null };
    expect(order.usage_terms).toBe(TERMS);
    const other = (await asClient(t, token, 'order/get', { id: checkout.orders[1] })).result as { usage_terms: string | null };
    expect(other.usage_terms).toBeNull();
    const listed = (await asClient(t, token, 'order/get_list', {})).result.list as Array<{ id: number; usage_terms: string | null }>;
    expect(listed.find((row) => row.id === checkout.orders[0])?.usage_terms).toBe(TERMS);
    // Another client's order stays a 404.
    const stranger = await t.createClient();
    expectError(await asClient(t, stranger.token, 'order/get', { id: checkout.orders[0] }), 404);
  });
});
