// Bad input on every core action (CONTRACT §1, §2): a missing, wrong-typed or out-of-range parameter is a 422 that
// names it and writes nothing; SQL-looking text is data; oversized bodies are 413; nothing ever answers 500.
import type { TSchema } from '@sinclair/typebox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listActions } from '../../src/http/gateway.ts';
import { modules } from '../../src/modules/index.ts';
import { createTestApp, type Reply, type TestApp } from '../helpers/app.ts';
import { expectError } from '../helpers/assertions.ts';

const PASSWORD = 'Input-Passw0rd';
const CORE_MODULES = new Set(['system', 'staff', 'client', 'profile']);

type Auth = 'admin' | 'client' | 'guest';
type Case = [Auth, string, Record<string, unknown>, string];

// [caller, action path, params, the parameter the 422 must name]. `$client` and `$staff` stand for existing ids.
const CASES: Case[] = [
  ['guest', 'guest/staff/login', {}, 'email'],
  ['guest', 'guest/staff/login', { email: 5, password: PASSWORD }, 'email'],
  ['guest', 'guest/staff/login', { email: 'a@example.com' }, 'password'],
  ['guest', 'guest/staff/login', { email: 'a@example.com', password: {} }, 'password'],
  ['guest', 'guest/staff/login', { email: 'a@example.com', password: 'x'.repeat(257) }, 'password'],
  ['guest', 'guest/client/login', { password: PASSWORD }, 'email'],
  ['guest', 'guest/client/login', { email: ['a@example.com'], password: PASSWORD }, 'email'],
  ['guest', 'guest/client/login', { email: 'a@example.com', password: 12345678 }, 'password'],
  ['guest', 'guest/client/create', { first_name: 'A', password: PASSWORD, password_confirm: PASSWORD }, 'email'],
  ['guest', 'guest/client/create', { email: 5, first_name: 'A', password: PASSWORD, password_confirm: PASSWORD }, 'email'],
  ['guest', 'guest/client/create', { email: 'new@example.com', first_name: {}, password: PASSWORD, password_confirm: PASSWORD }, 'first_name'],
  ['guest', 'guest/client/create', { email: 'new@example.com', first_name: 'n'.repeat(300), password: PASSWORD, password_confirm: PASSWORD }, 'first_name'],
  ['guest', 'guest/client/create', { email: 'new@example.com', first_name: 'A', password_confirm: PASSWORD }, 'password'],
  ['guest', 'guest/client/create', { email: 'new@example.com', first_name: 'A', password: PASSWORD, password_confirm: PASSWORD, phone: 'p'.repeat(65) }, 'phone'],
  ['guest', 'guest/client/create', { email: 'new@example.com', first_name: 'A', password: PASSWORD, password_confirm: PASSWORD, currency: 'EURO' }, 'currency'],
  ['guest', 'guest/client/create', { email: 'new@example.com', first_name: 'A', password: PASSWORD, password_confirm: PASSWORD, last_name: ['x'] }, 'last_name'],
  ['guest', 'guest/client/create', { email: 'new@example.com', first_name: 'A', password: PASSWORD, password_confirm: PASSWORD, company: true }, 'company'],

  ['admin', 'admin/staff/create', { email: 'new@example.com', password: PASSWORD, name: 5, admin_group_id: 1 }, 'name'],
  ['admin', 'admin/staff/create', { email: 'new@example.com', password: PASSWORD, name: 'N', admin_group_id: {} }, 'admin_group_id'],
  ['admin', 'admin/staff/create', { email: 'new@example.com', password: PASSWORD, name: 'N', admin_group_id: 2_147_483_648 }, 'admin_group_id'],
  ['admin', 'admin/staff/get_list', { page: 'abc' }, 'page'],
  ['admin', 'admin/staff/get_list', { per_page: 0 }, 'per_page'],
  ['admin', 'admin/staff/get_list', { per_page: 501 }, 'per_page'],
  ['admin', 'admin/staff/get_list', { status: 5 }, 'status'],
  ['admin', 'admin/staff/get', {}, 'id'],
  ['admin', 'admin/staff/get', { id: 'abc' }, 'id'],
  ['admin', 'admin/staff/get', { id: {} }, 'id'],
  ['admin', 'admin/staff/get', { id: 0 }, 'id'],
  ['admin', 'admin/staff/get', { id: 1.5 }, 'id'],
  ['admin', 'admin/staff/get', { id: '1e100' }, 'id'],
  ['admin', 'admin/staff/update', { name: 'x' }, 'id'],
  ['admin', 'admin/staff/update', { id: '$staff', email: 5 }, 'email'],
  ['admin', 'admin/staff/update', { id: '$staff', name: '' }, 'name'],
  ['admin', 'admin/staff/update', { id: '$staff', status: 'retired' }, 'status'],
  ['admin', 'admin/staff/update', { id: '$staff', admin_group_id: 'x' }, 'admin_group_id'],
  ['admin', 'admin/staff/delete', { id: 'abc' }, 'id'],
  ['admin', 'admin/staff/change_password', { password: PASSWORD, password_confirm: PASSWORD }, 'id'],
  ['admin', 'admin/staff/change_password', { id: '$staff', password_confirm: PASSWORD }, 'password'],
  ['admin', 'admin/staff/change_password', { id: '$staff', password: PASSWORD, password_confirm: 5 }, 'password_confirm'],
  ['admin', 'admin/staff/group_get_list', { per_page: 501 }, 'per_page'],
  ['admin', 'admin/staff/group_create', {}, 'name'],
  ['admin', 'admin/staff/group_create', { name: 'G', permissions: 'client.view' }, 'permissions'],
  ['admin', 'admin/staff/group_create', { name: 'G', permissions: ['NOT VALID'] }, 'permissions.0'],
  ['admin', 'admin/staff/group_update', { name: 'G' }, 'id'],
  ['admin', 'admin/staff/group_update', { id: 2, name: '' }, 'name'],
  ['admin', 'admin/staff/group_delete', { id: {} }, 'id'],

  ['admin', 'admin/client/create', { first_name: 'A' }, 'email'],
  ['admin', 'admin/client/create', { email: 'new@example.com' }, 'first_name'],
  ['admin', 'admin/client/create', { email: 5, first_name: 'A' }, 'email'],
  ['admin', 'admin/client/create', { email: 'new@example.com', first_name: 'A', status: 'pending' }, 'status'],
  ['admin', 'admin/client/create', { email: 'new@example.com', first_name: 'A', password: 'x'.repeat(257) }, 'password'],
  ['admin', 'admin/client/create', { email: 'new@example.com', first_name: 'A', country: 'c'.repeat(65) }, 'country'],
  ['admin', 'admin/client/create', { email: 'new@example.com', first_name: 'A', city: 'c'.repeat(300) }, 'city'],
  ['admin', 'admin/client/get_list', { date_from: 'x' }, 'date_from'],
  ['admin', 'admin/client/get_list', { status: 'x' }, 'status'],
  ['admin', 'admin/client/get_list', { per_page: 0 }, 'per_page'],
  ['admin', 'admin/client/get', { id: 'abc' }, 'id'],
  ['admin', 'admin/client/update', { id: {}, first_name: 'x' }, 'id'],
  ['admin', 'admin/client/update', { id: '$client', email: 'bad' }, 'email'],
  ['admin', 'admin/client/update', { id: '$client', first_name: '' }, 'first_name'],
  ['admin', 'admin/client/update', { id: '$client', currency: 'EURO' }, 'currency'],
  ['admin', 'admin/client/update', { id: '$client', currency: '12' }, 'currency'],
  ['admin', 'admin/client/update', { id: '$client', status: 'x' }, 'status'],
  ['admin', 'admin/client/delete', { id: -1 }, 'id'],
  ['admin', 'admin/client/change_password', { id: '$client', password_confirm: PASSWORD }, 'password'],
  ['admin', 'admin/client/change_password', { id: 'x', password: PASSWORD, password_confirm: PASSWORD }, 'id'],
  ['admin', 'admin/profile/update', { email: 5 }, 'email'],
  ['admin', 'admin/profile/update', { name: '' }, 'name'],
  ['admin', 'admin/profile/change_password', { password: PASSWORD, password_confirm: PASSWORD }, 'current_password'],
  ['admin', 'admin/profile/change_password', { current_password: 'x', password: 5, password_confirm: PASSWORD }, 'password'],
  ['admin', 'admin/profile/api_key_reset', {}, 'id'],
  ['admin', 'admin/profile/api_key_reset', { id: 'x' }, 'id'],

  ['client', 'client/profile/update', { first_name: '' }, 'first_name'],
  ['client', 'client/profile/update', { city: 5 }, 'city'],
  ['client', 'client/profile/update', { currency: 'EURO' }, 'currency'],
  ['client', 'client/profile/update', { phone: 'p'.repeat(65) }, 'phone'],
  ['client', 'client/profile/change_password', { password: PASSWORD, password_confirm: PASSWORD }, 'current_password'],
  ['client', 'client/profile/change_password', { current_password: PASSWORD, password: PASSWORD }, 'password_confirm'],
];

describe('bad input', () => {
  let t: TestApp;
  let client: { id: number; token: string };
  let staffId: number;

  function resolve(params: Record<string, unknown>): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(params)) out[name] = value === '$client' ? client.id : value === '$staff' ? staffId : value;
    return out;
  }

  function callAs(auth: Auth, path: string, params: Record<string, unknown>): Promise<Reply> {
    const basic: [string, string] | undefined = auth === 'admin' ? ['admin', t.adminToken] : auth === 'client' ? ['client', client.token] : undefined;
    return t.call(`/api/${path}`, params, basic === undefined ? {} : { basic });
  }

  /** Every row of the core tables (sessions aside), to show that a refused call wrote nothing. */
  async function snapshot(): Promise<string> {
    const [clients, staff, groups] = await Promise.all([
      t.services.db.selectFrom('clients').selectAll().orderBy('id').execute(),
      t.services.db.selectFrom('staff').selectAll().orderBy('id').execute(),
      t.services.db.selectFrom('admin_groups').selectAll().orderBy('id').execute(),
    ]);
    return JSON.stringify({ clients, staff, groups });
  }

  beforeAll(async () => {
    t = await createTestApp();
    client = await t.createClient();
    const created = await t.admin('staff/create', { email: 'input-staff@example.com', password: PASSWORD, name: 'Input Staff', admin_group_id: 1 });
    staffId = created.result as number;
  });
  afterAll(async () => {
    await t.close();
  });

  it.each(CASES)('%s %s %j → 422 naming "%s", nothing written', async (auth, path, params, param) => {
    const before = await snapshot();
    const reply = await callAs(auth, path, resolve(params));
    expectError(reply, 422, 422);
    expect(reply.body.error!.message).toContain(`"${param}"`);
    expect(await snapshot()).toBe(before);
  });

  it('SQL-looking text is stored and returned verbatim, and found by search', async () => {
    const texts = {
      first_name: "'; DROP TABLE clients; --",
      last_name: "Robert'); DROP TABLE staff;--",
      company: '" OR 1=1 --',
      city: "\\'; SELECT pg_sleep(5); --",
      address_1: '%_\\%',
      state: '$1 $$ ?',
    };
    const created = await t.admin('client/create', { email: "o'brien+sql@example.com", ...texts });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const record = (await t.admin('client/get', { id: created.result })).result;
    expect(record).toMatchObject({ ...texts, email: "o'brien+sql@example.com" });
    const found = (await t.admin('client/get_list', { search: "'; DROP TABLE clients; --" })).result;
    expect(found.list.map((entry: { id: number }) => entry.id)).toContain(created.result);
    expect((await t.admin('client/get_list', { company: '" OR 1=1 --' })).result.total).toBe(1);
    expect((await t.admin('client/get_list', { email: "o'brien" })).result.total).toBe(1);

    const staff = await t.admin('staff/create', { email: 'sql-staff@example.com', password: PASSWORD, name: "x'); DELETE FROM staff; --", admin_group_id: 1 });
    expect((await t.admin('staff/get', { id: staff.result })).result.name).toBe("x'); DELETE FROM staff; --");
    const group = await t.admin('staff/group_create', { name: "'; UPDATE staff SET status='inactive'; --" });
    const groups = (await t.admin('staff/group_get_list', { per_page: 500 })).result.list as Array<{ id: number; name: string }>;
    expect(groups.find((entry) => entry.id === group.result)!.name).toBe("'; UPDATE staff SET status='inactive'; --");
    expect((await t.admin('staff/get', { id: 1 })).result.status).toBe('active');
  });

  it('a 10 MB string → 413; a 300-character name → 422', async () => {
    const before = await snapshot();
    expectError(await t.admin('client/create', { email: 'huge@example.com', first_name: 'x'.repeat(10 * 1024 * 1024) }), 413, 413);
    const long = await t.admin('client/create', { email: 'long@example.com', first_name: 'x'.repeat(300) });
    expectError(long, 422, 422);
    expect(long.body.error!.message).toContain('"first_name"');
    expect(await snapshot()).toBe(before);
  });

  it('unicode text round-trips', async () => {
    const created = await t.admin('client/create', { email: 'unicode@example.com', first_name: 'Zoë 🙂 李', city: 'Zürich' });
    expect((await t.admin('client/get', { id: created.result })).result).toMatchObject({ first_name: 'Zoë 🙂 李', city: 'Zürich' });
  });

  it('a NUL character in text → 422 naming the parameter', async () => {
    const before = await snapshot();
    const reply = await t.admin('client/create', { email: 'nul@example.com', first_name: 'a\u0000b' });
    expectError(reply, 422, 422);
    expect(reply.body.error!.message).toContain('"first_name"');
    expectError(await t.call('/api/guest/client/login', { email: 'nul\u0000@example.com', password: PASSWORD }), 422, 422);
    expectError(await t.admin('client/get_list', { search: '\u0000' }), 422, 422);
    expect(await snapshot()).toBe(before);
  });
});

describe('no input makes a core action answer 500', () => {
  let t: TestApp;
  let fuzzerId: number;
  let clientId: number;

  const WEIRD: unknown[] = [
    null,
    true,
    -1,
    0,
    1.5,
    1e308,
    '',
    'x'.repeat(3000),
    {},
    [],
    ['a', 1],
    { $gt: '' },
    "' OR '1'='1",
    'a\u0000b',
    '\ud800',
    '🙂'.repeat(100),
    '2147483648',
  ];

  /** A value the schema accepts, so the weird one is the only problem. */
  function validFor(schema: TSchema & { type?: string; format?: string; anyOf?: Array<{ const?: unknown }>; minimum?: number }): unknown {
    if (schema.anyOf !== undefined) return schema.anyOf[0]!.const;
    switch (schema.type) {
      case 'integer':
      case 'number':
        return 3;
      case 'boolean':
        return false;
      case 'array':
        return [];
      case 'object':
        return {};
      default:
        return schema.format === 'email' ? 'fuzz-valid@example.com' : 'Fuzz-Passw0rd';
    }
  }

  beforeAll(async () => {
    t = await createTestApp();
    const created = await t.admin('staff/create', { email: 'fuzzer@example.com', password: PASSWORD, name: 'Fuzzer', admin_group_id: 1 });
    fuzzerId = created.result as number;
    clientId = (await t.createClient()).id;
    // Id 3 names a staff member, a group and a client that the fuzzing may change or delete.
    await t.admin('staff/create', { email: 'victim@example.com', password: PASSWORD, name: 'Victim', admin_group_id: 2 });
    await t.admin('staff/group_create', { name: 'Victims' });
    await t.createClient();
    await t.createClient();
  });
  afterAll(async () => {
    await t.close();
  });

  it('every parameter of every core action, with odd values, by POST and GET', async () => {
    const actions = listActions(modules).filter((action) => CORE_MODULES.has(action.module));
    expect(actions.length).toBeGreaterThan(25);
    let calls = 0;
    for (const { role, module, action, def } of actions) {
      if (action === 'logout' || action === 'generate_api_key' || action === 'api_key_reset') continue;
      const properties = def.params.properties as Record<string, TSchema>;
      const base: Record<string, unknown> = {};
      for (const [name, schema] of Object.entries(properties)) base[name] = validFor(schema);
      for (const name of Object.keys(properties)) {
        for (const weird of WEIRD) {
          const basic: [string, string] | undefined =
            role === 'admin'
              ? ['admin', (await t.services.staff.profile(fuzzerId)).api_token]
              : role === 'client'
                ? ['client', await t.services.clients.apiToken(clientId)]
                : undefined;
          const params = { ...base, [name]: weird };
          for (const method of ['POST', 'GET'] as const) {
            const reply = await t.call(`/api/${role}/${module}/${action}`, params, { method, ...(basic !== undefined && { basic }) });
            calls += 1;
            const label = `${method} ${role}/${module}/${action} ${name}=${JSON.stringify(weird)?.slice(0, 40)}`;
            expect(reply.status, `${label}: ${JSON.stringify(reply.body)}`).toBeLessThan(500);
            if (reply.status !== 200) expect(reply.body.result, label).toBeNull();
            expect(reply.body.error === null || typeof reply.body.error.code === 'number', label).toBe(true);
          }
        }
      }
    }
    expect(calls).toBeGreaterThan(1000);
  }, 300_000);
});
