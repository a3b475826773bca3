// The API gateway (CONTRACT §1, §2, §6 system): paths, methods, body parsers, parameter coercion, envelope, common
// headers, health check, OpenAPI document and the system module.
import { readFileSync } from 'node:fs';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { guestAction, type ModuleApi } from '../../src/platform/action.ts';
import { modules } from '../../src/modules/index.ts';
import { createTestApp, type Reply, type TestApp } from '../helpers/app.ts';
import { expectError } from '../helpers/assertions.ts';

const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

function expectCommonHeaders(headers: Reply['headers']): void {
  expect(headers['cache-control']).toBe('no-store');
  expect(headers['x-tollgate-version']).toBe(VERSION);
  expect(String(headers['content-type'])).toMatch(/^application\/json/);
}

/** A multipart/form-data body built by hand: text fields and, optionally, one file part. */
function multipart(fields: Array<[string, string]>, file?: { name: string; filename: string; content: string }): { body: Buffer; contentType: string } {
  const boundary = '----tollgate-test-boundary-7MA4YWxkTrZu0gW';
  const parts: string[] = [];
  for (const [name, value] of fields) {
    parts.push(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`);
  }
  if (file !== undefined) {
    parts.push(
      `--${boundary}\r\nContent-Disposition: form-data; name="${file.name}"; filename="${file.filename}"\r\n` +
        `Content-Type: application/octet-stream\r\n\r\n${file.content}\r\n`,
    );
  }
  parts.push(`--${boundary}--\r\n`);
  return { body: Buffer.from(parts.join(''), 'utf8'), contentType: `multipart/form-data; boundary=${boundary}` };
}

// A module that answers with the parameters it received, to see exactly what reaches an action.
const echoApi: ModuleApi = {
  name: 'echo',
  guest: {
    params: guestAction({
      params: Type.Object({
        n: Type.Optional(Type.Integer({ minimum: 0, maximum: 100 })),
        amount: Type.Optional(Type.Number({ minimum: 0, maximum: 1000 })),
        flag: Type.Optional(Type.Boolean()),
        text: Type.Optional(Type.String({ maxLength: 50 })),
        config: Type.Optional(Type.Object({ length: Type.Optional(Type.Integer({ minimum: 1, maximum: 128 })), split: Type.Optional(Type.Boolean()) })),
        nested: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
      }),
      handler: (params) => params,
    }),
    crash: guestAction({
      params: Type.Object({}),
      handler: () => {
        throw new Error('secret internal detail');
      },
    }),
  },
};

describe('gateway', () => {
  let t: TestApp;
  let echo: FastifyInstance;

  async function echoCall(options: { method?: 'GET' | 'POST'; url?: string; body?: string | Buffer; contentType?: string }): Promise<Reply> {
    const response = await echo.inject({
      method: options.method ?? 'POST',
      url: options.url ?? '/api/guest/echo/params',
      ...(options.body !== undefined && { payload: options.body }),
      headers: options.contentType === undefined ? {} : { 'content-type': options.contentType },
    });
    const body = response.json<Reply['body']>();
    return { status: response.statusCode, headers: response.headers, body, result: body.result, cookies: {} };
  }

  beforeAll(async () => {
    t = await createTestApp();
    echo = buildApp(t.services, { modules: [...modules, echoApi] });
    await echo.ready();
  });
  afterAll(async () => {
    await echo.close();
    await t.close();
  });

  describe('paths', () => {
    it.each([
      '/api/nope',
      '/api/guest',
      '/api/guest/system',
      '/api/guest/nomodule/version',
      '/api/root/system/version',
      '/api/guest/system/version/extra',
      '/api/guest/system/version/',
      '/api/guest/system/nope/',
      '/api/guest//system/version',
      '/api/Guest/system/version',
      '/api/',
    ])('%s → 879/404', async (path) => {
      for (const method of ['GET', 'POST'] as const) {
        const reply = await t.call(path, {}, { method });
        expectError(reply, 879, 404);
        expectCommonHeaders(reply.headers);
      }
    });

    it('the registry lists each URL module once: one folder serves all of /api/*/<module>/* (issue 22)', () => {
      const names = modules.map((module) => module.name);
      expect(names.toSorted()).toEqual([...new Set(names)].toSorted());
    });

    it('a path outside /api answers the envelope too', async () => {
      const reply = await t.call('/nothing-here', {}, { method: 'GET' });
      expect(reply.status).toBe(404);
      expect(reply.body.result).toBeNull();
      expect(reply.body.error).not.toBeNull();
    });

    it.each([
      ['/api/guest/system/nope', 'guest'],
      ['/api/admin/system/version', 'admin'],
      ['/api/client/staff/create', 'client'],
      ['/api/guest/client/get_list', 'guest'],
    ])('%s → 740/404', async (path) => {
      const reply = await t.call(path, {}, { method: 'GET' });
      expectError(reply, 740, 404);
      expectCommonHeaders(reply.headers);
    });

    it('unknown actions answer 740 before asking for credentials', async () => {
      expectError(await t.call('/api/admin/client/nope', {}), 740, 404);
      expectError(await t.call('/api/client/profile/nope', {}, { basic: ['client', 'x'] }), 740, 404);
    });
  });

  describe('methods', () => {
    it.each(['PUT', 'DELETE', 'PATCH'] as const)('%s → 405 on an action and on an unknown path', async (method) => {
      for (const path of ['/api/guest/system/version', '/api/admin/client/get_list', '/api/nope/x/y']) {
        const reply = await t.call(path, {}, { method });
        expectError(reply, 405, 405);
        expectCommonHeaders(reply.headers);
      }
    });

    it('GET and POST both reach an action', async () => {
      for (const method of ['GET', 'POST'] as const) {
        const reply = await t.call('/api/guest/system/version', {}, { method });
        expect(reply.status).toBe(200);
        expect(reply.body).toEqual({ result: VERSION, error: null });
      }
    });
  });

  describe('bodies', () => {
    it.each([
      ['{bad json', 'application/json'],
      ['{"a":1', 'application/json'],
      ['[1,2,3]', 'application/json'],
      ['"a string"', 'application/json'],
      ['42', 'application/json'],
      ['null', 'application/json'],
      ['true', 'application/json'],
      ['hello', 'text/plain'],
      ['<a/>', 'application/xml'],
    ])('%s (%s) → 400', async (body, contentType) => {
      const reply = await t.call('/api/guest/system/version', {}, { raw: { body, contentType } });
      expectError(reply, 400, 400);
      expectCommonHeaders(reply.headers);
    });

    it('multipart without a boundary → 400', async () => {
      const reply = await t.call('/api/guest/system/version', {}, { raw: { body: 'x', contentType: 'multipart/form-data' } });
      expectError(reply, 400, 400);
    });

    it('an empty JSON body counts as no parameters', async () => {
      const reply = await t.call('/api/guest/system/version', {}, { raw: { body: '', contentType: 'application/json' } });
      expect(reply.status).toBe(200);
    });

    it('a body over the default limit (1 MiB) → 413', async () => {
      const reply = await t.call('/api/guest/client/login', { email: 'a@b.cd', password: 'x'.repeat(1024 * 1024 + 10) });
      expectError(reply, 413, 413);
      expectCommonHeaders(reply.headers);
    });
  });

  describe('body limit from BODY_LIMIT_BYTES', () => {
    let small: TestApp;
    beforeAll(async () => {
      small = await createTestApp({ BODY_LIMIT_BYTES: '1024' });
    });
    afterAll(async () => {
      await small.close();
    });

    it('JSON, urlencoded and multipart bodies over the limit → 413', async () => {
      const big = 'x'.repeat(2000);
      expectError(await small.call('/api/guest/system/version', { text: big }), 413, 413);
      expectError(await small.call('/api/guest/system/version', {}, { raw: { body: `text=${big}`, contentType: 'application/x-www-form-urlencoded' } }), 413, 413);
      const form = multipart([['text', big]]);
      expectError(await small.call('/api/guest/system/version', {}, { raw: form }), 413, 413);
      const withFile = multipart([['a', '1']], { name: 'upload', filename: 'big.bin', content: big });
      expectError(await small.call('/api/guest/system/version', {}, { raw: withFile }), 413, 413);
    });

    it('bodies under the limit pass', async () => {
      expect((await small.call('/api/guest/system/version', { text: 'x'.repeat(500) })).status).toBe(200);
      expect((await small.call('/api/guest/system/version', {}, { raw: multipart([['text', 'x'.repeat(500)]]) })).status).toBe(200);
    });
  });

  describe('parameters reach the action', () => {
    it('GET query string, with bracket nesting and coercion', async () => {
      const reply = await echoCall({ method: 'GET', url: '/api/guest/echo/params?n=5&amount=2.5&flag=true&text=hi&config[length]=32&config[split]=0&extra=1' });
      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      // Unknown parameters are ignored: they never reach the action.
      expect(reply.result).toEqual({ n: 5, amount: 2.5, flag: true, text: 'hi', config: { length: 32, split: false } });
    });

    it('POST JSON keeps JSON types', async () => {
      const reply = await echoCall({ body: JSON.stringify({ n: 7, flag: false, text: '5', config: { length: 8 } }), contentType: 'application/json' });
      expect(reply.status).toBe(200);
      expect(reply.result).toEqual({ n: 7, flag: false, text: '5', config: { length: 8 } });
    });

    it('POST urlencoded with bracket nesting', async () => {
      const reply = await echoCall({ body: 'n=9&flag=on&nested[b]=1&nested[c][d]=2&config[length]=16&config[split]=false', contentType: 'application/x-www-form-urlencoded' });
      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      expect(reply.result).toEqual({ n: 9, flag: true, nested: { b: '1', c: { d: '2' } }, config: { length: 16, split: false } });
    });

    it('POST multipart/form-data fields with bracket nesting; file parts are ignored', async () => {
      const form = multipart(
        [
          ['n', '3'],
          ['flag', '1'],
          ['nested[b]', '1'],
          ['config[length]', '64'],
          ['text', 'héllo wörld'],
        ],
        { name: 'upload', filename: 'x.txt', content: 'file content' },
      );
      const reply = await echoCall({ body: form.body, contentType: form.contentType });
      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      expect(reply.result).toEqual({ n: 3, flag: true, nested: { b: '1' }, config: { length: 64 }, text: 'héllo wörld' });
    });

    it.each([
      ['flag=0', false],
      ['flag=false', false],
      ['flag=', false],
      ['flag=1', true],
      ['flag=true', true],
    ])('boolean from form %s', async (body, expected) => {
      const reply = await echoCall({ body, contentType: 'application/x-www-form-urlencoded' });
      expect(reply.status).toBe(200);
      expect(reply.result.flag).toBe(expected);
    });

    it.each([
      ['n=abc', 'n'],
      ['n=101', 'n'],
      ['n=-1', 'n'],
      ['n=1.5', 'n'],
      ['amount=1e9', 'amount'],
      ['flag=maybe', 'flag'],
      ['config[length]=0', 'config.length'],
      ['config=flat', 'config'],
      [`text=${'y'.repeat(51)}`, 'text'],
    ])('form %s → 422 naming %s', async (body, param) => {
      const reply = await echoCall({ body, contentType: 'application/x-www-form-urlencoded' });
      expectError(reply, 422, 422);
      expect(reply.body.error!.message).toContain(`"${param}"`);
    });

    it('a real action reached by GET, urlencoded and multipart, with the id coerced from a string', async () => {
      const client = await t.createClient();
      const basic: [string, string] = ['admin', t.adminToken];
      const byGet = await t.call('/api/admin/client/get', { id: String(client.id) }, { method: 'GET', basic });
      expect(byGet.status).toBe(200);
      expect(byGet.result.id).toBe(client.id);
      const byForm = await t.call('/api/admin/client/get', {}, { basic, raw: { body: `id=${client.id}`, contentType: 'application/x-www-form-urlencoded' } });
      expect(byForm.result.id).toBe(client.id);
      const byMultipart = await t.call('/api/admin/client/get', {}, { basic, raw: multipart([['id', String(client.id)]]) });
      expect(byMultipart.result.id).toBe(client.id);
    });

    it('a crash answers a generic 500 envelope without details', async () => {
      const reply = await echoCall({ url: '/api/guest/echo/crash', body: '{}', contentType: 'application/json' });
      expectError(reply, 500, 500);
      expect(reply.body.error!.message).not.toContain('secret');
      expectCommonHeaders(reply.headers);
    });
  });

  describe('headers, health, OpenAPI', () => {
    it('success and failure responses carry Cache-Control: no-store and X-Tollgate-Version', async () => {
      expectCommonHeaders((await t.call('/api/guest/system/periods', {}, { method: 'GET' })).headers);
      expectCommonHeaders((await t.call('/api/admin/client/get_list', {})).headers);
      expectCommonHeaders((await t.admin('client/get', { id: 'abc' })).headers);
    });

    it('/healthz → {status: "ok"}', async () => {
      const reply = await t.call('/healthz', {}, { method: 'GET' });
      expect(reply.status).toBe(200);
      expect(reply.body).toEqual({ status: 'ok' });
      expectCommonHeaders(reply.headers);
    });

    it('GET /api/openapi.json lists every action with GET and POST (POST only for actions carrying credentials)', async () => {
      const reply = await t.call('/api/openapi.json', {}, { method: 'GET' });
      expect(reply.status).toBe(200);
      const doc = reply.body as unknown as { openapi: string; info: { version: string }; paths: Record<string, { get: unknown; post: unknown }> };
      expect(doc.openapi).toBe('3.1.0');
      expect(doc.info.version).toBe(VERSION);
      for (const path of [
        '/api/guest/system/periods',
        '/api/guest/system/version',
        '/api/guest/staff/login',
        '/api/guest/client/login',
        '/api/guest/client/create',
        '/api/admin/staff/create',
        '/api/admin/staff/group_create',
        '/api/admin/client/get_list',
        '/api/admin/profile/generate_api_key',
        '/api/admin/profile/api_key_reset',
        '/api/client/profile/get',
        '/api/client/profile/api_key_reset',
      ]) {
        expect(doc.paths[path], path).toBeDefined();
        expect(doc.paths[path]!.post).toBeDefined();
        if (/\/(login|create)$/.test(path) && !path.endsWith('/group_create')) expect(doc.paths[path]!.get, path).toBeUndefined();
        else expect(doc.paths[path]!.get, path).toBeDefined();
      }
    });
  });

  describe('system', () => {
    it('guest/system/periods has the exact labels', async () => {
      const reply = await t.call('/api/guest/system/periods', {});
      expect(reply.body).toEqual({
        result: {
          '1W': 'Every week',
          '1M': 'Every month',
          '3M': 'Every 3 months',
          '6M': 'Every 6 months',
          '1Y': 'Every year',
          '2Y': 'Every 2 years',
          '3Y': 'Every 3 years',
          '4Y': 'Every 4 years',
          '5Y': 'Every 5 years',
        },
        error: null,
      });
    });

    it('guest/system/version is the semantic version, also in the header', async () => {
      const reply = await t.call('/api/guest/system/version', {}, { method: 'GET' });
      expect(reply.result).toBe(VERSION);
      expect(reply.result).toMatch(/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/);
      expect(reply.headers['x-tollgate-version']).toBe(reply.result);
    });
  });
});
