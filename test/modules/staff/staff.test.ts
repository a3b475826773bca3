// Staff members and admin groups (CONTRACT §6 staff): create, list with pagination, get/update/delete, the
// self and last-administrator guards, passwords, groups and permissions.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_EMAIL, ADMIN_PASSWORD, createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectError, expectInvalid } from '../../helpers/assertions.ts';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;
const STAFF_KEYS = ['admin_group_id', 'created_at', 'email', 'id', 'name', 'status', 'updated_at'];
const PASSWORD = 'Staff-Passw0rd';

function expectNoSecrets(record: Record<string, unknown>): void {
  for (const key of Object.keys(record)) expect(key).not.toMatch(/password|token|hash/i);
  expect(JSON.stringify(record)).not.toMatch(/argon2/);
}

describe('staff', () => {
  let t: TestApp;
  let counter = 0;

  function email(): string {
    counter += 1;
    return `staff${counter}@example.com`;
  }

  async function createStaff(overrides: Record<string, unknown> = {}): Promise<{ id: number; email: string }> {
    const address = (overrides.email as string | undefined) ?? email();
    const reply = await t.admin('staff/create', { email: address, password: PASSWORD, name: 'Staff Member', admin_group_id: 1, ...overrides });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    return { id: reply.result as number, email: address };
  }

  async function tokenOf(id: number): Promise<string> {
    return (await t.services.staff.profile(id)).api_token;
  }

  /** Sets every active administrator but the seed one inactive, checking each change, so id 1 is the last one. */
  async function deactivateOtherAdministrators(): Promise<void> {
    const admins = (await t.admin('staff/get_list', { per_page: 500, status: 'active' })).result.list as Array<{ id: number; admin_group_id: number }>;
    for (const admin of admins.filter((member) => member.admin_group_id === 1 && member.id !== 1)) {
      expect((await t.admin('staff/update', { id: admin.id, status: 'inactive' })).result).toBe(true);
      expect((await t.admin('staff/get', { id: admin.id })).result.status).toBe('inactive');
    }
    const left = (await t.admin('staff/get_list', { per_page: 500, status: 'active' })).result.list as Array<{ id: number; admin_group_id: number }>;
    expect(left.filter((member) => member.admin_group_id === 1).map((member) => member.id)).toEqual([1]);
  }

  async function staffTotal(): Promise<number> {
    return (await t.admin('staff/get_list', {})).result.total as number;
  }

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  describe('create and get', () => {
    it('creates with the seed fields and returns the id; the record has exactly the contract fields', async () => {
      const reply = await t.admin('staff/create', { email: 'New.Staff@Example.com', password: PASSWORD, name: 'New Staff', admin_group_id: 2, status: 'inactive' });
      expect(reply.status).toBe(200);
      expect(reply.body.error).toBeNull();
      expect(Number.isInteger(reply.result)).toBe(true);
      const record = (await t.admin('staff/get', { id: reply.result })).result as Record<string, unknown>;
      expect(Object.keys(record).toSorted()).toEqual(STAFF_KEYS);
      expect(record).toMatchObject({ id: reply.result, email: 'new.staff@example.com', name: 'New Staff', status: 'inactive', admin_group_id: 2 });
      expect(record.created_at).toMatch(ISO);
      expect(record.updated_at).toMatch(ISO);
      expectNoSecrets(record);
    });

    it('status defaults to active', async () => {
      const { id } = await createStaff();
      expect((await t.admin('staff/get', { id })).result.status).toBe('active');
    });

    it('a duplicate e-mail (any case) → 409', async () => {
      const { email: address } = await createStaff();
      const before = await staffTotal();
      expectError(await t.admin('staff/create', { email: address, password: PASSWORD, name: 'Dup', admin_group_id: 1 }), 409, 409);
      expectError(await t.admin('staff/create', { email: address.toUpperCase(), password: PASSWORD, name: 'Dup', admin_group_id: 1 }), 409, 409);
      expect(await staffTotal()).toBe(before);
    });

    it.each([
      ['Sh0rt', 'too short'],
      ['alllowercase1', 'no upper-case letter'],
      ['ALLUPPERCASE1', 'no lower-case letter'],
      ['NoDigitsHere', 'no digit'],
      [`Aa1${'x'.repeat(254)}`, 'too long'],
    ])('a weak password %#(%s, %s) → 422 naming password', async (password) => {
      const before = await staffTotal();
      expectInvalid(await t.admin('staff/create', { email: email(), password, name: 'Weak', admin_group_id: 1 }), 'password');
      expect(await staffTotal()).toBe(before);
    });

    it('an unknown group → 422 naming admin_group_id', async () => {
      const before = await staffTotal();
      expectInvalid(await t.admin('staff/create', { email: email(), password: PASSWORD, name: 'Lost', admin_group_id: 999 }), 'admin_group_id');
      expect(await staffTotal()).toBe(before);
    });

    it.each([
      [{ password: PASSWORD, name: 'x', admin_group_id: 1 }, 'email'],
      [{ email: 'not-an-email', password: PASSWORD, name: 'x', admin_group_id: 1 }, 'email'],
      [{ email: 5, password: PASSWORD, name: 'x', admin_group_id: 1 }, 'email'],
      [{ email: 'ok@example.com', name: 'x', admin_group_id: 1 }, 'password'],
      [{ email: 'ok@example.com', password: PASSWORD, admin_group_id: 1 }, 'name'],
      [{ email: 'ok@example.com', password: PASSWORD, name: '', admin_group_id: 1 }, 'name'],
      [{ email: 'ok@example.com', password: PASSWORD, name: 'n'.repeat(300), admin_group_id: 1 }, 'name'],
      [{ email: 'ok@example.com', password: PASSWORD, name: 'x' }, 'admin_group_id'],
      [{ email: 'ok@example.com', password: PASSWORD, name: 'x', admin_group_id: 'abc' }, 'admin_group_id'],
      [{ email: 'ok@example.com', password: PASSWORD, name: 'x', admin_group_id: 0 }, 'admin_group_id'],
      [{ email: 'ok@example.com', password: PASSWORD, name: 'x', admin_group_id: 1, status: 'sleeping' }, 'status'],
    ])('bad input %# → 422 naming the parameter', async (params, param) => {
      const before = await staffTotal();
      expectInvalid(await t.admin('staff/create', params), param);
      expect(await staffTotal()).toBe(before);
    });

    it('get of an unknown id → 404; bad ids → 422', async () => {
      expectError(await t.admin('staff/get', { id: 999_999 }), 404, 404);
      expectInvalid(await t.admin('staff/get', {}), 'id');
      expectInvalid(await t.admin('staff/get', { id: 'abc' }), 'id');
      expectInvalid(await t.admin('staff/get', { id: {} }), 'id');
      expectInvalid(await t.admin('staff/get', { id: -1 }), 'id');
      expectInvalid(await t.admin('staff/get', { id: 2_147_483_648 }), 'id');
    });
  });

  describe('get_list', () => {
    it('paginates with page, per_page, pages and total', async () => {
      for (let i = 0; i < 3; i++) await createStaff({ name: 'Paged Member' });
      const total = await staffTotal();
      expect(total).toBeGreaterThanOrEqual(4);
      const first = (await t.admin('staff/get_list', { page: 1, per_page: 2 })).result;
      expect(Object.keys(first).toSorted()).toEqual(['list', 'page', 'pages', 'per_page', 'total']);
      expect(first).toMatchObject({ page: 1, per_page: 2, total, pages: Math.ceil(total / 2) });
      expect(first.list).toHaveLength(2);
      const second = (await t.admin('staff/get_list', { page: 2, per_page: 2 })).result;
      expect(second.list).toHaveLength(2);
      const ids = [...first.list, ...second.list].map((record: { id: number }) => record.id);
      expect(new Set(ids).size).toBe(4);

      const past = (await t.admin('staff/get_list', { page: 1000, per_page: 2 })).result;
      expect(past).toEqual({ list: [], page: 1000, per_page: 2, pages: Math.ceil(total / 2), total });

      const defaults = (await t.admin('staff/get_list', {})).result;
      expect(defaults.page).toBe(1);
      expect(defaults.per_page).toBe(100);
      for (const record of defaults.list as Array<Record<string, unknown>>) {
        expect(Object.keys(record).toSorted()).toEqual(STAFF_KEYS);
        expectNoSecrets(record);
      }
    });

    it.each([
      [{ per_page: 0 }, 'per_page'],
      [{ per_page: 501 }, 'per_page'],
      [{ per_page: 'many' }, 'per_page'],
      [{ page: 0 }, 'page'],
      [{ page: -3 }, 'page'],
      [{ page: 1.5 }, 'page'],
      [{ status: 'gone' }, 'status'],
      [{ search: 's'.repeat(300) }, 'search'],
    ])('%o → 422', async (params, param) => {
      expectInvalid(await t.admin('staff/get_list', params), param);
    });

    it('per_page 500 is allowed', async () => {
      expect((await t.admin('staff/get_list', { per_page: 500 })).result.per_page).toBe(500);
    });

    it('filters by status and search', async () => {
      const { id } = await createStaff({ name: 'Zebedee Quux', status: 'inactive' });
      const inactive = (await t.admin('staff/get_list', { status: 'inactive', per_page: 500 })).result;
      expect(inactive.list.every((record: { status: string }) => record.status === 'inactive')).toBe(true);
      expect(inactive.list.map((record: { id: number }) => record.id)).toContain(id);
      const found = (await t.admin('staff/get_list', { search: 'zebedee' })).result;
      expect(found.total).toBe(1);
      expect(found.list[0].id).toBe(id);
      expect((await t.admin('staff/get_list', { search: ADMIN_EMAIL.toUpperCase() })).result.list[0].id).toBe(1);
    });
  });

  describe('update, delete, passwords', () => {
    it('updates fields and returns true', async () => {
      const { id } = await createStaff();
      const newEmail = email();
      const reply = await t.admin('staff/update', { id, name: 'Renamed', email: newEmail.toUpperCase(), admin_group_id: 2, status: 'inactive' });
      expect(reply.body).toEqual({ result: true, error: null });
      expect((await t.admin('staff/get', { id })).result).toMatchObject({ id, name: 'Renamed', email: newEmail, admin_group_id: 2, status: 'inactive' });
    });

    it('update failures: unknown id 404, duplicate e-mail 409, unknown group 422, bad values 422', async () => {
      const { id } = await createStaff();
      const other = await createStaff();
      expectError(await t.admin('staff/update', { id: 999_999, name: 'x' }), 404, 404);
      expectError(await t.admin('staff/update', { id, email: other.email }), 409, 409);
      expectInvalid(await t.admin('staff/update', { id, admin_group_id: 999 }), 'admin_group_id');
      expectInvalid(await t.admin('staff/update', { id, name: '' }), 'name');
      expectInvalid(await t.admin('staff/update', { id, email: 'nope' }), 'email');
      expectInvalid(await t.admin('staff/update', { id, status: 'deleted' }), 'status');
      expectInvalid(await t.admin('staff/update', { name: 'x' }), 'id');
      expect((await t.admin('staff/get', { id })).result.name).toBe('Staff Member');
    });

    it('delete returns true; the record is gone', async () => {
      const { id } = await createStaff();
      expect((await t.admin('staff/delete', { id })).body).toEqual({ result: true, error: null });
      expectError(await t.admin('staff/get', { id }), 404, 404);
      expectError(await t.admin('staff/delete', { id }), 404, 404);
      expectInvalid(await t.admin('staff/delete', { id: 'x' }), 'id');
    });

    it('a staff member cannot deactivate or delete themselves (409)', async () => {
      expectError(await t.admin('staff/update', { id: 1, status: 'inactive' }), 409, 409);
      expectError(await t.admin('staff/delete', { id: 1 }), 409, 409);
      expect((await t.admin('staff/get', { id: 1 })).result.status).toBe('active');
    });

    it('nobody can deactivate, demote or delete the last active administrator (409, or 403 for non-administrators)', async () => {
      const group = (await t.admin('staff/group_create', { name: 'Managers', permissions: ['staff.manage'] })).result as number;
      const manager = await createStaff({ admin_group_id: group });
      const basic: [string, string] = ['admin', await tokenOf(manager.id)];
      // Other administrators exist (created above); take them out first so the seed admin is the last one.
      await deactivateOtherAdministrators();
      // A staff.manage holder may not touch administrators at all; the last one is doubly protected.
      expectError(await t.call('/api/admin/staff/update', { id: 1, status: 'inactive' }, { basic }), 403, 403);
      expectError(await t.call('/api/admin/staff/update', { id: 1, admin_group_id: group }, { basic }), 403, 403);
      expectError(await t.call('/api/admin/staff/delete', { id: 1 }, { basic }), 403, 403);
      // The service refuses it too, whoever asks (e.g. an administrator acting on another through a race).
      await expect(t.services.staff.update(manager.id, 1, { status: 'inactive' })).rejects.toMatchObject({ code: 409 });
      await expect(t.services.staff.delete(manager.id, 1)).rejects.toMatchObject({ code: 409 });
      expect((await t.admin('staff/get', { id: 1 })).result).toMatchObject({ status: 'active', admin_group_id: 1 });

      // With a second active administrator the first may go inactive.
      const second = await createStaff();
      expect((await t.admin('staff/update', { id: second.id, status: 'inactive' })).result).toBe(true);
      expect((await t.admin('staff/get', { id: second.id })).result.status).toBe('inactive');
      expect((await t.admin('staff/update', { id: second.id, status: 'active' })).result).toBe(true);
      expect((await t.admin('staff/get', { id: second.id })).result.status).toBe('active');
      expect((await t.admin('staff/delete', { id: second.id })).result).toBe(true);
      expectError(await t.admin('staff/get', { id: second.id }), 404, 404);
    });

    it('staff.manage cannot reach the Administrators group or define permissions (403); ordinary staff it can manage', async () => {
      const group = (await t.admin('staff/group_create', { name: 'Team leads', permissions: ['staff.manage'] })).result as number;
      const lead = await createStaff({ admin_group_id: group });
      const basic: [string, string] = ['admin', await tokenOf(lead.id)];
      const before = await staffTotal();
      expectError(await t.call('/api/admin/staff/create', { email: email(), password: PASSWORD, name: 'Sneaky', admin_group_id: 1 }, { basic }), 403, 403);
      expect(await staffTotal()).toBe(before);
      expectError(await t.call('/api/admin/staff/update', { id: lead.id, admin_group_id: 1 }, { basic }), 403, 403);
      expectError(await t.call('/api/admin/staff/change_password', { id: 1, password: 'New-Passw0rd', password_confirm: 'New-Passw0rd' }, { basic }), 403, 403);
      expectError(await t.call('/api/admin/staff/group_update', { id: group, permissions: ['staff.manage', 'client.manage'] }, { basic }), 403, 403);
      expectError(await t.call('/api/admin/staff/group_create', { name: 'Mine', permissions: ['client.manage'] }, { basic }), 403, 403);
      expectError(await t.call('/api/admin/staff/group_delete', { id: 2 }, { basic }), 403, 403);
      expect((await t.admin('staff/get', { id: lead.id })).result.admin_group_id).toBe(group);

      const member = await createStaff({ admin_group_id: group });
      expect((await t.call('/api/admin/staff/update', { id: member.id, name: 'Renamed' }, { basic })).result).toBe(true);
      expect((await t.admin('staff/get', { id: member.id })).result.name).toBe('Renamed');
      expect(
        (await t.call('/api/admin/staff/change_password', { id: member.id, password: 'New-Passw0rd', password_confirm: 'New-Passw0rd' }, { basic })).result,
      ).toBe(true);
      expect((await t.call('/api/guest/staff/login', { email: member.email, password: 'New-Passw0rd' })).status).toBe(200);
      expectError(await t.call('/api/guest/staff/login', { email: member.email, password: PASSWORD }), 206, 401);
      expect((await t.call('/api/admin/staff/delete', { id: member.id }, { basic })).result).toBe(true);
      expectError(await t.admin('staff/get', { id: member.id }), 404, 404);
    });

    it('change_password: mismatch and weak → 422; then the new password logs in and the old one does not', async () => {
      const { id, email: address } = await createStaff();
      expectInvalid(await t.admin('staff/change_password', { id, password: 'New-Passw0rd', password_confirm: 'Other-Passw0rd' }), 'password_confirm');
      expectInvalid(await t.admin('staff/change_password', { id, password: 'weak', password_confirm: 'weak' }), 'password');
      expectInvalid(await t.admin('staff/change_password', { id, password: 'New-Passw0rd' }), 'password_confirm');
      expectError(await t.admin('staff/change_password', { id: 999_999, password: 'New-Passw0rd', password_confirm: 'New-Passw0rd' }), 404, 404);
      expect((await t.call('/api/guest/staff/login', { email: address, password: PASSWORD })).status).toBe(200);

      expect((await t.admin('staff/change_password', { id, password: 'New-Passw0rd', password_confirm: 'New-Passw0rd' })).result).toBe(true);
      expect((await t.call('/api/guest/staff/login', { email: address, password: 'New-Passw0rd' })).status).toBe(200);
      expectError(await t.call('/api/guest/staff/login', { email: address, password: PASSWORD }), 206, 401);
    });
  });

  describe('concurrency', () => {
    it('concurrent creates with one e-mail: exactly one succeeds, the others → 409', async () => {
      const address = email();
      const replies = await Promise.all(
        Array.from({ length: 4 }, () => t.admin('staff/create', { email: address, password: PASSWORD, name: 'Racer', admin_group_id: 1 })),
      );
      expect(replies.map((reply) => reply.status).toSorted((a, b) => a - b)).toEqual([200, 409, 409, 409]);
    });

    it('concurrent updates to one e-mail: exactly one succeeds, the other → 409', async () => {
      const first = await createStaff();
      const second = await createStaff();
      const address = email();
      const replies = await Promise.all([t.admin('staff/update', { id: first.id, email: address }), t.admin('staff/update', { id: second.id, email: address })]);
      expect(replies.map((reply) => reply.status).toSorted((a, b) => a - b), JSON.stringify(replies.map((reply) => reply.body))).toEqual([200, 409]);
    });

    it('two administrators deactivating each other at once leave one active', async () => {
      // Only the seed admin and one other are active administrators.
      await deactivateOtherAdministrators();
      const other = await createStaff();
      const otherBasic: [string, string] = ['admin', await tokenOf(other.id)];
      const replies = await Promise.all([
        t.admin('staff/update', { id: other.id, status: 'inactive' }),
        t.call('/api/admin/staff/update', { id: 1, status: 'inactive' }, { basic: otherBasic }),
      ]);
      // The second either waits and is refused (409), or arrives after the first and finds its caller inactive (205).
      const codes = replies.map((reply) => reply.body.error?.code ?? 200).toSorted((a, b) => a - b);
      expect(codes[0], JSON.stringify(replies.map((reply) => reply.body))).toBe(200);
      expect([205, 409]).toContain(codes[1]);
      const active = (await t.services.db.selectFrom('staff').select('id').where('admin_group_id', '=', 1).where('status', '=', 'active').execute()).length;
      expect(active).toBe(1);
      // Put the seed admin back for the tests that follow.
      if ((await t.services.staff.principalById(1)) === null) {
        await t.call('/api/admin/staff/update', { id: 1, status: 'active' }, { basic: otherBasic });
      }
    });
  });

  describe('groups', () => {
    it('create, list, update, delete', async () => {
      const id = (await t.admin('staff/group_create', { name: 'Billing', permissions: ['client.view', 'order.manage', 'client.view'] })).result as number;
      expect(Number.isInteger(id)).toBe(true);
      const list = (await t.admin('staff/group_get_list', { per_page: 500 })).result;
      expect(list.list.map((group: { id: number }) => group.id)).toContain(1);
      const group = list.list.find((entry: { id: number }) => entry.id === id);
      expect(group).toMatchObject({ id, name: 'Billing', permissions: ['client.view', 'order.manage'] });
      expect(group.created_at).toMatch(ISO);

      expect((await t.admin('staff/group_update', { id, name: 'Billing team', permissions: ['client.manage'] })).result).toBe(true);
      const updated = (await t.admin('staff/group_get_list', { per_page: 500 })).result.list.find((entry: { id: number }) => entry.id === id);
      expect(updated).toMatchObject({ name: 'Billing team', permissions: ['client.manage'] });

      const noPermissions = (await t.admin('staff/group_create', { name: 'Empty' })).result as number;
      const empty = (await t.admin('staff/group_get_list', { per_page: 500 })).result.list.find((entry: { id: number }) => entry.id === noPermissions);
      expect(empty.permissions).toEqual([]);

      expect((await t.admin('staff/group_delete', { id })).result).toBe(true);
      expect((await t.admin('staff/group_get_list', { per_page: 500 })).result.list.map((entry: { id: number }) => entry.id)).not.toContain(id);
      expectError(await t.admin('staff/group_delete', { id }), 404, 404);
      expectError(await t.admin('staff/group_update', { id, name: 'x' }), 404, 404);
    });

    it('group failures: the Administrators group is fixed; a group with members cannot go; bad input → 422', async () => {
      expectError(await t.admin('staff/group_delete', { id: 1 }), 409, 409);
      expectError(await t.admin('staff/group_update', { id: 1, permissions: ['client.view'] }), 409, 409);
      const group = (await t.admin('staff/group_create', { name: 'Occupied' })).result as number;
      await createStaff({ admin_group_id: group });
      expectError(await t.admin('staff/group_delete', { id: group }), 409, 409);

      const groups = async (): Promise<number> => (await t.admin('staff/group_get_list', {})).result.total as number;
      const before = await groups();
      expectInvalid(await t.admin('staff/group_create', {}), 'name');
      expectInvalid(await t.admin('staff/group_create', { name: '' }), 'name');
      expectInvalid(await t.admin('staff/group_create', { name: 'g'.repeat(300) }), 'name');
      expectInvalid(await t.admin('staff/group_create', { name: 'x', permissions: 'client.view' }), 'permissions');
      expectInvalid(await t.admin('staff/group_create', { name: 'x', permissions: ['Client View'] }), 'permissions.0');
      expectInvalid(await t.admin('staff/group_create', { name: 'x', permissions: [5] }), 'permissions.0');
      expectInvalid(await t.admin('staff/group_update', { name: 'x' }), 'id');
      expectInvalid(await t.admin('staff/group_get_list', { per_page: 0 }), 'per_page');
      expect(await groups()).toBe(before);
    });
  });

  describe('permissions', () => {
    it('without client.view: 403 on admin/client/get_list; with it: 200, but 403 on client/create', async () => {
      const none = (await t.admin('staff/group_create', { name: 'Nothing', permissions: [] })).result as number;
      const viewers = (await t.admin('staff/group_create', { name: 'Viewers', permissions: ['client.view'] })).result as number;
      const nobody = await createStaff({ admin_group_id: none });
      const viewer = await createStaff({ admin_group_id: viewers });
      const nobodyBasic: [string, string] = ['admin', await tokenOf(nobody.id)];
      const viewerBasic: [string, string] = ['admin', await tokenOf(viewer.id)];

      const refused = await t.call('/api/admin/client/get_list', {}, { basic: nobodyBasic });
      expectError(refused, 403, 403);
      expect(refused.body.error!.message).toContain('client.view');
      expectError(await t.call('/api/admin/staff/get_list', {}, { basic: nobodyBasic }), 403, 403);
      // Own profile needs no permission.
      expect((await t.call('/api/admin/profile/get', {}, { basic: nobodyBasic })).status).toBe(200);

      expect((await t.call('/api/admin/client/get_list', {}, { basic: viewerBasic })).status).toBe(200);
      const before = (await t.admin('client/get_list', {})).result.total as number;
      const create = await t.call('/api/admin/client/create', { email: 'viewer-made@example.com', first_name: 'No' }, { basic: viewerBasic });
      expectError(create, 403, 403);
      expect(create.body.error!.message).toContain('client.manage');
      expect((await t.admin('client/get_list', {})).result.total).toBe(before);
      expectError(await t.call('/api/admin/staff/create', { email: email(), password: PASSWORD, name: 'x', admin_group_id: 1 }, { basic: viewerBasic }), 403, 403);
      expectError(await t.call('/api/admin/profile/api_key_reset', { id: 1 }, { basic: viewerBasic }), 403, 403);

      // A permission granted later applies at once; a session follows the group too.
      const browser = await t.login('staff', viewer.email, PASSWORD);
      expectError(await t.call('/api/admin/client/create', { email: 'viewer-made@example.com', first_name: 'No' }, { browser, csrf: true }), 403, 403);
      expect((await t.admin('staff/group_update', { id: viewers, permissions: ['client.view', 'client.manage'] })).result).toBe(true);
      expect((await t.call('/api/admin/client/create', { email: 'viewer-made@example.com', first_name: 'Yes' }, { browser, csrf: true })).status).toBe(200);
    });

    it('the seeded Support group can view clients', async () => {
      const support = await createStaff({ admin_group_id: 2 });
      const basic: [string, string] = ['admin', await tokenOf(support.id)];
      expect((await t.call('/api/admin/client/get_list', {}, { basic })).status).toBe(200);
      expectError(await t.call('/api/admin/client/update', { id: 1, first_name: 'x' }, { basic }), 403, 403);
    });

    it('the seed admin can log in and every staff action refuses a client token', async () => {
      expect((await t.call('/api/guest/staff/login', { email: ADMIN_EMAIL, password: ADMIN_PASSWORD })).status).toBe(200);
      const client = await t.createClient();
      for (const action of ['create', 'get_list', 'get', 'update', 'delete', 'change_password', 'group_get_list', 'group_create', 'group_update', 'group_delete']) {
        const reply = await t.call(`/api/admin/staff/${action}`, { id: 1 }, { basic: ['client', client.token] });
        expectError(reply, 203, 401);
        expectError(await t.call(`/api/admin/staff/${action}`, { id: 1 }, { basic: ['admin', client.token] }), 205, 401);
      }
    });
  });
});
