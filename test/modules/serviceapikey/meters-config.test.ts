// The meters of an apikey plan (issue 23 item 1): `config.meters` validated when the product is saved (422 naming the
// field, nothing stored), normalised to one shape, copied into the options of the order's keys at issue and on a
// plan change, and nothing new for a plan without meters. The first block drives the validator directly (every
// refusal and bound); the second goes through the admin API against a real database.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { normalizeMeters, type MeterOptions } from '../../../src/modules/serviceapikey/usage/meters-config.ts';
import { normalizeUsageOptions, usageOptionsOf } from '../../../src/modules/serviceapikey/usage/usage-plan.ts';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectInvalid } from '../../helpers/assertions.ts';
import { asClient, MONTHLY } from '../../helpers/selling-fixtures.ts';

const TOKENS = {
  code: 'tokens',
  name: ' Tokens ',
  unit: 'token',
  aggregation: 'sum',
  included: 1_000_000,
  overage: { mode: 'graduated', tiers: [{ up_to: 1_000_000, unit_price: '0.000002' }, { up_to: null, unit_price: '0.000001' }] },
};
const USERS = { code: 'users', name: 'Users', unit: 'user', aggregation: 'unique_count', property: 'user', included: 100, overage: { mode: 'per_unit', unit_price: '0.10' }, alerts: [100, 50] };
const REQUESTS = { code: 'requests', name: 'Requests', unit: 'request', aggregation: 'count', hard_limit: 50_000, filter: { model: 'large', beta: true, tier: 2 } };

const NORMALIZED: MeterOptions[] = [
  {
    code: 'tokens',
    name: 'Tokens',
    unit: 'token',
    aggregation: 'sum',
    included: 1_000_000,
    overage: { mode: 'graduated', tiers: [{ up_to: 1_000_000, unit_price: '0.000002' }, { up_to: null, unit_price: '0.000001' }] },
    hard_limit: null,
    alerts: [80, 100],
  },
  { code: 'users', name: 'Users', unit: 'user', aggregation: 'unique_count', property: 'user', included: 100, overage: { mode: 'per_unit', unit_price: '0.1' }, hard_limit: null, alerts: [50, 100] },
  { code: 'requests', name: 'Requests', unit: 'request', aggregation: 'count', filter: { model: 'large', beta: true, tier: 2 }, included: null, overage: null, hard_limit: 50_000, alerts: [80, 100] },
];

describe('meters validation', () => {
  const invalid = (meters: unknown, param: string) => {
    expect(() => normalizeMeters(meters), `${param} ${JSON.stringify(meters)?.slice(0, 120)}`).toThrow(expect.objectContaining({ message: expect.stringContaining(`"${param}"`) }));
  };
  const one = (changes: Record<string, unknown>) => [{ ...TOKENS, ...changes }];

  it('normalises meters to one stored shape, and reads that shape back unchanged', () => {
    expect(normalizeMeters([TOKENS, USERS, REQUESTS])).toEqual(NORMALIZED);
    expect(normalizeMeters(NORMALIZED)).toEqual(NORMALIZED);
    // volume pricing is offered on a meter; a count meter may be switched off with hard_limit 0.
    const volume = { mode: 'volume', tiers: [{ up_to: 10, unit_price: '1' }, { up_to: null, unit_price: '0.5' }] };
    expect(normalizeMeters([{ code: 'gb', name: 'Storage', unit: 'GB', aggregation: 'max', included: 0, overage: volume, hard_limit: 0, alerts: [] }])).toEqual([
      { code: 'gb', name: 'Storage', unit: 'GB', aggregation: 'max', included: 0, overage: volume, hard_limit: 0, alerts: [] },
    ]);
    expect(normalizeMeters([{ code: 'a', name: 'A', unit: 'u', aggregation: 'latest', included: '5', hard_limit: '7', alerts: null }])).toEqual([
      { code: 'a', name: 'A', unit: 'u', aggregation: 'latest', included: 5, overage: null, hard_limit: 7, alerts: [80, 100] },
    ]);
  });

  it('keeps a filter on a property named __proto__ as an ordinary pair', () => {
    const [meter] = normalizeMeters([{ ...REQUESTS, filter: JSON.parse('{"__proto__": "x", "model": "large"}') as unknown }])!;
    expect(JSON.stringify(meter!.filter)).toBe('{"__proto__":"x","model":"large"}');
    expect(Object.getPrototypeOf(meter!.filter)).toBe(Object.prototype);
  });

  it('a plan without meters gets none: absent, null and an empty list store nothing', () => {
    for (const meters of [undefined, null, '', []]) expect(normalizeMeters(meters)).toBeUndefined();
    expect(normalizeUsageOptions({ included: 10 })).toEqual({ included: 10 });
    expect(normalizeUsageOptions({ meters: [] })).toEqual({});
    expect(normalizeUsageOptions({ meters: [REQUESTS] })).toEqual({ meters: [NORMALIZED[2]] });
  });

  it("reads a key's meters apart from its other usage options: unreadable meters drop alone", () => {
    expect(usageOptionsOf({ included: 10, meters: [REQUESTS] })).toEqual({ included: 10, meters: [NORMALIZED[2]] });
    expect(usageOptionsOf({ included: 10, hard_limit: 20, meters: [{ ...REQUESTS, aggregation: 'median' }] })).toEqual({ included: 10, hard_limit: 20 });
    expect(usageOptionsOf({ included: -1, meters: [REQUESTS] })).toEqual({ meters: [NORMALIZED[2]] });
  });

  it('refuses bad meters naming the field', () => {
    invalid('tokens', 'config.meters');
    invalid({ code: 'x' }, 'config.meters');
    invalid(['tokens'], 'config.meters[0]');
    invalid([TOKENS, { ...USERS, code: 'Users' }], 'config.meters[1].code');
    invalid(one({ code: undefined }), 'config.meters[0].code');
    invalid(one({ code: '1tokens' }), 'config.meters[0].code');
    invalid(one({ code: 'to-kens' }), 'config.meters[0].code');
    invalid(one({ code: 'a'.repeat(41) }), 'config.meters[0].code');
    invalid(one({ code: 'calls' }), 'config.meters[0].code');
    invalid([TOKENS, USERS, { ...REQUESTS, code: 'tokens' }], 'config.meters[2].code');
    invalid(one({ name: '' }), 'config.meters[0].name');
    invalid(one({ name: '   ' }), 'config.meters[0].name');
    invalid(one({ name: 7 }), 'config.meters[0].name');
    invalid(one({ name: 'n'.repeat(101) }), 'config.meters[0].name');
    invalid(one({ unit: undefined }), 'config.meters[0].unit');
    invalid(one({ unit: 'u'.repeat(101) }), 'config.meters[0].unit');
    invalid(one({ aggregation: 'avg' }), 'config.meters[0].aggregation');
    invalid(one({ aggregation: undefined }), 'config.meters[0].aggregation');
    invalid([{ ...USERS, property: undefined }], 'config.meters[0].property');
    invalid([{ ...USERS, property: 'p'.repeat(101) }], 'config.meters[0].property');
    invalid(one({ property: 'user' }), 'config.meters[0].property');
    invalid(one({ filter: 'model=large' }), 'config.meters[0].filter');
    invalid(one({ filter: [['model', 'large']] }), 'config.meters[0].filter');
    invalid(one({ filter: { model: { name: 'large' } } }), 'config.meters[0].filter.model');
    invalid(one({ filter: { model: ['large'] } }), 'config.meters[0].filter.model');
    invalid(one({ filter: { model: null } }), 'config.meters[0].filter.model');
    invalid(one({ filter: { tier: Number.NaN } }), 'config.meters[0].filter.tier');
    invalid(one({ filter: { model: 'm'.repeat(101) } }), 'config.meters[0].filter.model');
    invalid(one({ filter: { ['p'.repeat(101)]: 'x' } }), 'config.meters[0].filter');
    invalid(one({ filter: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`p${i}`, i])) }), 'config.meters[0].filter');
    invalid(one({ included: -1 }), 'config.meters[0].included');
    invalid(one({ included: 1.5 }), 'config.meters[0].included');
    invalid(one({ included: 'many' }), 'config.meters[0].included');
    invalid(one({ included: null }), 'config.meters[0].included');
    invalid(one({ hard_limit: -1 }), 'config.meters[0].hard_limit');
    invalid(one({ hard_limit: 999_999 }), 'config.meters[0].hard_limit');
    invalid(one({ overage: 'cheap' }), 'config.meters[0].overage');
    invalid(one({ overage: { mode: 'auction' } }), 'config.meters[0].overage.mode');
    invalid(one({ overage: { mode: 'per_unit', unit_price: '0.0000001' } }), 'config.meters[0].overage.unit_price');
    invalid(one({ overage: { mode: 'package', package_size: 0, package_price: '1' } }), 'config.meters[0].overage.package_size');
    invalid(one({ overage: { mode: 'graduated', tiers: [{ up_to: 5, unit_price: '1' }] } }), 'config.meters[0].overage.tiers[0].up_to');
    invalid(one({ overage: { mode: 'volume', tiers: [{ up_to: null, unit_price: 'x' }] } }), 'config.meters[0].overage.tiers[0].unit_price');
    invalid(one({ alerts: 80 }), 'config.meters[0].alerts');
    invalid(one({ alerts: [0] }), 'config.meters[0].alerts[0]');
    invalid(one({ alerts: [50, 101] }), 'config.meters[0].alerts[1]');
    invalid(one({ alerts: [50.5] }), 'config.meters[0].alerts[0]');
    invalid(one({ alerts: ['80'] }), 'config.meters[0].alerts[0]');
    invalid(one({ alerts: [80, 90, 80] }), 'config.meters[0].alerts[2]');
    invalid(one({ alerts: Array.from({ length: 11 }, (_, i) => i + 1) }), 'config.meters[0].alerts');
    invalid(one({ colour: 'blue' }), 'config.meters[0].colour');
    invalid(
      Array.from({ length: 21 }, (_, i) => ({ ...REQUESTS, code: `m${i}` })),
      'config.meters',
    );
    expect(normalizeMeters(Array.from({ length: 20 }, (_, i) => ({ ...REQUESTS, code: `m${i}` })))).toHaveLength(20);
  });
});

describe('meters on a product, over HTTP', () => {
  let t: TestApp;
  let client: Awaited<ReturnType<TestApp['createClient']>>;

  beforeAll(async () => {
    t = await createTestApp();
    client = await t.createClient();
  });
  afterAll(async () => {
    await t.close();
  });

  async function plan(config: Record<string, unknown>, monthly = '10.00'): Promise<number> {
    const id = (await t.admin('product/prepare', { title: `Metered ${Math.random()}`, type: 'apikey' })).result as number;
    const pricing = { ...MONTHLY, recurrent: { '1M': { ...MONTHLY.recurrent['1M'], price: monthly } } };
    const updated = await t.admin('product/update', { id, status: 'enabled', pricing, config });
    expect(updated.body).toEqual({ result: true, error: null });
    return id;
  }
  const storedConfig = async (id: number) => (await t.admin('product/get', { id })).result.config as Record<string, unknown>;
  async function keyOptions(orderId: number): Promise<Record<string, unknown>> {
    const row = await t.services.db.selectFrom('api_keys').select('options').where('order_id', '=', orderId).executeTakeFirstOrThrow();
    return JSON.parse(row.options) as Record<string, unknown>;
  }
  async function buy(productId: number, buyer = client): Promise<number> {
    const created = await t.admin('order/create', { client_id: buyer.id, product_id: productId, activate: true, period: '1M' });
    expect(created.body.error).toBeNull();
    return created.result as number;
  }

  it('stores the normalised meters, keeps them when other options are saved, and counts by the billing period', async () => {
    const id = await plan({ included: 1000, meters: [TOKENS, USERS, REQUESTS] });
    const config = await storedConfig(id);
    expect(config.meters).toEqual(NORMALIZED);
    expect(config).toMatchObject({ included: 1000, usage_period: 'billing_period' });
    // The product module merges what is sent into what is stored, and the stored shape validates again.
    await t.admin('product/update', { id, config: { length: 40 } });
    expect(await storedConfig(id)).toMatchObject({ length: 40, meters: NORMALIZED });
    // Buyers read the meters before paying, with the plan's other usage terms (product-type.ts publicConfig).
    expect((await t.call('/api/guest/product/get', { id })).result.config).toEqual({ custom: {}, included: 1000, usage_period: 'billing_period', meters: NORMALIZED });
    // A plan with meters alone is priced by use: it counts by its billing period too (product-type.ts).
    expect(await storedConfig(await plan({ meters: [REQUESTS] }))).toMatchObject({ usage_period: 'billing_period', meters: [NORMALIZED[2]] });
  });

  it('refuses a bad meter with a 422 naming the field, and stores nothing of it', async () => {
    const id = await plan({ meters: [TOKENS] });
    const bad: Array<[unknown, string]> = [
      [[TOKENS, { ...USERS, code: 'Users' }], 'config.meters[1].code'],
      [[TOKENS, { ...USERS, code: 'calls' }], 'config.meters[1].code'],
      [[TOKENS, { ...TOKENS, name: 'Again' }], 'config.meters[1].code'],
      [[{ ...USERS, property: undefined }], 'config.meters[0].property'],
      [[{ ...REQUESTS, filter: { model: { deep: true } } }], 'config.meters[0].filter.model'],
      [[{ ...TOKENS, alerts: [80, 80] }], 'config.meters[0].alerts[1]'],
      [[{ ...TOKENS, aggregation: 'median' }], 'config.meters[0].aggregation'],
      [Array.from({ length: 21 }, (_, i) => ({ ...REQUESTS, code: `m${i}` })), 'config.meters'],
      ['tokens', 'config.meters'],
    ];
    for (const [meters, param] of bad) expectInvalid(await t.admin('product/update', { id, config: { meters } }), param);
    // The top-level calls overage keeps CONTRACT §12's three modes.
    expectInvalid(await t.admin('product/update', { id, config: { included: 5, overage: { mode: 'volume', tiers: [{ up_to: null, unit_price: '1' }] } } }), 'config.overage.mode');
    expect((await storedConfig(id)).meters).toEqual([NORMALIZED[0]]);
  });

  it("copies the meters into the options of the order's keys, as the other usage options", async () => {
    const id = await plan({ included: 10, meters: [TOKENS, REQUESTS] });
    const orderId = await buy(id);
    expect(await keyOptions(orderId)).toMatchObject({ included: 10, meters: [NORMALIZED[0], NORMALIZED[2]] });
    // A second key of the order carries them too.
    await t.admin('product/update', { id, config: { max_keys: 2 } });
    const other = await buy(id);
    const created = await t.admin('serviceapikey/create', { order_id: other });
    expect(created.body.error).toBeNull();
    const rows = await t.services.db.selectFrom('api_keys').select('options').where('order_id', '=', other).execute();
    expect(rows).toHaveLength(2);
    for (const row of rows) expect((JSON.parse(row.options) as Record<string, unknown>).meters).toEqual([NORMALIZED[0], NORMALIZED[2]]);
  });

  it('changes nothing for a plan without meters: no meters in its config or its keys', async () => {
    const id = await plan({ included: 10 });
    expect(await storedConfig(id)).not.toHaveProperty('meters');
    expect(await keyOptions(await buy(id))).not.toHaveProperty('meters');
    // Sending an empty list removes a plan's meters.
    const metered = await plan({ meters: [TOKENS] });
    await t.admin('product/update', { id: metered, config: { meters: [] } });
    expect(await storedConfig(metered)).not.toHaveProperty('meters');
  });

  it("a plan change gives the order's keys the new plan's meters, and takes away meters the new plan lacks", async () => {
    const buyer = await t.createClient();
    const first = await plan({ meters: [TOKENS] });
    // Each plan dearer than the last: an upgrade applies at once (CONTRACT §8), a downgrade only at the renewal.
    const second = await plan({ meters: [USERS] }, '20.00');
    const plain = await plan({ included: 50 }, '30.00');
    const orderId = await buy(first, buyer);
    expect((await keyOptions(orderId)).meters).toEqual([NORMALIZED[0]]);
    for (const [productId, meters] of [
      [second, [NORMALIZED[1]]],
      [plain, undefined],
    ] as const) {
      const changed = await asClient(t, buyer.token, 'order/change_plan', { id: orderId, product_id: productId, period: '1M' });
      expect(changed.body.error).toBeNull();
      if (changed.result.invoice_id !== null) await t.admin('invoice/mark_as_paid', { id: changed.result.invoice_id });
      expect((await t.admin('order/get', { id: orderId })).result.product_id).toBe(productId);
      expect((await keyOptions(orderId)).meters).toEqual(meters);
    }
  });
});
