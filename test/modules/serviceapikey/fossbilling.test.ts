// FOSSBilling's own admin forms against the API key product (issue 8, items 11 and 12). FOSSBilling posts form data:
// the product form (`admin/product/update_config`) and the order's "API Key Configuration" form
// (`admin/serviceapikey/update`) both send the key options (`config[length]`, `config[split]`,
// `config[split_interval]`, `config[case]`) next to the flat custom parameters (`config[custom_<name>]`). Only the
// custom parameters may ever appear in a key's `config`; the key options shape the key when it is issued and are
// otherwise ignored. Runs on SQLite, and on PostgreSQL (+ Redis) when TEST_* are set.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type Reply, type TestApp } from '../../helpers/app.ts';
import { ORDER_FIELDS } from '../../helpers/selling-fixtures.ts';

/**
 * What an apikey order's service adds to the order record (CONTRACT §7, with §7.1's reason). The key's `reason`
 * takes the place of the order record's `reason` in this result (as before this issue; admin/order/get keeps the
 * order's own). `usage`: this period's use and projected overage (§12), for the client area and the admin order page.
 */
const SERVICE_FIELDS = ['api_key', 'config', 'valid', 'reason', 'usage', 'max_keys'];
const keysOf = (value: object): string[] => Object.keys(value).toSorted();
const SERVICE_RESULT = [...new Set([...ORDER_FIELDS, ...SERVICE_FIELDS])].toSorted();

/** A form body as FOSSBilling's admin pages post it (`config[name]=value`). */
function form(fields: Record<string, string | number>): { body: string; contentType: string } {
  const body = new URLSearchParams(Object.entries(fields).map(([name, value]) => [name, String(value)])).toString();
  return { body, contentType: 'application/x-www-form-urlencoded' };
}

describe("FOSSBilling's flat product config through purchase, get_info and update", () => {
  let t: TestApp;
  const adminForm = (path: string, fields: Record<string, string | number>): Promise<Reply> =>
    t.call(`/api/admin/${path}`, {}, { basic: ['admin', t.adminToken], raw: form(fields) });

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  async function flatProduct(): Promise<number> {
    const id = (await t.admin('product/prepare', { title: 'FOSSBilling plan', type: 'apikey' })).result as number;
    // FOSSBilling's product form: options in its spelling, custom parameters flat and as strings.
    const saved = await adminForm('product/update_config', {
      id,
      'config[length]': '16',
      'config[split]': '1',
      'config[split_interval]': '4',
      'config[case]': 'lower',
      'config[custom_monthlyLimit]': '1000',
      'config[custom_tier]': 'pro',
    });
    expect(saved.body).toEqual({ result: true, error: null });
    expect((await t.admin('product/update', { id, status: 'enabled' })).result).toBe(true);
    // Guests see only the custom parameters, under `custom`, with numeric strings made numbers.
    expect((await t.call('/api/guest/product/get', { id })).result.config).toEqual({ custom: { monthlyLimit: 1000, tier: 'pro' } });
    return id;
  }

  it('purchases, answers get_info and order/service with only the custom parameters, and update stores only those', async () => {
    const productId = await flatProduct();
    const buyer = await t.createClient();
    const basic: [string, string] = ['client', buyer.token];
    expect((await t.call('/api/client/cart/add_item', { id: productId }, { basic })).result).toBe(true);
    const checkout = await t.call('/api/client/cart/checkout', {}, { basic });
    expect(checkout.status).toBe(200);
    const orderId = checkout.result.order_id as number;

    // A free product activates at once; the key has the product's FOSSBilling options: 16 lower-case characters
    // in groups of 4.
    const clientService = await t.call('/api/client/order/service', { id: orderId }, { basic });
    expect(clientService.status).toBe(200);
    const key = clientService.result.api_key as string;
    expect(key).toMatch(/^[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}$/);
    const custom = { monthlyLimit: 1000, tier: 'pro' };
    expect(keysOf(clientService.result)).toEqual(SERVICE_RESULT);
    expect(clientService.result).toMatchObject({ status: 'active', api_key: key, config: custom, valid: 1, reason: 'VALID' });
    const adminService = await t.admin('order/service', { id: orderId });
    expect(adminService.result).toMatchObject({ api_key: key, config: custom, valid: 1, reason: 'VALID' });
    for (const name of SERVICE_FIELDS) expect(adminService.result).toHaveProperty(name);

    const info = async () => (await t.call('/api/guest/serviceapikey/get_info', { key })).result;
    const first = await info();
    expect(keysOf(first)).toEqual(['config', 'reason', 'retry_after', 'rotating_until', 'usage', 'valid']);
    expect(first).toMatchObject({ valid: 1, config: custom, reason: 'VALID' });

    // FOSSBilling's order form: every key option again (different values), the custom parameters changed, one added.
    const updated = await adminForm('serviceapikey/update', {
      order_id: orderId,
      'config[length]': '64',
      'config[split]': '0',
      'config[split_interval]': '8',
      'config[case]': 'mixed',
      'config[custom_monthlyLimit]': '2000',
      'config[custom_tier]': 'max',
      'config[custom_region]': 'eu-west',
    });
    expect(updated.body).toEqual({ result: true, error: null });
    const after = { monthlyLimit: 2000, tier: 'max', region: 'eu-west' };
    expect((await info()).config).toEqual(after);
    expect((await t.admin('serviceapikey/get', { order_id: orderId })).result).toMatchObject({ api_key: key, config: after });
    expect((await t.admin('order/service', { id: orderId })).result).toMatchObject({ api_key: key, config: after });
    const clientAfter = (await t.call('/api/client/order/service', { id: orderId }, { basic })).result;
    expect(clientAfter).toMatchObject({ api_key: key, config: after, valid: 1 });
    expect(keysOf(clientAfter)).toEqual(SERVICE_RESULT);
    const list = (await t.call('/api/client/serviceapikey/get_list', {}, { basic })).result.list;
    expect(list).toHaveLength(1);
    expect(list[0].config).toEqual(after);

    // The options sent with the update changed nothing about the key: a reset still issues the product's form.
    const reset = await t.admin('serviceapikey/reset', { order_id: orderId });
    expect(reset.result).toMatch(/^[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}$/);
    expect((await t.call('/api/guest/serviceapikey/get_info', { key: reset.result })).result.config).toEqual(after);

    // A form with only the options (every custom field deleted) leaves no parameters, not the options.
    expect(
      (await adminForm('serviceapikey/update', { order_id: orderId, 'config[length]': '32', 'config[split]': '1', 'config[split_interval]': '8', 'config[case]': 'upper' })).body,
    ).toEqual({ result: true, error: null });
    expect((await t.admin('serviceapikey/get', { order_id: orderId })).result.config).toEqual({});
  });

  it("ignores key options sent as JSON too, in Tollgate's spelling, while storing parameters named directly", async () => {
    const productId = await flatProduct();
    const buyer = await t.createClient();
    const orderId = (await t.admin('order/create', { client_id: buyer.id, product_id: productId, activate: true })).result as number;
    const before = (await t.admin('serviceapikey/get', { order_id: orderId })).result;
    const reply = await t.admin('serviceapikey/update', {
      order_id: orderId,
      config: { length: 40, split: false, split_interval: 5, capitalization: 'uppercase', case: 'upper', enforce_limit: true, tier: 'gold', custom_seats: '5' },
    });
    expect(reply.body).toEqual({ result: true, error: null });
    const after = (await t.admin('serviceapikey/get', { order_id: orderId })).result;
    expect(after.config).toEqual({ tier: 'gold', seats: 5 });
    expect(after.api_key).toBe(before.api_key);
    // enforce_limit is a product option: it did not start enforcing a limit on this key.
    expect((await t.call('/api/guest/serviceapikey/get_info', { key: before.api_key })).result).toMatchObject({ valid: 1, config: { tier: 'gold', seats: 5 } });
  });

  it('still refuses bad custom parameters sent the FOSSBilling way', async () => {
    const productId = await flatProduct();
    const buyer = await t.createClient();
    const orderId = (await t.admin('order/create', { client_id: buyer.id, product_id: productId, activate: true })).result as number;
    const bad = await adminForm('serviceapikey/update', { order_id: orderId, 'config[length]': '32', 'config[custom_monthlyLimit]': '-5' });
    expect(bad.status).toBe(422);
    expect(bad.body.error?.message).toContain('config.monthlyLimit');
    // Nothing was stored.
    expect((await t.admin('serviceapikey/get', { order_id: orderId })).result.config).toEqual({ monthlyLimit: 1000, tier: 'pro' });
  });
});
