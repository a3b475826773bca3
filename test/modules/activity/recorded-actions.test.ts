// The audit log records changing staff and API-token actions across modules (issue 25 item 8): who, from where, the
// action, its target and the fields changed before → after, secrets only as "changed"; staff logins and refused
// logins; read-only actions and client actions write nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_EMAIL, ADMIN_PASSWORD, Browser, createTestApp, type TestApp } from '../../helpers/app.ts';
import { asClient, makeProduct } from '../../helpers/selling-fixtures.ts';

interface Entry {
  id: number;
  action: string;
  actor_type: string;
  admin_id: number | null;
  staff: { id: number; name: string | null; email: string | null } | null;
  ip: string | null;
  target_type: string | null;
  target_id: string | null;
  priority: number;
  message: string;
  changes: Array<{ field: string; from?: unknown; to?: unknown; changed?: true }>;
}

describe('the audit log records changes', () => {
  let t: TestApp;
  let adminId: number;
  beforeAll(async () => {
    t = await createTestApp();
    adminId = (await t.admin('profile/get')).result.id as number;
  });
  afterAll(async () => {
    await t.close();
  });

  /** The newest entries, newest first. */
  async function entries(filters: Record<string, unknown> = {}): Promise<Entry[]> {
    const reply = await t.admin('activity/log_get_list', { per_page: 100, ...filters });
    expect(reply.body.error).toBeNull();
    return reply.result.list as Entry[];
  }
  const latest = async (): Promise<Entry> => (await entries())[0]!;
  const count = async (): Promise<number> => (await t.admin('activity/log_get_list', { per_page: 1 })).result.total as number;
  const change = (entry: Entry, field: string) => entry.changes.find((c) => c.field === field);

  it('a client update: who, address, target and before → after', async () => {
    const client = await t.createClient({ first_name: 'Ada' });
    const reply = await t.call('/api/admin/client/update', { id: client.id, first_name: 'Grace', company: 'Navy' }, { basic: ['admin', t.adminToken], ip: '203.0.113.7' });
    expect(reply.body.error).toBeNull();
    const entry = await latest();
    expect(entry).toMatchObject({
      action: 'admin/client/update',
      actor_type: 'api_token',
      admin_id: adminId,
      staff: { id: adminId, email: ADMIN_EMAIL },
      ip: '203.0.113.7',
      target_type: 'client',
      target_id: String(client.id),
      priority: 6,
    });
    expect(change(entry, 'first_name')).toEqual({ field: 'first_name', from: 'Ada', to: 'Grace' });
    expect(change(entry, 'company')).toMatchObject({ to: 'Navy' });
    expect(change(entry, 'updated_at')).toBeUndefined();
    expect(entry.message).toContain('admin/client/update on client #');
  });

  it('a product price change shows the old and new pricing', async () => {
    const id = await makeProduct(t);
    const pricing = { type: 'recurrent', recurrent: { '1M': { price: '12.50', setup: '0', enabled: true } } };
    expect((await t.admin('product/update', { id, pricing })).body.error).toBeNull();
    const entry = await latest();
    expect(entry).toMatchObject({ action: 'admin/product/update', target_type: 'product', target_id: String(id) });
    const priced = change(entry, 'pricing') as { from: any; to: any };
    // As stored: money in minor units.
    expect(JSON.stringify(priced.from)).toContain('"price":1000');
    expect(JSON.stringify(priced.to)).toContain('"price":1250');
  });

  it('a product create names the new id', async () => {
    const reply = await t.admin('product/prepare', { title: 'Audited', type: 'custom' });
    const entry = await latest();
    expect(entry).toMatchObject({ action: 'admin/product/prepare', target_type: 'product', target_id: String(reply.result) });
    expect(change(entry, 'title')).toEqual({ field: 'title', from: null, to: 'Audited' });
  });

  it('read-only actions write nothing', async () => {
    const before = await count();
    await t.admin('client/get_list');
    await t.admin('product/get_list');
    await t.admin('system/settings_get');
    await t.admin('staff/permission_get_list');
    await t.admin('activity/log_get_list');
    expect(await count()).toBe(before);
  });

  it('client actions write nothing', async () => {
    const client = await t.createClient();
    const before = await count();
    expect((await asClient(t, client.token, 'profile/update', { first_name: 'Self' })).body.error).toBeNull();
    expect(await count()).toBe(before);
  });

  it('a staff login and a refused one; never the password', async () => {
    const browser = new Browser();
    await t.login('staff', ADMIN_EMAIL, ADMIN_PASSWORD, browser);
    const ok = await latest();
    expect(ok).toMatchObject({ action: 'guest/staff/login', actor_type: 'staff', admin_id: adminId, target_type: 'staff', target_id: String(adminId), priority: 6 });
    const refused = await t.call('/api/guest/staff/login', { email: ADMIN_EMAIL, password: 'Wrong-Passw0rd-xyz' }, { ip: '198.51.100.9' });
    expect(refused.status).toBe(401);
    const failed = await latest();
    expect(failed).toMatchObject({ action: 'guest/staff/login', actor_type: 'guest', admin_id: null, ip: '198.51.100.9', priority: 4 });
    expect(failed.message).toContain(ADMIN_EMAIL);
    const all = JSON.stringify(await entries());
    expect(all).not.toContain('Wrong-Passw0rd-xyz');
    expect(all).not.toContain(ADMIN_PASSWORD);
  });
});
