// Verifier tokens made from the Developers page (CONTRACT §11, issue 11): admin/staff/verifier_create, _get_list,
// _rotate and _revoke. A verifier holds only `serviceapikey.check`; its token verifies keys and does nothing else.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectError, expectInvalid } from '../../helpers/assertions.ts';

describe('verifier tokens', () => {
  let t: TestApp;
  const as = (token: string, action: string, params: Record<string, unknown> = {}) => t.call(`/api/admin/${action}`, params, { basic: ['admin', token] });
  /** A staff member in a new group holding `permissions`, and their API token. */
  const staffWith = async (permissions: string[]): Promise<string> => {
    const group = await t.services.staff.createGroup(`G ${Math.random()}`, permissions);
    const email = `s-${Math.random().toString(36).slice(2)}@example.com`;
    return (await t.services.staff.create({ email, password: 'Staff-Passw0rd', name: 'Staff', admin_group_id: group })).apiToken;
  };

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('creates a verifier whose token verifies keys and can do nothing else; the list never shows the token', async () => {
    const created = await t.admin('staff/verifier_create', { name: 'Production API' });
    expect(created.status).toBe(200);
    expect(created.result).toEqual({ id: expect.any(Number), name: 'Production API', scopes: [], token: expect.stringMatching(/^\S{16,}$/) });
    const { id, token } = created.result as { id: number; token: string };

    expect((await as(token, 'serviceapikey/check', { key: 'FFFFFFFF-FFFFFFFF', ip: '203.0.113.9' })).body).toEqual({ result: false, error: null });
    expect((await as(token, 'serviceapikey/report_usage', { batch_id: 'b-1', usage: [] })).result).toBe(true);
    expectError(await as(token, 'product/get_list'), 403);
    expectError(await as(token, 'staff/verifier_get_list'), 403);
    expectError(await as(token, 'serviceapikey/update', { order_id: 1, valid: false }), 403);

    const list = await t.admin('staff/verifier_get_list');
    const entry = (list.result.list as Array<Record<string, unknown>>).find((v) => v.id === id);
    expect(entry).toEqual({ id, name: 'Production API', scopes: [], status: 'active', created_at: expect.any(String), updated_at: expect.any(String) });
    expect(JSON.stringify(list.body)).not.toContain(token);

    // A second verifier joins the same group, which grants only serviceapikey.check.
    const second = (await t.admin('staff/verifier_create', { name: 'Staging' })).result as { id: number };
    const [a, b] = [(await t.admin('staff/get', { id })).result, (await t.admin('staff/get', { id: second.id })).result];
    expect(a.admin_group_id).toBe(b.admin_group_id);
    const groups = (await t.admin('staff/group_get_list')).result.list as Array<{ id: number; permissions: string[] }>;
    expect(groups.find((g) => g.id === a.admin_group_id)?.permissions).toEqual(['serviceapikey.check']);
    // Nobody can log in as a verifier: there is no password anyone knows and the address receives no mail.
    expect(a.email).toMatch(/@verifiers\.invalid$/);
  });

  it('rotates: the new token works, the old one stops at once', async () => {
    const { id, token: old } = (await t.admin('staff/verifier_create', { name: 'Rotating' })).result as { id: number; token: string };
    const rotated = await t.admin('staff/verifier_rotate', { id });
    expect(rotated.result).toEqual({ token: expect.any(String) });
    const fresh = rotated.result.token as string;
    expect(fresh).not.toBe(old);
    expectError(await as(old, 'serviceapikey/check', { key: 'x' }), 205, 401);
    expect((await as(fresh, 'serviceapikey/check', { key: 'x' })).result).toBe(false);
  });

  it('revokes: the token stops at once, and a second revoke or a rotate finds nothing (404)', async () => {
    const { id, token } = (await t.admin('staff/verifier_create', { name: 'Leaked' })).result as { id: number; token: string };
    expect((await t.admin('staff/verifier_revoke', { id })).body).toEqual({ result: true, error: null });
    expectError(await as(token, 'serviceapikey/check', { key: 'x' }), 205, 401);
    expectError(await t.admin('staff/verifier_revoke', { id }), 404);
    expectError(await t.admin('staff/verifier_rotate', { id }), 404);
    const ids = ((await t.admin('staff/verifier_get_list', { per_page: 500 })).result.list as Array<{ id: number }>).map((v) => v.id);
    expect(ids).not.toContain(id);
  });

  it('never reaches a person: rotate and revoke of another staff member or an unknown id answer 404', async () => {
    const person = await t.services.staff.create({ email: 'person@example.com', password: 'Person-Passw0rd', name: 'Person', admin_group_id: 1 });
    for (const action of ['staff/verifier_rotate', 'staff/verifier_revoke']) {
      expectError(await t.admin(action, { id: 1 }), 404);
      expectError(await t.admin(action, { id: person.id }), 404);
      expectError(await t.admin(action, { id: 999_999 }), 404);
    }
    // A staff member in a group that grants more than serviceapikey.check is not a verifier either.
    const group = await t.services.staff.createGroup('Check and manage', ['serviceapikey.check', 'serviceapikey.manage']);
    const wider = await t.services.staff.create({ email: 'wider@example.com', password: 'Wider-Passw0rd', name: 'Wider', admin_group_id: group });
    expectError(await t.admin('staff/verifier_revoke', { id: wider.id }), 404);
    expect((await t.admin('staff/get', { id: person.id })).status).toBe(200);
    expect((await as(person.apiToken, 'staff/get_list')).status).toBe(200);
  });

  it('refuses missing and wrong-typed parameters with 422', async () => {
    expectInvalid(await t.admin('staff/verifier_create', {}), 'name');
    expectInvalid(await t.admin('staff/verifier_create', { name: '' }), 'name');
    expectInvalid(await t.admin('staff/verifier_create', { name: 7 }), 'name');
    expectInvalid(await t.admin('staff/verifier_create', { name: 'x'.repeat(256) }), 'name');
    for (const action of ['staff/verifier_rotate', 'staff/verifier_revoke']) {
      expectInvalid(await t.admin(action, {}), 'id');
      expectInvalid(await t.admin(action, { id: 'one' }), 'id');
      expectInvalid(await t.admin(action, { id: 0 }), 'id');
    }
    expectInvalid(await t.admin('staff/verifier_get_list', { per_page: 501 }), 'per_page');
  });

  it('needs staff.manage, and serviceapikey.check to hand it out (403); clients and strangers get 401', async () => {
    const { id } = (await t.admin('staff/verifier_create', { name: 'Target' })).result as { id: number };
    const support = await staffWith(['client.manage']);
    const manager = await staffWith(['staff.manage']);
    for (const [action, params] of [
      ['staff/verifier_create', { name: 'x' }],
      ['staff/verifier_get_list', {}],
      ['staff/verifier_rotate', { id }],
      ['staff/verifier_revoke', { id }],
    ] as const) {
      expectError(await as(support, action, params), 403);
      expectError(await t.call(`/api/admin/${action}`, params), 201, 401);
    }
    // staff.manage alone may list, but not grant serviceapikey.check it does not hold.
    expect((await as(manager, 'staff/verifier_get_list')).status).toBe(200);
    expectError(await as(manager, 'staff/verifier_create', { name: 'x' }), 403);
    expectError(await as(manager, 'staff/verifier_rotate', { id }), 403);
    expectError(await as(manager, 'staff/verifier_revoke', { id }), 403);
    const both = await staffWith(['staff.manage', 'serviceapikey.check']);
    expect((await as(both, 'staff/verifier_rotate', { id })).status).toBe(200);
    const client = await t.createClient();
    expect((await t.call('/api/admin/staff/verifier_create', { name: 'x' }, { basic: ['client', client.token] })).status).toBe(401);
  });

  it('makes distinct verifiers when created concurrently, and counts them all', async () => {
    const before = (await t.admin('staff/verifier_get_list')).result.total as number;
    const made = await Promise.all(Array.from({ length: 6 }, (_, n) => t.admin('staff/verifier_create', { name: `Parallel ${n}` })));
    expect(made.map((reply) => reply.status)).toEqual(Array(6).fill(200));
    const ids = new Set(made.map((reply) => reply.result.id as number));
    const tokens = new Set(made.map((reply) => reply.result.token as string));
    expect([ids.size, tokens.size]).toEqual([6, 6]);
    expect((await t.admin('staff/verifier_get_list')).result.total).toBe(before + 6);
    for (const reply of made) expect((await as(reply.result.token as string, 'serviceapikey/check', { key: 'x' })).result).toBe(false);
    // Two revokes of one verifier at once: one succeeds, the other finds nothing.
    const target = made[0]!.result.id as number;
    const outcomes = await Promise.all([t.admin('staff/verifier_revoke', { id: target }), t.admin('staff/verifier_revoke', { id: target })]);
    expect(outcomes.map((reply) => reply.status).toSorted((a, b) => a - b)).toEqual([200, 404]);
  });
});

describe('guest/system/company', () => {
  it('names the instance base URL (PUBLIC_URL, no trailing slash) for the SDK quick start', async () => {
    const t = await createTestApp({ PUBLIC_URL: 'https://billing.example.com/' });
    try {
      const company = await t.call('/api/guest/system/company');
      expect(company.result.public_url).toBe('https://billing.example.com');
      // No company name set: null, never "Tollgate" (issue 21, the operator's brand).
      expect(company.result.name).toBeNull();
    } finally {
      await t.close();
    }
  });
});
