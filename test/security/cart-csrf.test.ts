// Issue 8 item 5: guest/cart/* called with a logged-in client's session cookie acts on that client's cart, so it
// needs the session's CSRF token like client/cart/* — a link or form on another site (even a GET) must not change a
// customer's cart. A guest without a client session keeps working without any token. guest/cart/get is a read and
// needs no token (issue 21 item 13, test/http/fossbilling-parity.test.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser, createTestApp, type TestApp } from '../helpers/app.ts';
import { expectError } from '../helpers/assertions.ts';
import { inBrowser, makeProduct, signUp } from '../helpers/selling-fixtures.ts';

describe('guest/cart/* on a client session needs the CSRF token', () => {
  let t: TestApp;
  let product: number;

  beforeAll(async () => {
    t = await createTestApp();
    product = await makeProduct(t);
  });
  afterAll(async () => {
    await t.close();
  });

  const clientCart = async (browser: Browser) => (await inBrowser(t, browser, 'cart/get')).result as { items: Array<{ id: number }> };

  it('without a token every guest cart change is refused (POST and GET) and the cart is unchanged', async () => {
    const { browser } = await signUp(t);
    expect((await inBrowser(t, browser, 'cart/add_item', { id: product, period: '1M' })).result).toBe(true);
    const before = await clientCart(browser);
    expect(before.items).toHaveLength(1);

    for (const method of ['POST', 'GET'] as const) {
      expectError(await t.call('/api/guest/cart/add_item', { id: product, period: '1M', multiple: 1 }, { browser, method }), 403);
      expectError(await t.call('/api/guest/cart/remove_item', { id: before.items[0]!.id }, { browser, method }), 403);
      expectError(await t.call('/api/guest/cart/reset', {}, { browser, method }), 403);
    }
    // A wrong token is no better than none.
    expectError(await t.call('/api/guest/cart/reset', {}, { browser, headers: { 'x-csrf-token': 'not-the-token' } }), 403);
    expectError(await t.call('/api/guest/cart/reset', { CSRFToken: 'not-the-token' }, { browser, method: 'GET' }), 403);
    expect(await clientCart(browser)).toEqual(before);
  });

  it("with the session's token (header or CSRFToken parameter) guest cart actions act on the client's cart", async () => {
    const { browser } = await signUp(t);
    expect((await t.call('/api/guest/cart/add_item', { id: product, period: '1M' }, { browser, csrf: true })).result).toBe(true);
    expect((await clientCart(browser)).items).toHaveLength(1);
    const viaGuest = (await t.call('/api/guest/cart/get', { CSRFToken: browser.csrfToken }, { browser, method: 'GET' })).result;
    expect(viaGuest.items).toHaveLength(1);
    expect((await t.call('/api/guest/cart/reset', { CSRFToken: browser.csrfToken }, { browser })).result).toBe(true);
    expect((await clientCart(browser)).items).toEqual([]);
  });

  it('a guest without a client session needs no token, over POST and GET', async () => {
    const browser = new Browser();
    expect((await t.call('/api/guest/cart/add_item', { id: product, period: '1M' }, { browser })).result).toBe(true);
    expect((await t.call('/api/guest/cart/get', {}, { browser, method: 'GET' })).result.items).toHaveLength(1);
    expect((await t.call('/api/guest/cart/reset', {}, { browser, method: 'GET' })).result).toBe(true);
    expect((await t.call('/api/guest/cart/get', {}, { browser })).result.items).toEqual([]);
  });
});
