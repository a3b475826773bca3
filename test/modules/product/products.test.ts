// Products: prepare, pricing validation, config merge/replace, catalogue visibility, delete, permissions, and the
// product type registry accepting types added from outside.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { customType } from '../../../src/modules/product/custom-type.ts';
import type { ProductType } from '../../../src/modules/product/product-type.ts';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { asClient, asStaff, expectError, makeProduct, staffWith } from '../../helpers/selling-fixtures.ts';

// A product type registered from outside selling: only the config handling differs from `custom`.
const testType: ProductType = {
  ...customType,
  code: 'widget',
  normalizeConfig(config) {
    if (config.size !== undefined && typeof config.size !== 'number') throw new Error('unreachable in this test');
    return { size: 1, ...config };
  },
};

describe('products', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
    t.services.productTypes.register(testType);
  });
  afterAll(async () => {
    await t.close();
  });

  it('prepares a disabled free product with a unique slug', async () => {
    const id = (await t.admin('product/prepare', { title: 'Gold Plan!', type: 'custom' })).result;
    const again = (await t.admin('product/prepare', { title: 'Gold plan', type: 'custom' })).result;
    const product = (await t.admin('product/get', { id })).result;
    expect(product).toMatchObject({
      id,
      title: 'Gold Plan!',
      slug: 'gold-plan',
      type: 'custom',
      status: 'disabled',
      hidden: false,
      setup: 'after_payment',
      description: null,
      pricing: { type: 'free', once: { price: '0.00', setup: '0.00' }, recurrent: {} },
      config: {},
    });
    expect((await t.admin('product/get', { id: again })).result.slug).toBe('gold-plan-2');
  });

  it('accepts product types registered from outside and refuses unknown ones', async () => {
    const id = (await t.admin('product/prepare', { title: 'Widget', type: 'widget' })).result;
    expect((await t.admin('product/get', { id })).result).toMatchObject({ type: 'widget', config: { size: 1 } });
    const apikey = await t.admin('product/prepare', { title: 'Keys', type: 'apikey' });
    expect(apikey.body.error).toBeNull();
    expect((await t.admin('product/get', { id: apikey.result })).result.type).toBe('apikey');
    const unknown = await t.admin('product/prepare', { title: 'X', type: 'nonsense' });
    expectError(unknown, 422);
    expect(unknown.body.error!.message).toContain('"type"');
    expectError(await t.admin('product/prepare', { title: 'X' }), 422);
    expectError(await t.admin('product/prepare', { type: 'custom' }), 422);
    expectError(await t.admin('product/prepare', { title: 'x'.repeat(300), type: 'custom' }), 422);
  });

  it('stores pricing in minor units and shows decimal strings', async () => {
    const id = await makeProduct(t, {
      pricing: {
        type: 'recurrent',
        recurrent: { '1M': { price: '9.99', setup: 5 }, '1Y': { price: 99.9, enabled: false }, '30D': { price: '0.10' } },
      },
    });
    const product = (await t.admin('product/get', { id })).result;
    expect(product.pricing.recurrent).toEqual({
      '1M': { price: '9.99', setup: '5.00', enabled: true },
      '1Y': { price: '99.90', setup: '0.00', enabled: false },
      '30D': { price: '0.10', setup: '0.00', enabled: true },
    });
    // Form-style input (strings everywhere) works too.
    const form = await t.call(
      '/api/admin/product/update',
      {},
      {
        basic: ['admin', t.adminToken],
        raw: {
          body: `id=${id}&pricing[type]=once&pricing[once][price]=12.50&pricing[once][setup]=1&hidden=1`,
          contentType: 'application/x-www-form-urlencoded',
        },
      },
    );
    expect(form.body.error).toBeNull();
    const after = (await t.admin('product/get', { id })).result;
    expect(after.pricing.type).toBe('once');
    expect(after.pricing.once).toEqual({ price: '12.50', setup: '1.00' });
    expect(after.hidden).toBe(true);
    // The recurrent prices are kept for when the type switches back.
    expect(Object.keys(after.pricing.recurrent)).toEqual(['1M', '1Y', '30D']);
  });

  it('rejects bad prices and periods with 422 naming the parameter', async () => {
    const id = await makeProduct(t);
    const cases: Array<[unknown, string]> = [
      [{ type: 'monthly' }, 'pricing.type'],
      [{ once: { price: '-1' } }, 'pricing.once.price'],
      [{ once: { price: 'ten' } }, 'pricing.once.price'],
      [{ once: { price: '1.001' } }, 'pricing.once.price'],
      [{ once: { price: '1e12' } }, 'pricing.once.price'],
      [{ once: { price: 10_000_000_000 } }, 'pricing.once.price'],
      [{ once: { setup: -5 } }, 'pricing.once.setup'],
      [{ recurrent: { '0M': { price: 1 } } }, 'pricing.recurrent.0M'],
      [{ recurrent: { '-1M': { price: 1 } } }, 'pricing.recurrent.-1M'],
      [{ recurrent: { '25M': { price: 1 } } }, 'pricing.recurrent.25M'],
      [{ recurrent: { monthly: { price: 1 } } }, 'pricing.recurrent.monthly'],
      [{ recurrent: { '1M': 10 } }, 'pricing.recurrent.1M'],
      [{ recurrent: { '1M': { price: 'abc' } } }, 'pricing.recurrent.1M.price'],
      [{ recurrent: { '1M': { price: 1, enabled: 'maybe' } } }, 'pricing.recurrent.1M.enabled'],
      ['cheap', 'pricing'],
    ];
    for (const [pricing, param] of cases) {
      const reply = await t.admin('product/update', { id, pricing });
      expectError(reply, 422);
      expect(reply.body.error!.message).toContain(`"${param}"`);
    }
    expectError(await t.admin('product/update', { id, status: 'on' }), 422);
    expectError(await t.admin('product/update', { id, setup: 'later' }), 422);
    expectError(await t.admin('product/update', { id: 'abc' }), 422);
    expectError(await t.admin('product/update', { id: 0 }), 422);
    expectError(await t.admin('product/update', { id: 999_999 }), 404);
    expectError(await t.admin('product/update', { id, slug: 'Not A Slug' }), 422);
    expectError(await t.admin('product/update', { id, config: 'x' }), 422);
    // Nothing of the above was stored.
    expect((await t.admin('product/get', { id })).result.pricing.recurrent['1M'].price).toBe('10.00');
  });

  it('refuses a slug another product has', async () => {
    const a = await makeProduct(t);
    const b = await makeProduct(t);
    expect((await t.admin('product/update', { id: a, slug: 'unique-one' })).result).toBe(true);
    expectError(await t.admin('product/update', { id: b, slug: 'unique-one' }), 409);
  });

  it('merges config on update and replaces it on update_config', async () => {
    const id = await makeProduct(t, { config: { custom: { tier: 'pro' }, note: 'a' } });
    await t.admin('product/update', { id, config: { other: 1 } });
    expect((await t.admin('product/get', { id })).result.config).toEqual({ custom: { tier: 'pro' }, note: 'a', other: 1 });
    await t.admin('product/update_config', { id, config: { custom: { tier: 'basic' } } });
    expect((await t.admin('product/get', { id })).result.config).toEqual({ custom: { tier: 'basic' } });
    expectError(await t.admin('product/update_config', { id, config: { custom: 'nope' } }), 422);
    expectError(await t.admin('product/update_config', { id }), 422);
  });

  it('shows guests enabled, listed products with only the public config', async () => {
    const visible = await makeProduct(t, { title: 'Visible', config: { custom: { calls: 100 }, secret: 'x' } });
    const hidden = await makeProduct(t, { title: 'Hidden' });
    await t.admin('product/update', { id: hidden, hidden: true });
    const disabled = await makeProduct(t, { title: 'Disabled', status: 'disabled' });
    const list = await t.call('/api/guest/product/get_list', {}, { method: 'GET' });
    const ids = (list.result.list as Array<{ id: number }>).map((product) => product.id);
    expect(ids).toContain(visible);
    expect(ids).not.toContain(hidden);
    expect(ids).not.toContain(disabled);
    const one = (list.result.list as Array<{ id: number }>).find((product) => product.id === visible);
    expect(one).toMatchObject({ title: 'Visible', config: { custom: { calls: 100 } } });
    expect(one).not.toHaveProperty('config.secret');
    expect(one).not.toHaveProperty('status');

    const bySlug = await t.call('/api/guest/product/get', { slug: (await t.admin('product/get', { id: visible })).result.slug });
    expect(bySlug.result.id).toBe(visible);
    // Hidden products are out of the catalogue entirely (still orderable by id through the cart).
    expectError(await t.call('/api/guest/product/get', { id: hidden }), 404);
    expectError(await t.call('/api/guest/product/get', { slug: (await t.admin('product/get', { id: hidden })).result.slug }), 404);
    expect((await t.call('/api/guest/cart/add_item', { id: hidden, period: '1M' })).result).toBe(true);
    expectError(await t.call('/api/guest/product/get', { id: disabled }), 404);
    expectError(await t.call('/api/guest/product/get', { slug: 'no-such-product' }), 404);
    expectError(await t.call('/api/guest/product/get', {}), 422);

    // Disabled recurrent periods are not shown to guests.
    await t.admin('product/update', { id: visible, pricing: { recurrent: { '1M': { price: 1 }, '1Y': { price: 10, enabled: false } } } });
    expect(Object.keys((await t.call('/api/guest/product/get', { id: visible })).result.pricing.recurrent)).toEqual(['1M']);
  });

  it('filters and pages the admin list', async () => {
    await makeProduct(t, { title: 'Searchable Zebra' });
    const found = await t.admin('product/get_list', { search: 'zebra' });
    expect(found.result.total).toBe(1);
    const widgets = await t.admin('product/get_list', { type: 'widget' });
    expect(widgets.result.list.every((product: { type: string }) => product.type === 'widget')).toBe(true);
    const page = await t.admin('product/get_list', { per_page: 1, page: 2 });
    expect(page.result).toMatchObject({ page: 2, per_page: 1 });
    expect(page.result.list).toHaveLength(1);
    expectError(await t.admin('product/get_list', { per_page: 501 }), 422);
  });

  it('deletes a product unless orders use it', async () => {
    const unused = await makeProduct(t);
    expect((await t.admin('product/delete', { id: unused })).result).toBe(true);
    expectError(await t.admin('product/get', { id: unused }), 404);
    expectError(await t.admin('product/delete', { id: unused }), 404);

    const used = await makeProduct(t);
    const client = await t.createClient();
    expect((await t.admin('order/create', { client_id: client.id, product_id: used, period: '1M' })).body.error).toBeNull();
    expectError(await t.admin('product/delete', { id: used }), 409);
  });

  it('checks roles and permissions', async () => {
    const client = await t.createClient();
    expectError(await asClient(t, client.token, 'product/get_list'), 740, 404);
    expectError(await t.call('/api/admin/product/get_list', {}, { basic: ['client', client.token] }), 203, 401);
    expectError(await t.call('/api/admin/product/get_list', {}), 201, 401);
    const viewer = await staffWith(t, ['product.view']);
    expect((await asStaff(t, viewer, 'product/get_list')).status).toBe(200);
    expectError(await asStaff(t, viewer, 'product/prepare', { title: 'X', type: 'custom' }), 403);
    const nobody = await staffWith(t, []);
    expectError(await asStaff(t, nobody, 'product/get_list'), 403);
  });
});
