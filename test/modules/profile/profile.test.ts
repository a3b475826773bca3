// The caller's own account (CONTRACT §3, §6): admin/profile/* and client/profile/*, API tokens and their rotation.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_EMAIL, createTestApp, type Reply, type TestApp } from '../../helpers/app.ts';
import { expectError, expectInvalid } from '../../helpers/assertions.ts';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;
const TOKEN = /^[A-Za-z0-9]{32}$/;
const PASSWORD = 'Staff-Passw0rd';
const CLIENT_KEYS = [
  'address_1',
  'address_2',
  'city',
  'company',
  'country',
  'created_at',
  'currency',
  'email',
  'first_name',
  'id',
  'last_name',
  'phone',
  'postcode',
  'state',
  'status',
  'tax_exempt',
  'updated_at',
  'vat_number',
];

describe('profiles', () => {
  let t: TestApp;
  let counter = 0;

  /** A fresh administrator, so rotating its token does not disturb the helpers' admin token. */
  async function createAdmin(): Promise<{ id: number; email: string; token: string; basic: [string, string] }> {
    counter += 1;
    const email = `profile-admin${counter}@example.com`;
    const created = await t.admin('staff/create', { email, password: PASSWORD, name: `Admin ${counter}`, admin_group_id: 1 });
    expect(created.status).toBe(200);
    const token = (await t.services.staff.profile(created.result as number)).api_token;
    return { id: created.result as number, email, token, basic: ['admin', token] };
  }

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  describe('admin/profile', () => {
    it('get has exactly the contract fields, with api_token, which works as the Basic password', async () => {
      const reply = await t.admin('profile/get', {});
      expect(reply.status).toBe(200);
      const record = reply.result as Record<string, unknown>;
      expect(Object.keys(record).toSorted()).toEqual(['admin_group_id', 'api_token', 'created_at', 'email', 'id', 'name', 'status', 'updated_at']);
      expect(record).toMatchObject({ id: 1, email: ADMIN_EMAIL, name: 'Administrator', status: 'active', admin_group_id: 1, api_token: t.adminToken });
      expect(record.created_at).toMatch(ISO);

      const admin = await createAdmin();
      const own = await t.call('/api/admin/profile/get', {}, { basic: admin.basic });
      expect(own.result.api_token).toMatch(TOKEN);
      expect(own.result.id).toBe(admin.id);
      // Through a session, too.
      const browser = await t.login('staff', admin.email, PASSWORD);
      expect((await t.call('/api/admin/profile/get', {}, { browser, csrf: true })).result.api_token).toBe(admin.token);
    });

    it('generate_api_key returns a new token; the old one → 205', async () => {
      const admin = await createAdmin();
      const reply = await t.call('/api/admin/profile/generate_api_key', {}, { basic: admin.basic });
      expect(reply.status).toBe(200);
      const fresh = reply.result as string;
      expect(fresh).toMatch(TOKEN);
      expect(fresh).not.toBe(admin.token);
      expectError(await t.call('/api/admin/profile/get', {}, { basic: admin.basic }), 205, 401);
      const now = await t.call('/api/admin/profile/get', {}, { basic: ['admin', fresh] });
      expect(now.result.api_token).toBe(fresh);
    });

    it('update changes the name; a new e-mail → 422 naming admin/profile/change_email (issue 20, M4); bad values → 422', async () => {
      const admin = await createAdmin();
      const other = await createAdmin();
      const newEmail = `renamed-${admin.id}@example.com`;
      const refused = await t.call('/api/admin/profile/update', { name: 'Renamed Admin', email: newEmail }, { basic: admin.basic });
      expectInvalid(refused, 'email');
      expect(refused.body.error!.message).toContain('admin/profile/change_email');
      expect((await t.call('/api/admin/profile/update', { name: 'Renamed Admin' }, { basic: admin.basic })).body).toEqual({ result: true, error: null });
      // The current address is let through (a form sends every field).
      expect((await t.call('/api/admin/profile/update', { name: 'Renamed Admin', email: admin.email }, { basic: admin.basic })).body).toEqual({ result: true, error: null });
      expect((await t.call('/api/admin/profile/get', {}, { basic: admin.basic })).result).toMatchObject({ name: 'Renamed Admin', email: admin.email });
      expectInvalid(await t.call('/api/admin/profile/update', { email: other.email }, { basic: admin.basic }), 'email');
      expectInvalid(await t.call('/api/admin/profile/update', { email: 'broken' }, { basic: admin.basic }), 'email');
      expectInvalid(await t.call('/api/admin/profile/update', { name: '' }, { basic: admin.basic }), 'name');
      expectInvalid(await t.call('/api/admin/profile/update', { name: 'n'.repeat(300) }, { basic: admin.basic }), 'name');
      // A status sent here is ignored (unknown parameter): one cannot deactivate oneself through the profile.
      expect((await t.call('/api/admin/profile/update', { status: 'inactive' }, { basic: admin.basic })).result).toBe(true);
      expect((await t.call('/api/admin/profile/get', {}, { basic: admin.basic })).result).toMatchObject({ name: 'Renamed Admin', email: admin.email, status: 'active' });
    });

    it('update cannot change the own group or status (no privilege escalation)', async () => {
      const created = await t.admin('staff/create', { email: 'support-profile@example.com', password: PASSWORD, name: 'Support', admin_group_id: 2 });
      const basic: [string, string] = ['admin', (await t.services.staff.profile(created.result as number)).api_token];
      const reply = await t.call('/api/admin/profile/update', { name: 'Support Person', admin_group_id: 1, status: 'inactive', id: 1 }, { basic });
      expect(reply.body).toEqual({ result: true, error: null });
      expect((await t.admin('staff/get', { id: created.result })).result).toMatchObject({ name: 'Support Person', admin_group_id: 2, status: 'active' });
      expect((await t.admin('staff/get', { id: 1 })).result).toMatchObject({ name: 'Administrator', status: 'active' });
      expectError(await t.call('/api/admin/staff/get_list', {}, { basic }), 403, 403);
    });

    it('change_password: wrong current → 422; mismatch and weak → 422; success changes the login', async () => {
      const admin = await createAdmin();
      const call = (params: Record<string, unknown>): Promise<Reply> => t.call('/api/admin/profile/change_password', params, { basic: admin.basic });
      expectInvalid(await call({ current_password: 'Wrong-Passw0rd', password: 'Next-Passw0rd', password_confirm: 'Next-Passw0rd' }), 'current_password');
      expectInvalid(await call({ current_password: PASSWORD, password: 'Next-Passw0rd', password_confirm: 'Nope-Passw0rd' }), 'password_confirm');
      expectInvalid(await call({ current_password: PASSWORD, password: 'weakweak', password_confirm: 'weakweak' }), 'password');
      expectInvalid(await call({ password: 'Next-Passw0rd', password_confirm: 'Next-Passw0rd' }), 'current_password');
      expectInvalid(await call({ current_password: PASSWORD, password_confirm: 'Next-Passw0rd' }), 'password');
      expect((await t.call('/api/guest/staff/login', { email: admin.email, password: PASSWORD })).status).toBe(200);

      expect((await call({ current_password: PASSWORD, password: 'Next-Passw0rd', password_confirm: 'Next-Passw0rd' })).result).toBe(true);
      expect((await t.call('/api/guest/staff/login', { email: admin.email, password: 'Next-Passw0rd' })).status).toBe(200);
      expectError(await t.call('/api/guest/staff/login', { email: admin.email, password: PASSWORD }), 206, 401);
    });

    it("api_key_reset {id} rotates a client's token", async () => {
      const client = await t.createClient();
      const reply = await t.admin('profile/api_key_reset', { id: client.id });
      expect(reply.status).toBe(200);
      expect(reply.result).toMatch(TOKEN);
      expect(reply.result).not.toBe(client.token);
      expectError(await t.call('/api/client/profile/get', {}, { basic: ['client', client.token] }), 204, 401);
      expect((await t.call('/api/client/profile/get', {}, { basic: ['client', reply.result as string] })).result.id).toBe(client.id);
      expectError(await t.admin('profile/api_key_reset', { id: 999_999 }), 404, 404);
      expectInvalid(await t.admin('profile/api_key_reset', {}), 'id');
      expectInvalid(await t.admin('profile/api_key_reset', { id: 'abc' }), 'id');
      expectError(await t.call('/api/admin/profile/api_key_reset', { id: client.id }, { basic: ['client', reply.result as string] }), 203, 401);
    });
  });

  describe('client/profile', () => {
    it('get returns the caller\'s own record with exactly the contract fields', async () => {
      const a = await t.createClient({ first_name: 'Alice', last_name: '', company: 'A Corp' });
      const b = await t.createClient({ first_name: 'Bob' });
      const ownA = await t.call('/api/client/profile/get', {}, { basic: ['client', a.token] });
      expect(ownA.status).toBe(200);
      // The client's own record also says whether renewals are charged to the saved card (CONTRACT §9 auto_pay).
      expect(Object.keys(ownA.result).toSorted()).toEqual([...CLIENT_KEYS, 'auto_pay'].toSorted());
      expect(ownA.result).toMatchObject({ id: a.id, email: a.email, first_name: 'Alice', last_name: null, company: 'A Corp', phone: null, status: 'active', currency: 'USD' });
      const ownB = await t.call('/api/client/profile/get', { id: a.id, client_id: a.id }, { basic: ['client', b.token] });
      expect(ownB.result.id).toBe(b.id);
      expect(ownB.result.first_name).toBe('Bob');
      for (const value of Object.values(ownA.result as Record<string, unknown>)) expect(value).not.toBe(a.token);
    });

    it('update changes the caller only; blanks clear optional fields; e-mail and status cannot be changed here', async () => {
      const a = await t.createClient({ city: 'Bern', phone: '+41 44 668 18 00' });
      const b = await t.createClient({ city: 'Genf' });
      // A client may only pick a currency the shop sells in (issue 26): the shop adds EUR first.
      expect((await t.admin('currency/create', { code: 'EUR', conversion_rate: '0.9' })).result).toBe('EUR');
      const reply = await t.call(
        '/api/client/profile/update',
        { first_name: 'Changed', city: '', phone: '+41 44 668 18 11', country: 'CH', currency: 'eur', email: 'stolen@example.com', status: 'canceled', id: b.id },
        { basic: ['client', a.token] },
      );
      expect(reply.body).toEqual({ result: true, error: null });
      const record = (await t.admin('client/get', { id: a.id })).result;
      expect(record).toMatchObject({ first_name: 'Changed', city: null, phone: '+41 44 668 18 11', country: 'CH', currency: 'EUR', email: a.email, status: 'active' });
      expect((await t.admin('client/get', { id: b.id })).result.city).toBe('Genf');
    });

    it('update with bad values → 422 and nothing written', async () => {
      const a = await t.createClient({ city: 'Bern' });
      const basic: [string, string] = ['client', a.token];
      expectInvalid(await t.call('/api/client/profile/update', { first_name: '' }, { basic }), 'first_name');
      expectInvalid(await t.call('/api/client/profile/update', { first_name: '   ', city: 'Zug' }, { basic }), 'first_name');
      expectInvalid(await t.call('/api/client/profile/update', { city: 5 }, { basic }), 'city');
      expectInvalid(await t.call('/api/client/profile/update', { city: 'c'.repeat(256) }, { basic }), 'city');
      expectInvalid(await t.call('/api/client/profile/update', { currency: 'EURO' }, { basic }), 'currency');
      expectInvalid(await t.call('/api/client/profile/update', { currency: 'E1R', city: 'Zug' }, { basic }), 'currency');
      expectInvalid(await t.call('/api/client/profile/update', { phone: 'p'.repeat(65) }, { basic }), 'phone');
      expect((await t.admin('client/get', { id: a.id })).result.city).toBe('Bern');
    });

    it('change_password: wrong current → 422; success changes the login', async () => {
      const a = await t.createClient();
      const basic: [string, string] = ['client', a.token];
      const call = (params: Record<string, unknown>): Promise<Reply> => t.call('/api/client/profile/change_password', params, { basic });
      expectInvalid(await call({ current_password: 'Wrong-Passw0rd', password: 'Next-Passw0rd', password_confirm: 'Next-Passw0rd' }), 'current_password');
      expectInvalid(await call({ current_password: a.password, password: 'Next-Passw0rd', password_confirm: 'Other-Passw0rd' }), 'password_confirm');
      expectInvalid(await call({ current_password: a.password, password: 'short', password_confirm: 'short' }), 'password');
      expectInvalid(await call({ password: 'Next-Passw0rd', password_confirm: 'Next-Passw0rd' }), 'current_password');
      expect((await t.call('/api/guest/client/login', { email: a.email, password: a.password })).status).toBe(200);

      expect((await call({ current_password: a.password, password: 'Next-Passw0rd', password_confirm: 'Next-Passw0rd' })).result).toBe(true);
      expect((await t.call('/api/guest/client/login', { email: a.email, password: 'Next-Passw0rd' })).status).toBe(200);
      expectError(await t.call('/api/guest/client/login', { email: a.email, password: a.password }), 206, 401);
    });

    it('changing a password ends the other sessions of the account, keeps the one that changed it', async () => {
      const a = await t.createClient();
      const here = await t.login('client', a.email, a.password);
      const elsewhere = await t.login('client', a.email, a.password);
      const changed = await t.call(
        '/api/client/profile/change_password',
        { current_password: a.password, password: 'Moved-Passw0rd', password_confirm: 'Moved-Passw0rd' },
        { browser: here, csrf: true },
      );
      expect(changed.result).toBe(true);
      expect((await t.call('/api/client/profile/get', {}, { browser: here, csrf: true })).status).toBe(200);
      expectError(await t.call('/api/client/profile/get', {}, { browser: elsewhere, csrf: true }), 201, 401);

      // Staff resetting a client's password logs the client out everywhere.
      expect((await t.admin('client/change_password', { id: a.id, password: 'Staff-Set-Passw0rd', password_confirm: 'Staff-Set-Passw0rd' })).result).toBe(true);
      expectError(await t.call('/api/client/profile/get', {}, { browser: here, csrf: true }), 201, 401);
    });

    it('a client without a password cannot pass change_password with any current password', async () => {
      const created = await t.admin('client/create', { email: 'no-password-profile@example.com', first_name: 'Nopw' });
      const token = await t.services.clients.apiToken(created.result as number);
      expectInvalid(
        await t.call('/api/client/profile/change_password', { current_password: '', password: 'Next-Passw0rd', password_confirm: 'Next-Passw0rd' }, { basic: ['client', token] }),
        'current_password',
      );
    });

    it('api_key_get returns the token; api_key_reset returns a new one and the old → 204', async () => {
      const a = await t.createClient();
      const got = await t.call('/api/client/profile/api_key_get', {}, { basic: ['client', a.token] });
      expect(got.body).toEqual({ result: a.token, error: null });
      expect(a.token).toMatch(TOKEN);

      const browser = await t.login('client', a.email, a.password);
      const reset = await t.call('/api/client/profile/api_key_reset', {}, { browser, csrf: true });
      expect(reset.status).toBe(200);
      expect(reset.result).toMatch(TOKEN);
      expect(reset.result).not.toBe(a.token);
      expectError(await t.call('/api/client/profile/get', {}, { basic: ['client', a.token] }), 204, 401);
      expect((await t.call('/api/client/profile/api_key_get', {}, { basic: ['client', reset.result as string] })).result).toBe(reset.result);
      // The session is not affected by the rotation.
      expect((await t.call('/api/client/profile/get', {}, { browser, csrf: true })).status).toBe(200);
    });

    it('logout returns true', async () => {
      const a = await t.createClient();
      const browser = await t.login('client', a.email, a.password);
      expect((await t.call('/api/client/profile/logout', {}, { browser, csrf: true })).body).toEqual({ result: true, error: null });
      expectError(await t.call('/api/client/profile/get', {}, { browser, csrf: true }), 201, 401);
    });

    it('a client cannot reach another client through any admin path', async () => {
      const a = await t.createClient();
      const b = await t.createClient();
      for (const [path, params] of [
        ['/api/admin/client/get', { id: b.id }],
        ['/api/admin/client/update', { id: b.id, first_name: 'Owned' }],
        ['/api/admin/client/delete', { id: b.id }],
        ['/api/admin/client/change_password', { id: b.id, password: 'Owned-Passw0rd', password_confirm: 'Owned-Passw0rd' }],
        ['/api/admin/client/get_list', {}],
        ['/api/admin/profile/api_key_reset', { id: b.id }],
      ] as Array<[string, Record<string, unknown>]>) {
        expectError(await t.call(path, params, { basic: ['client', a.token] }), 203, 401);
        expectError(await t.call(path, params, { basic: ['admin', a.token] }), 205, 401);
        const browser = await t.login('client', a.email, a.password);
        expectError(await t.call(path, params, { browser, csrf: true }), 201, 401);
      }
      const record = (await t.admin('client/get', { id: b.id })).result;
      expect(record.first_name).toBe('Test');
      expect((await t.call('/api/client/profile/get', {}, { basic: ['client', b.token] })).status).toBe(200);
    });
  });
});
