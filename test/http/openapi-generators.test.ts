// Issue 21 item 11: the OpenAPI document as served works with the mainstream client generators. Each of
// openapi-typescript 7 (+ openapi-fetch), @hey-api/openapi-ts and orval (the last releases that run on Node 20, pinned
// in test/generators/package.json) generates a client from /api/openapi.json; the project's tsc (TypeScript 7)
// type-checks a purchase flow written with each, without casts (test/generators/flows/); then the three flows run
// against this server: a plan priced, bought, paid, its key valid, then switched off with `valid: 0`.
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { expectError, expectInvalid } from '../helpers/assertions.ts';
import { generatorFile as bin } from '../helpers/generators.ts';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');
const GENERATORS = join(ROOT, 'test/generators');

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- walking a JSON document

describe('client generators on /api/openapi.json (issue 21 item 11)', () => {
  let t: TestApp;
  let baseUrl: string;
  let dir: string;
  let doc: Json;

  beforeAll(async () => {
    t = await createTestApp();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    // The document as served over HTTP, not as built in process.
    const served = await fetch(`${baseUrl}/api/openapi.json`);
    expect(served.status).toBe(200);
    const text = await served.text();
    doc = JSON.parse(text) as Json;
    dir = await mkdtemp(join(tmpdir(), 'tollgate-generators-'));
    await writeFile(join(dir, 'openapi.json'), text);
    await cp(join(GENERATORS, 'flows'), dir, { recursive: true });
    await symlink(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
    await writeFile(join(dir, 'package.json'), '{"type": "module", "private": true}\n');
    await writeFile(
      join(dir, 'orval.config.cjs'),
      `module.exports = { tollgate: { input: './openapi.json', output: { target: './orval/api.ts', client: 'fetch', mode: 'single', baseUrl: ${JSON.stringify(baseUrl)} } } };\n`,
    );
  });
  afterAll(async () => {
    await t.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('generates with each generator, and the project tsc type-checks a purchase flow with each, no casts', async () => {
    const generate = async (name: string, file: string, args: string[]) =>
      run(process.execPath, [file, ...args], { cwd: dir, maxBuffer: 16 * 1024 * 1024, env: { ...process.env, NO_COLOR: '1' } }).catch((error: { stdout?: string; stderr?: string }) => {
        throw new Error(`${name} failed:\n${error.stdout?.slice(0, 3000)}\n${error.stderr?.slice(0, 3000)}`);
      });
    await Promise.all([
      generate('openapi-typescript', await bin('openapi-typescript', 'bin/cli.js'), ['openapi.json', '-o', 'openapi-typescript/api.d.ts']),
      generate('@hey-api/openapi-ts', await bin('@hey-api/openapi-ts', 'bin/run.js'), ['-i', 'openapi.json', '-o', 'hey-api', '-c', '@hey-api/client-fetch']),
      generate('orval', await bin('orval', 'dist/bin/orval.js'), ['--config', 'orval.config.cjs']),
    ]);
    await writeFile(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          target: 'es2022',
          module: 'nodenext',
          moduleResolution: 'nodenext',
          noUncheckedIndexedAccess: true,
          allowImportingTsExtensions: true,
          skipLibCheck: true,
          types: ['node'],
          lib: ['es2022', 'dom'],
        },
        files: ['run.ts'],
      }),
    );
    await run(join(ROOT, 'node_modules/.bin/tsc'), ['-p', join(dir, 'tsconfig.json')], { cwd: dir, maxBuffer: 16 * 1024 * 1024 }).catch((error: { stdout?: string }) => {
      throw new Error(`tsc failed on a generated client:\n${error.stdout?.slice(0, 6000)}`);
    });
    // No cast anywhere in the flows: what type-checks is what the document says.
    for (const flow of ['openapi-fetch.ts', 'hey-api.ts', 'orval.ts']) {
      const code = (await readFile(join(dir, flow), 'utf8')).replace(/\/\/.*$/gm, '');
      expect(code, flow).not.toMatch(/\bas (?!const\b)[A-Za-z{]|<any>|: any\b/);
    }
  }, 60_000);

  it('runs the three purchase flows against this server: priced, bought, paid, valid, then switched off with valid: 0', async () => {
    const client = await t.createClient();
    const env = { ...process.env, TOLLGATE_URL: baseUrl, TOLLGATE_CLIENT_TOKEN: client.token, TOLLGATE_ADMIN_TOKEN: t.adminToken };
    const { stdout } = await run(join(ROOT, 'node_modules/.bin/tsx'), ['run.ts'], { cwd: dir, env }).catch((error: { stdout?: string; stderr?: string }) => {
      throw new Error(`a generated client's flow failed:\n${error.stdout?.slice(0, 3000)}\n${error.stderr?.slice(0, 3000)}`);
    });
    const outcome = { total: '12.50', validAfterPayment: true, validAfterDisable: false };
    expect(JSON.parse(stdout)).toEqual({ 'openapi-fetch': outcome, 'hey-api': outcome, orval: outcome });
  }, 60_000);

  it('orval sends Content-Type: application/json on every POST with a body, and writes no status ranges', async () => {
    const code = await readFile(join(dir, 'orval/api.ts'), 'utf8');
    expect(code).not.toMatch(/\b5XX\b/);
    const posts = [...code.matchAll(/method: 'POST'([\s\S]*?)\n\s*}\n\)/g)].map((match) => match[1]!);
    const withBody = posts.filter((call) => call.includes('body: JSON.stringify('));
    expect(withBody.length).toBeGreaterThan(100);
    expect(withBody.filter((call) => !call.includes("'Content-Type': 'application/json'"))).toEqual([]);
  });

  it('declares 500, 502 and 503 (never 5XX), and every request body as a referenced component listing JSON first', () => {
    const operations = Object.values(doc.paths as Json).flatMap((item) => Object.values(item as Json) as Json[]);
    expect(JSON.stringify(doc)).not.toContain('5XX');
    for (const op of operations) {
      if (op.operationId === 'metrics' || op.operationId === 'openapi_document' || op.operationId === 'api_reference') continue;
      expect(Object.keys(op.responses), op.operationId).toEqual(expect.arrayContaining(['500', '502', '503']));
      if (op.requestBody === undefined || op.operationId === 'provider_webhook') continue;
      expect(op.requestBody, op.operationId).toEqual({ $ref: `#/components/requestBodies/${op.operationId}` });
      expect(Object.keys(doc.components.requestBodies[op.operationId].content)[0], op.operationId).toBe('application/json');
    }
    // Fastify's own body while closing, not the envelope: described, not typed, so clients keep one error type.
    expect(doc.components.responses.ServiceUnavailable.content).toBeUndefined();
    expect(doc.components.responses.ServerError.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/ErrorEnvelope' });
  });

  it('types pricing (closed objects), valid as boolean | 0 | 1, and maps as additionalProperties', () => {
    const body = (id: string) => doc.components.requestBodies[id].content['application/json'].schema as Json;
    const pricing = body('admin_product_update').properties.pricing as Json;
    expect(pricing.additionalProperties).toBe(false);
    // `prices` (issue 26): own prices per other currency, as closed as the default ones.
    expect(Object.keys(pricing.properties)).toEqual(['prices', 'type', 'once', 'recurrent']);
    expect(pricing.properties.recurrent.additionalProperties.additionalProperties).toBe(false);
    expect(pricing.properties.prices.additionalProperties.additionalProperties).toBe(false);
    expect(body('admin_serviceapikey_update').properties.valid.anyOf).toEqual([{ type: 'boolean' }, { type: 'integer', enum: [0, 1] }]);
    expect(body('admin_serviceapikey_update').properties.config).toEqual({ type: 'object', additionalProperties: {} });
    expect(JSON.stringify(doc)).not.toContain('patternProperties');
    // Results keep plain booleans: only what the gateway reads is widened.
    expect(doc.components.schemas.Invoice.properties).not.toHaveProperty('valid');
    const check = doc.paths['/api/guest/serviceapikey/check'].post.responses['200'].content['application/json'].schema;
    expect(check.properties.result).toEqual({ type: 'boolean' });
  });
});

describe('the server refuses what the document refuses (issue 21 item 11)', () => {
  let t: TestApp;
  let product: number;

  beforeAll(async () => {
    t = await createTestApp();
    product = (await t.admin('product/prepare', { title: 'Typed pricing', type: 'custom' })).result as number;
  });
  afterAll(async () => {
    await t.close();
  });

  const pricingOf = async () => (await t.admin('product/get', { id: product })).result.pricing as Json;

  it('refuses an unknown pricing key with a 422 naming it, at any depth, and changes nothing', async () => {
    expect((await t.admin('product/update', { id: product, pricing: { type: 'once', once: { price: '5.00', setup: '0' } } })).result).toBe(true);
    const before = await pricingOf();
    expectInvalid(await t.admin('product/update', { id: product, pricing: { tpye: 'recurrent' } }), 'pricing.tpye');
    expectInvalid(await t.admin('product/update', { id: product, pricing: { once: { price: '1.00', setpu: '1' } } }), 'pricing.once.setpu');
    expectInvalid(await t.admin('product/update', { id: product, pricing: { recurrent: { '1M': { price: '1.00', enabeld: true } } } }), 'pricing.recurrent.1M.enabeld');
    expectInvalid(await t.admin('product/update', { id: product, pricing: { type: 'weekly' } }), 'pricing.type');
    expectInvalid(await t.admin('product/update', { id: product, pricing: 'free' }), 'pricing');
    expectInvalid(await t.admin('product/update', { id: product, pricing: { once: { price: true } } }), 'pricing.once.price');
    expect(await pricingOf()).toEqual(before);
  });

  it('still takes what it took: amounts as numbers or strings, enabled as 0/1 or "1", the form and the view it answers', async () => {
    expect((await t.admin('product/update', { id: product, pricing: { type: 'recurrent', recurrent: { '1M': { price: 10, setup: '1.5', enabled: 1 }, '1Y': { price: '100', enabled: 0 } } } })).result).toBe(true);
    expect(await pricingOf()).toEqual({
      type: 'recurrent',
      once: { price: '5.00', setup: '0.00' },
      recurrent: { '1M': { price: '10.00', setup: '1.50', enabled: true }, '1Y': { price: '100.00', setup: '0.00', enabled: false } },
      prices: {},
    });
    const form = await t.call('/api/admin/product/update', {}, {
      basic: ['admin', t.adminToken],
      raw: { body: `id=${product}&pricing[type]=recurrent&pricing[recurrent][3M][price]=25&pricing[recurrent][3M][enabled]=1`, contentType: 'application/x-www-form-urlencoded' },
    });
    expect(form.status, JSON.stringify(form.body)).toBe(200);
    expect((await pricingOf()).recurrent).toEqual({ '3M': { price: '25.00', setup: '0.00', enabled: true } });
    // The pricing admin/product/get answers goes back unchanged.
    const view = await pricingOf();
    expect((await t.admin('product/update', { id: product, pricing: view })).result).toBe(true);
    expect(await pricingOf()).toEqual(view);
    expectInvalid(await t.admin('product/update', { id: product, pricing: { recurrent: { '13X': { price: '1' } } } }), 'pricing.recurrent.13X');
  });

  it('takes valid as true/false, 0/1 and "0"/"1" on admin/serviceapikey/update, and refuses 2 with a 422', async () => {
    const plan = (await t.admin('product/prepare', { title: 'Keys', type: 'apikey' })).result as number;
    expect((await t.admin('product/update', { id: plan, status: 'enabled' })).result).toBe(true);
    const client = await t.createClient();
    const order = (await t.admin('order/create', { client_id: client.id, product_id: plan, activate: true })).result as number;
    const key = (await t.admin('serviceapikey/get', { order_id: order })).result.api_key as string;
    const valid = async () => (await t.call('/api/guest/serviceapikey/check', { key })).result as boolean;
    for (const [sent, expected] of [[0, false], [1, true], ['0', false], ['1', true], [false, false], [true, true]] as const) {
      expect((await t.admin('serviceapikey/update', { order_id: order, valid: sent })).result, String(sent)).toBe(true);
      expect(await valid(), String(sent)).toBe(expected);
    }
    expectInvalid(await t.admin('serviceapikey/update', { order_id: order, valid: 2 }), 'valid');
    expect(await valid()).toBe(true);
    expectError(await t.call('/api/admin/serviceapikey/update', { order_id: order, valid: 0 }, { basic: ['client', client.token] }), 203, 401);
  });
});
