// Hostile input to every action in the OpenAPI document (issue 8): deep nesting, huge numbers, wrong types,
// `__proto__`/`constructor` keys and 1 MB strings, as JSON, as form data and in a GET query string, each action called
// with its role's credentials (guest, client, admin) and the non-guest ones also without. Every answer must be the
// envelope and never a 5xx, and nothing may pollute Object.prototype.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';

type RequestBody = { content: Record<string, { schema: { properties?: Record<string, unknown> } }> };
interface Operation {
  parameters?: Array<{ name: string }>;
  /** A reference into components.requestBodies (resolved when the document is read). */
  requestBody?: RequestBody | { $ref: string };
}
type OpenApi = { paths: Record<string, { get?: Operation; post?: Operation }>; components: { requestBodies?: Record<string, RequestBody> } };

/** The document with every operation's `requestBody` reference replaced by the body it names. */
function resolveBodies(doc: OpenApi): OpenApi {
  for (const item of Object.values(doc.paths)) {
    for (const operation of [item.get, item.post]) {
      const body = operation?.requestBody;
      if (body !== undefined && '$ref' in body) operation!.requestBody = doc.components.requestBodies?.[body.$ref.split('/').pop()!];
    }
  }
  return doc;
}

interface Attempt {
  method: 'GET' | 'POST';
  url: string;
  contentType?: string;
  payload?: string;
  label: string;
}

const MEGABYTE_STRING = 'A'.repeat(1_000_000);
const DEEP = 5000;

/** Values of every wrong type, as JSON text (some, like 1e400, cannot be written by JSON.stringify). */
const JSON_VALUES: string[] = [
  '1e308',
  '-1e308',
  '1e400',
  '-1e400',
  '9007199254740993',
  '123456789012345678901234567890',
  '5e-324',
  '-0',
  '1.5',
  '-1',
  '0',
  'true',
  'false',
  'null',
  '""',
  '"abc"',
  '" 1 "',
  '"1e999"',
  '"NaN"',
  '"Infinity"',
  '"-9999999999999999999999"',
  '"\\u0000"',
  '"9999-12-31T23:00:00-05:00"',
  '"+010000-01-01"',
  '[]',
  '[1,"a",null,{}]',
  '{}',
  '{"a":{"b":[1,2,{"c":"d"}]}}',
  '{"__proto__":{"polluted":1},"constructor":{"prototype":{"polluted":1}}}',
  `${'['.repeat(30)}1${']'.repeat(30)}`,
  `${'{"a":'.repeat(30)}1${'}'.repeat(30)}`,
];

/** Form and query values: only strings (and bracket structure) travel there. */
const FORM_VALUES: Array<(name: string) => string> = [
  (name) => `${name}=abc`,
  (name) => `${name}=`,
  (name) => `${name}=1e999`,
  (name) => `${name}=-99999999999999999999999`,
  (name) => `${name}=%00`,
  (name) => `${name}[]=1&${name}[]=2`,
  (name) => `${name}[a][b]=c`,
  (name) => `${encodeURIComponent(`${name}${'[a]'.repeat(40)}`)}=x`,
  (name) => `__proto__[${name}]=1&__proto__[polluted]=1`,
  (name) => `constructor[prototype][polluted]=1&${name}[__proto__][polluted]=1`,
  (name) => `${name}[constructor][prototype][polluted]=1`,
];

type Schema = { type?: string; format?: string; minLength?: number; minimum?: number; const?: unknown; anyOf?: Schema[]; enum?: unknown[] };

function schemaOf(operation: Operation | undefined): Record<string, Schema> {
  const body = operation?.requestBody;
  return (body === undefined || '$ref' in body ? {} : (body.content['application/json']?.schema.properties ?? {})) as Record<string, Schema>;
}

/**
 * A plausible value for a parameter, so that one hostile parameter reaches the action's service instead of being
 * stopped by another parameter's validation (1 is an id that exists: the first staff member, client, product…).
 */
function plausible(schema: Schema): unknown {
  if (schema.const !== undefined) return schema.const;
  if (schema.enum !== undefined) return schema.enum[0];
  if (schema.anyOf !== undefined && schema.anyOf.length > 0) return plausible(schema.anyOf[0]!);
  switch (schema.type) {
    case 'integer':
    case 'number':
      return Math.max(1, schema.minimum ?? 1);
    case 'boolean':
      return true;
    case 'array':
      return [];
    case 'object':
      return {};
    default:
      if (schema.format === 'email') return 'fuzz@example.com';
      if (schema.format === 'date') return '2026-01-01';
      return 'x'.repeat(Math.max(1, schema.minLength ?? 1));
  }
}

function attemptsFor(path: string, item: { get?: Operation; post?: Operation }): Attempt[] {
  const schema = schemaOf(item.post ?? item.get);
  const names = Object.keys(schema);
  const all = names.length > 0 ? names : ['id'];
  const attempts: Attempt[] = [];
  const json = (label: string, text: string) => attempts.push({ method: 'POST', url: path, contentType: 'application/json', payload: text, label });
  const objectOf = (valueText: string) => `{${all.map((name) => `${JSON.stringify(name)}:${valueText}`).join(',')}}`;

  // Every parameter gets the same hostile value, one request per value.
  for (const value of JSON_VALUES) json(`json all=${value.slice(0, 30)}`, objectOf(value));
  // Deep nesting in each parameter, arrays and objects.
  json('json deep arrays', objectOf(`${'['.repeat(DEEP)}1${']'.repeat(DEEP)}`));
  json('json deep objects', objectOf(`${'{"a":'.repeat(DEEP)}1${'}'.repeat(DEEP)}`));
  // Structural payloads one parameter at a time, the others plausible, so they reach the service: deep nesting one
  // level down where the parameter's own shape is right (config.custom, pricing.recurrent, a list), and prototype keys.
  const deepArray = `${'['.repeat(DEEP)}1${']'.repeat(DEEP)}`;
  const hostile = [
    `{"custom":{"x":${deepArray}},"recurrent":{"1M":${deepArray}},"x":${deepArray}}`,
    `[${deepArray}]`,
    '{"__proto__":{"polluted":1,"enforce_limit":true},"constructor":{"prototype":{"polluted":1}},"custom":{"__proto__":{"polluted":1}}}',
  ];
  for (const name of names) {
    const others = Object.fromEntries(names.filter((other) => other !== name).map((other) => [other, plausible(schema[other]!)]));
    const prefix = JSON.stringify(others).slice(1, -1);
    for (const [index, value] of hostile.entries()) {
      json(`json one ${name} #${index}`, `{${prefix}${prefix === '' ? '' : ','}${JSON.stringify(name)}:${value}}`);
    }
  }
  // Prototype keys at the top of the body.
  json('json __proto__ body', `{"__proto__":{"polluted":1,${all.map((name) => `${JSON.stringify(name)}:1`).join(',')}},"constructor":{"prototype":{"polluted":1}}}`);
  // A 1 MB string in a parameter (one at a time: together they would exceed the body limit). The first four cover
  // every parameter of most actions and keep the run under a minute; the rest get a 64 KB string.
  all.forEach((name, index) => json(`json 1MB ${name}`, JSON.stringify({ [name]: index < 4 ? MEGABYTE_STRING : MEGABYTE_STRING.slice(0, 65_536) })));
  // Not an object at all.
  for (const body of ['[]', '"x"', '1', 'null', '{', '{"a":1}{']) json(`json body ${body}`, body);

  for (const value of FORM_VALUES) {
    const encoded = all.map(value).join('&');
    attempts.push({ method: 'POST', url: path, contentType: 'application/x-www-form-urlencoded', payload: encoded, label: `form ${encoded.slice(0, 40)}` });
    if (item.get !== undefined) attempts.push({ method: 'GET', url: `${path}?${encoded}`, label: `query ${encoded.slice(0, 40)}` });
  }
  attempts.push({ method: 'POST', url: path, contentType: 'application/x-www-form-urlencoded', payload: `${all[0]}=${MEGABYTE_STRING}`, label: 'form 1MB' });
  if (item.get !== undefined) attempts.push({ method: 'GET', url: `${path}?${all[0]}=${MEGABYTE_STRING}`, label: 'query 1MB' });
  return attempts;
}

function expectEnvelope(attempt: Attempt, status: number, contentType: string | undefined, text: string): void {
  const where = `${attempt.method} ${attempt.url.split('?')[0]} (${attempt.label}) → ${status} ${text.slice(0, 200)}`;
  expect(status, where).toBeLessThan(500);
  expect(contentType ?? '', where).toMatch(/^application\/json/);
  const body = JSON.parse(text) as { result: unknown; error: { message: unknown; code: unknown } | null };
  expect(Object.keys(body).toSorted(), where).toEqual(['error', 'result']);
  if (status === 200) {
    expect(body.error, where).toBeNull();
  } else {
    expect(body.result, where).toBeNull();
    expect(typeof body.error?.message, where).toBe('string');
    expect(Number.isInteger(body.error?.code), where).toBe(true);
  }
}

describe('fuzzing every action', () => {
  let t: TestApp;
  let doc: OpenApi;
  let clientId: number;
  let fresh = 0;

  beforeAll(async () => {
    t = await createTestApp();
    clientId = (await t.createClient()).id;
    const reply = await t.app.inject({ method: 'GET', url: '/api/openapi.json' });
    expect(reply.statusCode).toBe(200);
    doc = resolveBodies(reply.json());
  });
  afterAll(async () => {
    await t.close();
  });

  /**
   * The credentials of each role. A fuzzed call may rotate a token (generate_api_key, api_key_reset) or delete or
   * suspend the client (" 1 " is a valid id), so they are read again, and a fresh client made, after a 401.
   */
  const credentials = new Map<string, string>();
  async function credentialsFor(path: string, refresh = false): Promise<string | null> {
    const role = path.split('/')[2]!;
    if (role === 'guest') return null;
    if (!refresh && credentials.has(role)) return credentials.get(role)!;
    let token: string;
    if (role === 'admin') {
      token = (await t.services.staff.profile(1)).api_token;
    } else {
      const current = await t.services.clients.apiToken(clientId).catch(() => null);
      if (current === null || (await t.services.clients.principalByToken(current)) === null) {
        fresh += 1;
        clientId = await t.services.clients.create({ email: `fuzz${fresh}@example.com`, first_name: 'Fuzz' });
      }
      token = await t.services.clients.apiToken(clientId);
    }
    const header = `Basic ${Buffer.from(`${role}:${token}`).toString('base64')}`;
    credentials.set(role, header);
    return header;
  }

  async function send(attempt: Attempt, authorization: string | null): Promise<number> {
    const response = await t.app.inject({
      method: attempt.method,
      url: attempt.url,
      headers: {
        ...(attempt.contentType !== undefined && { 'content-type': attempt.contentType }),
        ...(authorization !== null && { authorization }),
      },
      ...(attempt.payload !== undefined && { payload: attempt.payload }),
    });
    expectEnvelope(attempt, response.statusCode, response.headers['content-type'] as string | undefined, response.body);
    return response.statusCode;
  }

  it('no 5xx and an envelope every time, for every action, role and encoding', async () => {
    // The actions (every one has a POST); not the other documented routes, such as the never-ending events stream.
    const paths = Object.keys(doc.paths).filter((path) => /^\/api\/(admin|client|guest)\//.test(path) && doc.paths[path]!.post !== undefined);
    expect(paths.length).toBeGreaterThan(50);
    let sent = 0;
    for (const path of paths) {
      const attempts = attemptsFor(path, doc.paths[path]!);
      for (const attempt of attempts) {
        const status = await send(attempt, await credentialsFor(path));
        // Credentials that stopped working (rotated by an earlier call): the attempt is repeated with fresh ones.
        if (status === 401 && !path.startsWith('/api/guest/')) await send(attempt, await credentialsFor(path, true));
        sent += 1;
      }
      // The same hostile input without credentials, for the authenticated roles: refused, still an envelope.
      if (!path.startsWith('/api/guest/')) {
        for (const attempt of attempts.slice(0, 3)) await send(attempt, null);
      }
    }
    expect(sent).toBeGreaterThan(1000);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.prototype).not.toHaveProperty('polluted');
    // ~2,000 calls, some hashing a password (argon2id): about 150 s on the shared 2-core machine at load average 20.
  }, 300_000);
});
