// Issue 8 item 4: a body nested thousands of levels deep overflowed the stack in validation or serialisation (500).
// Nesting deeper than 32 is refused with the 400 envelope before anything walks it, in JSON, urlencoded forms,
// multipart forms and query strings alike; 32 levels still work.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonTooDeep, MAX_NESTING } from '../../src/http/depth.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { expectError } from '../helpers/assertions.ts';
import { makeProduct } from '../helpers/selling-fixtures.ts';

/** `{"a": {"a": … "leaf"}}` with `levels` objects, or the same with arrays. */
function nested(levels: number, kind: 'object' | 'array' = 'object'): unknown {
  let value: unknown = 'leaf';
  for (let i = 0; i < levels; i++) value = kind === 'object' ? { a: value } : [value];
  return value;
}

/** JSON text of a value `levels` objects or arrays deep, built as text (JSON.stringify itself would overflow). */
function deepJson(levels: number, kind: 'object' | 'array'): string {
  const [open, close] = kind === 'object' ? ['{"a":', '}'] : ['[', ']'];
  return `${open.repeat(levels)}"leaf"${close.repeat(levels)}`;
}

/** A bracketed form name `name[a][a]…` with `levels` brackets. */
const bracketed = (name: string, levels: number) => `${name}${'[a]'.repeat(levels)}`;

function multipart(fields: Array<[string, string]>): { body: string; contentType: string } {
  const boundary = '----tollgate-depth-boundary';
  const parts = fields.map(([name, value]) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`);
  return { body: `${parts.join('')}--${boundary}--\r\n`, contentType: `multipart/form-data; boundary=${boundary}` };
}

describe('the depth scan', () => {
  it('counts only brackets outside strings, escapes included', () => {
    expect(jsonTooDeep('{"a":"[[[[[[[[[[[[[[[["}', 2)).toBe(false);
    expect(jsonTooDeep('{"a":"\\"[[[[["}', 1)).toBe(false);
    expect(jsonTooDeep('{"a":[[1]]}', 2)).toBe(true);
    expect(jsonTooDeep('{"a":[[1]]}', 3)).toBe(false);
    expect(jsonTooDeep(`${'['.repeat(1_000_000)}${']'.repeat(1_000_000)}`, 33)).toBe(true);
  });
});

describe('deep nesting is refused with the envelope, never a 500', () => {
  let t: TestApp;
  let productId: number;
  const basic: [string, string] = ['admin', ''];

  beforeAll(async () => {
    t = await createTestApp();
    basic[1] = t.adminToken;
    productId = await makeProduct(t, { type: 'apikey' });
  });
  afterAll(async () => {
    await t.close();
  });

  const raw = (path: string, body: string, contentType = 'application/json') => t.call(path, {}, { basic, raw: { body, contentType } });

  it.each([
    ['config.custom (objects)', '/api/admin/product/update_config', 'object', (deep: string) => `"config":{"custom":{"x":${deep}}}`],
    ['config.custom (arrays)', '/api/admin/product/update_config', 'array', (deep: string) => `"config":{"custom":{"x":${deep}}}`],
    ['pricing (arrays)', '/api/admin/product/update', 'array', (deep: string) => `"pricing":${deep}`],
    ['pricing (objects)', '/api/admin/product/update', 'object', (deep: string) => `"pricing":${deep}`],
    ['config of a product (objects)', '/api/admin/product/update', 'object', (deep: string) => `"config":${deep}`],
    ['a guest parameter', '/api/guest/serviceapikey/check', 'array', (deep: string) => `"key":${deep}`],
  ] as const)('JSON 5,000 levels deep in %s → 400', async (_label, path, kind, field) => {
    const reply = await raw(path, `{"id":${productId},${field(deepJson(5000, kind))}}`);
    expectError(reply, 400);
    expect(reply.body.error!.message).toMatch(/deeper than 32/);
  });

  it('config.custom 32 levels deep (counting config) is accepted and stored; 33 is refused', async () => {
    const ok = await t.admin('product/update_config', { id: productId, config: { custom: { deep: nested(MAX_NESTING - 2) } } });
    expect(ok.body).toEqual({ result: true, error: null });
    const stored = (await t.admin('product/get', { id: productId })).result as { config: { custom: { deep: unknown } } };
    expect(stored.config.custom.deep).toEqual(nested(MAX_NESTING - 2));

    const refused = await t.admin('product/update_config', { id: productId, config: { custom: { deep: nested(MAX_NESTING - 1) } } });
    expectError(refused, 400);
    expect(((await t.admin('product/get', { id: productId })).result as typeof stored).config.custom.deep).toEqual(nested(MAX_NESTING - 2));
  });

  it('urlencoded brackets deeper than 32 → 400; 32 still parse', async () => {
    const form = (levels: number) => `id=${productId}&${encodeURIComponent(bracketed('config', levels))}=x`;
    expectError(await raw('/api/admin/product/update_config', form(MAX_NESTING + 1), 'application/x-www-form-urlencoded'), 400);
    expectError(await raw('/api/admin/product/update_config', form(5000), 'application/x-www-form-urlencoded'), 400);
    // 32 brackets parse; the value is not a valid config (config.a is not a custom parameter), so the answer is a
    // normal 422 or 200 from the action — never the depth refusal.
    const atLimit = await raw('/api/admin/product/update_config', form(MAX_NESTING), 'application/x-www-form-urlencoded');
    expect(atLimit.status).not.toBe(500);
    expect(atLimit.body.error?.message ?? '').not.toMatch(/deeper than/);
  });

  it('multipart fields deeper than 32 → 400', async () => {
    const body = multipart([
      ['id', String(productId)],
      [bracketed('config', MAX_NESTING + 1), 'x'],
    ]);
    const reply = await raw('/api/admin/product/update_config', body.body, body.contentType);
    expectError(reply, 400);
    expect(reply.body.error!.message).toMatch(/deeper than 32/);
  });

  it('a query string deeper than 32 → 400 on GET, for guests and staff', async () => {
    const query = `${encodeURIComponent(bracketed('key', 5000))}=x`;
    const guest = await t.app.inject({ method: 'GET', url: `/api/guest/serviceapikey/check?${query}` });
    expect(guest.statusCode).toBe(400);
    expect(guest.json()).toEqual({ result: null, error: { message: expect.stringMatching(/query string nests deeper than 32/), code: 400 } });
    const staff = await t.app.inject({
      method: 'GET',
      url: `/api/admin/product/get?id=${productId}&${encodeURIComponent(bracketed('x', MAX_NESTING + 1))}=1`,
      headers: { authorization: `Basic ${Buffer.from(`admin:${t.adminToken}`).toString('base64')}` },
    });
    expect(staff.statusCode).toBe(400);
    expect(staff.json().error.code).toBe(400);
  });
});
