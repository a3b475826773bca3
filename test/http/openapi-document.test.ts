// The OpenAPI document generators can use (CONTRACT §11): its shape, Redocly's recommended rules, types generated
// with openapi-typescript checked against a client written with openapi-fetch, and the rendered reference.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listActions } from '../../src/http/gateway.ts';
import { modules } from '../../src/modules/index.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { generatorFile } from '../helpers/generators.ts';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');
const PUBLIC_URL = 'https://billing.tollgate.test';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- walking a JSON document

describe('OpenAPI document', () => {
  let t: TestApp;
  let doc: Json;
  let dir: string;

  beforeAll(async () => {
    t = await createTestApp({ PUBLIC_URL: `${PUBLIC_URL}/` });
    const reply = await t.app.inject({ method: 'GET', url: '/api/openapi.json' });
    expect(reply.statusCode).toBe(200);
    doc = reply.json();
    dir = await mkdtemp(join(tmpdir(), 'tollgate-openapi-'));
    await writeFile(join(dir, 'openapi.json'), JSON.stringify(doc));
  });
  afterAll(async () => {
    await t.close();
    await rm(dir, { recursive: true, force: true });
  });

  const operations = (): Array<{ path: string; method: string; op: Json }> =>
    Object.entries(doc.paths as Json).flatMap(([path, item]) => Object.entries(item as Json).map(([method, op]) => ({ path, method, op: op as Json })));

  it('has servers from PUBLIC_URL, and every operation a unique operationId, a tag with a description and a summary', () => {
    expect(doc.servers).toEqual([{ url: PUBLIC_URL, description: expect.any(String) }]);
    const ids = operations().map(({ op }) => op.operationId as string);
    expect(new Set(ids).size).toBe(ids.length);
    const described = new Map((doc.tags as Json[]).map((tag) => [tag.name as string, tag.description as string]));
    for (const { path, method, op } of operations()) {
      expect(op.tags, `${method} ${path}`).toHaveLength(1);
      expect(described.get(op.tags[0])?.length ?? 0, `tag ${op.tags[0]}`).toBeGreaterThan(10);
      expect(String(op.summary ?? '').length, `${method} ${path}`).toBeGreaterThan(5);
    }
  });

  it('names each action <role>_<module>_<action> (POST), its GET twin <…>_via_get, and takes GET only where credentials do not travel', () => {
    for (const { role, module, action, def } of listActions(modules)) {
      const item = doc.paths[`/api/${role}/${module}/${action}`] as Json;
      expect(item.post.operationId).toBe(`${role}_${module}_${action}`);
      if (def.postOnly === true) expect(item.get).toBeUndefined();
      else expect(item.get.operationId).toBe(`${role}_${module}_${action}_via_get`);
    }
  });

  it('types the 200 answer by the result schema, shared schemas as components, and files as their media type', () => {
    const ok = (path: string) => doc.paths[path].post.responses['200'].content;
    expect(ok('/api/admin/invoice/get')['application/json'].schema).toEqual({
      type: 'object',
      required: ['result', 'error'],
      properties: { result: { $ref: '#/components/schemas/Invoice' }, error: { type: 'null' } },
    });
    const invoice = doc.components.schemas.Invoice as Json;
    expect(invoice.properties.total).toMatchObject({ type: 'string', pattern: expect.any(String) });
    expect(invoice.properties.paid_at.anyOf).toEqual([{ type: 'string', format: 'date-time' }, { type: 'null' }]);
    expect(Object.keys(ok('/api/client/invoice/pdf'))).toEqual(['application/pdf']);
    expect(ok('/api/client/order/get_list')['application/json'].schema.properties.result.properties.list.items).toEqual({ $ref: '#/components/schemas/Order' });
  });

  it('declares the error envelope per status: 401 and 403 for accounts, never 401 for guests, 413 on POST only, 429 with Retry-After', () => {
    const responses = (path: string, method: string) => doc.paths[path][method].responses as Json;
    expect(Object.keys(responses('/api/admin/invoice/get', 'post'))).toEqual(['200', '400', '401', '403', '404', '409', '413', '422', '429', '500', '502', '503']);
    expect(Object.keys(responses('/api/admin/invoice/get', 'get'))).not.toContain('413');
    expect(Object.keys(responses('/api/guest/product/get_list', 'post'))).not.toContain('401');
    expect(responses('/api/client/order/get', 'post')['404']).toEqual({ $ref: '#/components/responses/NotFound' });
    const tooMany = doc.components.responses.TooManyRequests as Json;
    expect(tooMany.headers['Retry-After']).toBeDefined();
    expect(tooMany.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/ErrorEnvelope' });
    expect(doc.components.responses.Unauthorized.description).toContain('205');
  });

  it('takes JSON, form and multipart bodies, with nested form fields and query parameters as deepObject', () => {
    // Bodies are components the operation refers to (test/http/openapi-generators.test.ts says why).
    const bodyOf = (path: string): Json => doc.components.requestBodies[(doc.paths[path].post.requestBody.$ref as string).split('/').pop()!] as Json;
    const body = bodyOf('/api/admin/order/create');
    expect(Object.keys(body.content)).toEqual(['application/json', 'application/x-www-form-urlencoded', 'multipart/form-data']);
    expect(body.required).toBe(true);
    // An action with an object parameter: found rather than named, so the test follows the registry.
    const nested = listActions(modules).find(({ def }) => Object.values(def.params.properties).some((p) => (p as Json).type === 'object'));
    expect(nested).toBeDefined();
    const { role, module, action, def } = nested!;
    const name = Object.entries(def.params.properties).find(([, p]) => (p as Json).type === 'object')![0];
    const item = doc.paths[`/api/${role}/${module}/${action}`] as Json;
    expect(bodyOf(`/api/${role}/${module}/${action}`).content['multipart/form-data'].encoding[name]).toEqual({ style: 'deepObject', explode: true });
    if (item.get !== undefined) expect(item.get.parameters.find((p: Json) => p.name === name)).toMatchObject({ in: 'query', style: 'deepObject', explode: true });
    expect(doc.paths['/api/guest/system/version'].post.requestBody).toBeUndefined();
  });

  it('documents the events stream, provider webhooks and metrics', () => {
    expect(doc.paths['/api/admin/serviceapikey/events'].get.responses['200'].content['text/event-stream']).toBeDefined();
    expect(doc.paths['/webhooks/{gateway}'].post.parameters[0]).toMatchObject({ name: 'gateway', in: 'path', required: true });
    expect(doc.paths['/metrics'].get.security).toEqual([{ metricsToken: [] }]);
  });

  it('passes redocly lint with the recommended rules: no errors, and only the warnings redocly.yaml explains', async () => {
    const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' };
    const out = join(dir, 'lint.json');
    const redocly = join(ROOT, 'node_modules/.bin/redocly');
    const args = ['lint', join(dir, 'openapi.json'), '--config', join(ROOT, 'redocly.yaml'), '--format', 'json'];
    const { stdout } = await run(redocly, args, { env, cwd: dir, maxBuffer: 64 * 1024 * 1024 }).catch((error: { stdout?: string; stderr?: string }) => {
      throw new Error(`redocly lint failed:\n${error.stdout?.slice(0, 4000)}\n${error.stderr?.slice(0, 2000)}`);
    });
    await writeFile(out, stdout);
    const report = JSON.parse(stdout) as { totals: { errors: number; warnings: number }; problems: Array<{ ruleId: string; severity: string; location: Array<{ pointer: string }> }> };
    expect(report.problems.filter((problem) => problem.severity === 'error')).toEqual([]);
    expect(report.totals.errors).toBe(0);
    const warnings = report.problems.map((problem) => `${problem.ruleId} ${problem.location[0]?.pointer ?? ''}`).toSorted();
    expect(warnings).toEqual(['operation-4xx-response #/paths/~1api~1docs/get/responses', 'operation-4xx-response #/paths/~1api~1openapi.json/get/responses']);
  }, 120_000);

  it('generates types with openapi-typescript that a strict openapi-fetch client reads without casts', async () => {
    // openapi-typescript 7, from the generators' workspace (test/http/openapi-generators.test.ts runs the others).
    await run(process.execPath, [await generatorFile('openapi-typescript', 'bin/cli.js'), join(dir, 'openapi.json'), '-o', join(dir, 'api.d.ts')], { cwd: dir });
    await symlink(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
    await writeFile(
      join(dir, 'client.ts'),
      `import createClient from 'openapi-fetch';
import type { paths } from './api.d.ts';

const api = createClient<paths>({ baseUrl: 'https://billing.tollgate.test', headers: { authorization: 'Basic x' } });

export async function orders(): Promise<string[]> {
  const { data, error } = await api.POST('/api/client/order/get_list', { body: { status: 'active', per_page: 10 } });
  if (error !== undefined) return [error.error.message];
  // A 503 (the process shutting down) carries no envelope: neither data nor error.
  if (data === undefined) return ['unavailable'];
  const first = data.result.list[0];
  const expires: string | null = first === undefined ? null : first.expires_at;
  // @ts-expect-error staff notes are not part of a client's order
  void first?.notes;
  return data.result.list.map((order) => \`\${order.id} \${order.price} \${order.status} \${expires ?? ''}\`);
}

export async function invoiceTotal(id: number): Promise<string> {
  const { data } = await api.GET('/api/admin/invoice/get', { params: { query: { id } } });
  if (data === undefined) return '';
  const total: string = data.result.total;
  const number: string | null = data.result.number;
  const lines: number = data.result.items.length;
  // @ts-expect-error money is a decimal string, never a number
  const float: number = data.result.total;
  return \`\${number ?? 'proforma'} \${total} \${lines} \${float}\`;
}

export async function checkout(): Promise<number | null> {
  const { data } = await api.POST('/api/client/cart/checkout', { body: {} });
  return data?.result.invoice_id ?? null;
}

export async function catalogue(): Promise<unknown> {
  const { data } = await api.POST('/api/guest/product/get_list', {});
  return data?.result;
}
`,
    );
    await writeFile(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { strict: true, noEmit: true, target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', noUncheckedIndexedAccess: true, allowImportingTsExtensions: true, types: [], lib: ['es2022', 'dom'] },
        files: ['client.ts'],
      }),
    );
    await run(join(ROOT, 'node_modules/.bin/tsc'), ['-p', join(dir, 'tsconfig.json')], { cwd: dir }).catch((error: { stdout?: string }) => {
      throw new Error(`tsc failed on the generated types:\n${error.stdout?.slice(0, 4000)}`);
    });
  }, 120_000);
});

describe('API reference page', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('answers HTML at /api/docs that loads its scripts and styles from this origin only', async () => {
    const page = await t.app.inject({ method: 'GET', url: '/api/docs' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    const sources = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1]!).filter((source) => !source.startsWith('data:'));
    expect(sources).toEqual(['docs/swagger-ui.css', 'docs/swagger-ui-bundle.js', 'docs/init.js']);
    for (const source of sources) {
      const url = new URL(source, 'http://localhost/api/docs');
      expect(url.origin).toBe('http://localhost');
      const asset = await t.app.inject({ method: 'GET', url: url.pathname });
      expect(asset.statusCode, source).toBe(200);
      expect(asset.headers['content-type'], source).toMatch(source.endsWith('.css') ? /^text\/css/ : /^text\/javascript/);
      expect(asset.body.length, source).toBeGreaterThan(source.endsWith('init.js') ? 20 : 10_000);
    }
  });

  it('points the reference at our own document and turns off the remote validator', async () => {
    const init = await t.app.inject({ method: 'GET', url: '/api/docs/init.js' });
    expect(init.body).toContain("url: 'openapi.json'");
    expect(init.body).toContain('validatorUrl: null');
    expect(init.body).not.toMatch(/https?:\/\//);
    const bundle = await t.app.inject({ method: 'GET', url: '/api/docs/swagger-ui-bundle.js' });
    expect(bundle.body).toContain('SwaggerUIBundle');
  });

  it('answers the envelope for anything else under /api/docs', async () => {
    for (const url of ['/api/docs/package.json', '/api/docs/../package.json', '/api/docs/swagger-ui-bundle.js.map']) {
      const reply = await t.app.inject({ method: 'GET', url });
      expect(reply.statusCode, url).toBe(404);
      expect(reply.json(), url).toMatchObject({ result: null, error: { code: expect.any(Number) } });
    }
  });
});
