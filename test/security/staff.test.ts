// Issue 8 item 1: `staff.manage` reaches only what its holder could do itself. A member of a limited group may
// create, edit, move, re-password or delete staff, and define or edit groups, only within the permissions it holds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { expectError } from '../helpers/assertions.ts';

const PASSWORD = 'Staff-Passw0rd';
const NEW_PASSWORD = 'Other-Passw0rd9';

describe('staff.manage cannot escalate', () => {
  let t: TestApp;
  let counter = 0;
  /** Leads hold staff.manage and client.view; "strong" also holds invoice.manage; "weak" only client.view. */
  let leadsGroup: number;
  let strongGroup: number;
  let weakGroup: number;
  let lead: { id: number; email: string; basic: [string, string] };

  async function createStaff(groupId: number): Promise<{ id: number; email: string }> {
    counter += 1;
    const email = `sec-staff${counter}@example.com`;
    const reply = await t.admin('staff/create', { email, password: PASSWORD, name: `Member ${counter}`, admin_group_id: groupId });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    return { id: reply.result as number, email };
  }

  const asLead = (path: string, params: Record<string, unknown>) => t.call(`/api/admin/staff/${path}`, params, { basic: lead.basic });
  const staffRow = async (id: number) => (await t.admin('staff/get', { id })).result as { admin_group_id: number; name: string; status: string };
  const groupOf = async (id: number) =>
    ((await t.admin('staff/group_get_list', { per_page: 500 })).result.list as Array<{ id: number; name: string; permissions: string[] }>).find(
      (group) => group.id === id,
    );
  const loginStatus = async (email: string, password: string) => (await t.call('/api/guest/staff/login', { email, password })).status;

  beforeAll(async () => {
    t = await createTestApp();
    leadsGroup = (await t.admin('staff/group_create', { name: 'Leads', permissions: ['staff.manage', 'client.view'] })).result as number;
    strongGroup = (await t.admin('staff/group_create', { name: 'Billing', permissions: ['staff.manage', 'client.view', 'invoice.manage'] })).result as number;
    weakGroup = (await t.admin('staff/group_create', { name: 'Viewers', permissions: ['client.view'] })).result as number;
    const created = await createStaff(leadsGroup);
    lead = { ...created, basic: ['admin', (await t.services.staff.profile(created.id)).api_token] };
  });
  afterAll(async () => {
    await t.close();
  });

  describe('update', () => {
    it('cannot move itself into a stronger group or the Administrators group', async () => {
      expectError(await asLead('update', { id: lead.id, admin_group_id: strongGroup }), 403);
      expectError(await asLead('update', { id: lead.id, admin_group_id: 1 }), 403);
      expect((await staffRow(lead.id)).admin_group_id).toBe(leadsGroup);
    });

    it('cannot edit, deactivate or move a member of a stronger group', async () => {
      const strong = await createStaff(strongGroup);
      expectError(await asLead('update', { id: strong.id, name: 'Renamed' }), 403);
      expectError(await asLead('update', { id: strong.id, status: 'inactive' }), 403);
      expectError(await asLead('update', { id: strong.id, admin_group_id: weakGroup }), 403);
      expect(await staffRow(strong.id)).toMatchObject({ admin_group_id: strongGroup, name: expect.stringMatching(/^Member/), status: 'active' });
    });

    it('cannot move a weaker member into a stronger group', async () => {
      const weak = await createStaff(weakGroup);
      expectError(await asLead('update', { id: weak.id, admin_group_id: strongGroup }), 403);
      expect((await staffRow(weak.id)).admin_group_id).toBe(weakGroup);
    });

    it('may edit members of groups within its permissions and move them between such groups', async () => {
      const weak = await createStaff(weakGroup);
      expect((await asLead('update', { id: weak.id, name: 'Renamed', admin_group_id: leadsGroup })).body).toEqual({ result: true, error: null });
      expect(await staffRow(weak.id)).toMatchObject({ name: 'Renamed', admin_group_id: leadsGroup });
      expect((await asLead('update', { id: weak.id, admin_group_id: weakGroup })).result).toBe(true);
      expect((await staffRow(weak.id)).admin_group_id).toBe(weakGroup);
    });
  });

  describe('change_password', () => {
    it('cannot re-password a member of a stronger group (and so cannot log in as them)', async () => {
      const strong = await createStaff(strongGroup);
      expectError(await asLead('change_password', { id: strong.id, password: NEW_PASSWORD, password_confirm: NEW_PASSWORD }), 403);
      expectError(await asLead('change_password', { id: 1, password: NEW_PASSWORD, password_confirm: NEW_PASSWORD }), 403);
      expect(await loginStatus(strong.email, PASSWORD)).toBe(200);
      expect(await loginStatus(strong.email, NEW_PASSWORD)).toBe(401);
    });

    it('may re-password a member of a group within its permissions; the new password works, the old does not', async () => {
      const weak = await createStaff(weakGroup);
      expect((await asLead('change_password', { id: weak.id, password: NEW_PASSWORD, password_confirm: NEW_PASSWORD })).result).toBe(true);
      expect(await loginStatus(weak.email, NEW_PASSWORD)).toBe(200);
      expect(await loginStatus(weak.email, PASSWORD)).toBe(401);
    });
  });

  describe('create', () => {
    it('cannot create staff in a stronger group or in Administrators', async () => {
      const before = (await t.admin('staff/get_list', {})).result.total as number;
      for (const group of [strongGroup, 1]) {
        expectError(await asLead('create', { email: `sneaky${group}@example.com`, password: PASSWORD, name: 'Sneaky', admin_group_id: group }), 403);
      }
      expect((await t.admin('staff/get_list', {})).result.total).toBe(before);
    });

    it('may create staff in its own or a weaker group', async () => {
      for (const group of [leadsGroup, weakGroup]) {
        const reply = await asLead('create', { email: `ok-${group}@example.com`, password: PASSWORD, name: 'Fine', admin_group_id: group });
        expect(reply.status, JSON.stringify(reply.body)).toBe(200);
        expect((await staffRow(reply.result as number)).admin_group_id).toBe(group);
      }
    });
  });

  describe('delete', () => {
    it('cannot delete a member of a stronger group or an administrator', async () => {
      const strong = await createStaff(strongGroup);
      expectError(await asLead('delete', { id: strong.id }), 403);
      expectError(await asLead('delete', { id: 1 }), 403);
      expect((await staffRow(strong.id)).admin_group_id).toBe(strongGroup);
      expect((await staffRow(1)).admin_group_id).toBe(1);
    });

    it('may delete a member of a weaker group; the record is gone', async () => {
      const weak = await createStaff(weakGroup);
      expect((await asLead('delete', { id: weak.id })).result).toBe(true);
      expectError(await t.admin('staff/get', { id: weak.id }), 404);
    });
  });

  describe('groups', () => {
    it('group_create cannot grant a permission the creator lacks', async () => {
      const before = (await t.admin('staff/group_get_list', { per_page: 500 })).result.total as number;
      expectError(await asLead('group_create', { name: 'Mine', permissions: ['client.view', 'invoice.manage'] }), 403);
      expect((await t.admin('staff/group_get_list', { per_page: 500 })).result.total).toBe(before);
    });

    it('group_create within its permissions works', async () => {
      const reply = await asLead('group_create', { name: 'Helpers', permissions: ['client.view'] });
      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      expect((await groupOf(reply.result as number))?.permissions).toEqual(['client.view']);
    });

    it('group_update cannot add a permission the editor lacks, even to its own group', async () => {
      expectError(await asLead('group_update', { id: leadsGroup, permissions: ['staff.manage', 'client.view', 'invoice.manage'] }), 403);
      expectError(await asLead('group_update', { id: weakGroup, permissions: ['client.view', 'order.manage'] }), 403);
      expect((await groupOf(leadsGroup))?.permissions).toEqual(['staff.manage', 'client.view']);
      expect((await groupOf(weakGroup))?.permissions).toEqual(['client.view']);
    });

    it('group_update cannot edit (rename or strip) a stronger group or Administrators', async () => {
      expectError(await asLead('group_update', { id: strongGroup, name: 'Mine now' }), 403);
      expectError(await asLead('group_update', { id: strongGroup, permissions: ['client.view'] }), 403);
      expectError(await asLead('group_update', { id: 1, name: 'Nobody' }), 403);
      expect(await groupOf(strongGroup)).toMatchObject({ name: 'Billing', permissions: ['staff.manage', 'client.view', 'invoice.manage'] });
      expect((await groupOf(1))?.name).toBe('Administrators');
    });

    it('group_update within its permissions works', async () => {
      const id = (await asLead('group_create', { name: 'Temp', permissions: [] })).result as number;
      expect((await asLead('group_update', { id, name: 'Temp 2', permissions: ['client.view'] })).result).toBe(true);
      expect(await groupOf(id)).toMatchObject({ name: 'Temp 2', permissions: ['client.view'] });
      expect((await asLead('group_delete', { id })).result).toBe(true);
      expect(await groupOf(id)).toBeUndefined();
    });

    it('group_delete of a stronger group → 403, the group stays', async () => {
      const empty = (await t.admin('staff/group_create', { name: 'Empty strong', permissions: ['invoice.manage'] })).result as number;
      expectError(await asLead('group_delete', { id: empty }), 403);
      expect(await groupOf(empty)).toBeDefined();
    });
  });

  it('an administrator still reaches everything', async () => {
    const strong = await createStaff(strongGroup);
    expect((await t.admin('staff/update', { id: strong.id, admin_group_id: 1 })).result).toBe(true);
    expect((await staffRow(strong.id)).admin_group_id).toBe(1);
    expect((await t.admin('staff/group_update', { id: strongGroup, permissions: ['order.manage'] })).result).toBe(true);
    expect((await groupOf(strongGroup))?.permissions).toEqual(['order.manage']);
  });
});
