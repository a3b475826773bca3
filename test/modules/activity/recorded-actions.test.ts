// The audit log records changing staff and API-token actions across modules (issue 25 item 8): who, from where, the
// action, its target and the fields changed before → after, secrets only as "changed"; staff logins and refused
// logins; read-only actions and client actions write nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deferToActionTransaction } from '../../../src/db/ambient.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD, Browser, createTestApp, type TestApp } from '../../helpers/app.ts';
import { asClient, asStaff, makeProduct, staffWith } from '../../helpers/selling-fixtures.ts';
import { buyKey, createPlan } from '../../helpers/apikey.ts';

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

  it('a setting change: values before → after, a secret setting only as "changed"', async () => {
    const secret = 'Smtp-Secret-Value-42';
    const reply = await t.admin('system/settings_update', { company_name: 'Acme Audit', smtp_password: secret });
    expect(reply.body.error).toBeNull();
    const entry = await latest();
    expect(entry).toMatchObject({ action: 'admin/system/settings_update', target_type: 'setting', target_id: null });
    expect(change(entry, 'company_name')).toEqual({ field: 'company_name', from: null, to: 'Acme Audit' });
    expect(change(entry, 'smtp_password')).toEqual({ field: 'smtp_password', changed: true });
    const again = await t.admin('system/settings_update', { smtp_password: 'Another-Secret-77' });
    expect(again.body.error).toBeNull();
    expect((await latest()).changes).toEqual([{ field: 'smtp_password', changed: true }]);
    const all = JSON.stringify(await entries());
    expect(all).not.toContain(secret);
    expect(all).not.toContain('Another-Secret-77');
  });

  it('an invoice refund and a credit added to a balance', async () => {
    const client = await t.createClient();
    const product = await makeProduct(t);
    expect((await t.admin('order/create', { client_id: client.id, product_id: product, period: '1M', invoice_option: 'issue-invoice' })).body.error).toBeNull();
    const invoiceId = (await t.admin('invoice/get_list', { client_id: client.id })).result.list[0].id as number;
    expect((await t.admin('invoice/mark_as_paid', { id: invoiceId })).body.error).toBeNull();
    expect(await latest()).toMatchObject({ action: 'admin/invoice/mark_as_paid', target_type: 'invoice', target_id: String(invoiceId) });
    // The refund (a provider call for a card payment) runs outside an action transaction, recorded after it.
    const { gatewayPayments } = t.services;
    const original = gatewayPayments.refund.bind(gatewayPayments);
    let insideAction: boolean | null = null;
    gatewayPayments.refund = (...args) => {
      insideAction = deferToActionTransaction(t.services.db as never, () => undefined);
      return original(...args);
    };
    try {
      expect((await t.admin('invoice/refund', { id: invoiceId })).body.error).toBeNull();
    } finally {
      gatewayPayments.refund = original;
    }
    expect(insideAction).toBe(false);
    const refund = await latest();
    expect(refund).toMatchObject({ action: 'admin/invoice/refund', target_type: 'invoice', target_id: String(invoiceId) });
    expect(change(refund, 'status')).toEqual({ field: 'status', from: 'paid', to: 'refunded' });

    expect((await t.admin('client/balance_add_funds', { id: client.id, amount: '5.00', description: 'Goodwill' })).body.error).toBeNull();
    const credit = await latest();
    expect(credit).toMatchObject({ action: 'admin/client/balance_add_funds', target_type: 'client', target_id: String(client.id) });
    expect(change(credit, 'amount')).toEqual({ field: 'amount', from: null, to: '5.00' });
    expect(change(credit, 'description')).toEqual({ field: 'description', from: null, to: 'Goodwill' });
  });

  it('a key reset and a key disabled: the key itself never appears', async () => {
    const plan = await createPlan(t, {});
    const client = await t.createClient();
    const { orderId, key } = await buyKey(t, plan, client.id);
    const reset = await t.admin('serviceapikey/reset', { order_id: orderId });
    expect(reset.body.error).toBeNull();
    const resetEntry = await latest();
    expect(resetEntry).toMatchObject({ action: 'admin/serviceapikey/reset', target_type: 'order', target_id: String(orderId) });
    expect(resetEntry.changes.some((c) => c.field.endsWith('key_hash') && c.changed === true)).toBe(true);
    expect((await t.admin('serviceapikey/update', { order_id: orderId, valid: false })).body.error).toBeNull();
    const disabled = await latest();
    expect(disabled).toMatchObject({ action: 'admin/serviceapikey/update', target_type: 'order', target_id: String(orderId) });
    expect(disabled.changes.length).toBeGreaterThan(0);
    const fresh = (await t.admin('serviceapikey/get', { order_id: orderId })).result.api_key as string;
    const all = JSON.stringify(await entries());
    expect(all).not.toContain(key);
    expect(all).not.toContain(fresh);
  });

  it('a staff group\'s permissions: before → after, by a staff member who is not the administrator', async () => {
    const token = await staffWith(t, ['staff.manage', 'client.view']);
    const group = (await t.admin('staff/group_create', { name: 'Audited group', permissions: ['client.view'] })).result as number;
    const me = (await asStaff(t, token, 'profile/get')).result as { id: number; name: string };
    expect((await asStaff(t, token, 'staff/group_update', { id: group, permissions: ['client.view', 'staff.manage'] })).body.error).toBeNull();
    const entry = await latest();
    expect(entry).toMatchObject({ action: 'admin/staff/group_update', actor_type: 'api_token', admin_id: me.id, target_type: 'staff_group', target_id: String(group) });
    const permissions = change(entry, 'permissions') as { from: unknown; to: unknown };
    expect(permissions.from).toEqual(['client.view']);
    expect(permissions.to).toEqual(expect.arrayContaining(['client.view', 'staff.manage']));
  });

  it('a staff password change says only "changed"', async () => {
    const created = (await t.admin('staff/create', { email: `pw-${Date.now()}@example.com`, password: 'First-Passw0rd-1', name: 'Pw', admin_group_id: 1 })).result as number;
    expect(JSON.stringify(await latest())).not.toContain('First-Passw0rd-1');
    expect((await t.admin('staff/change_password', { id: created, password: 'Second-Passw0rd-2', password_confirm: 'Second-Passw0rd-2' })).body.error).toBeNull();
    const entry = await latest();
    expect(entry).toMatchObject({ action: 'admin/staff/change_password', target_type: 'staff', target_id: String(created) });
    expect(change(entry, 'password_hash')).toEqual({ field: 'password_hash', changed: true });
    expect(JSON.stringify(await entries())).not.toContain('Second-Passw0rd-2');
  });

  it('a change in a staff browser session is the staff member\'s, not a token\'s', async () => {
    const browser = await t.login('staff', ADMIN_EMAIL, ADMIN_PASSWORD, new Browser());
    const client = await t.createClient();
    const reply = await t.call('/api/admin/client/update', { id: client.id, company: 'Session Co' }, { browser, csrf: true });
    expect(reply.body.error).toBeNull();
    expect(await latest()).toMatchObject({ action: 'admin/client/update', actor_type: 'staff', admin_id: adminId, target_id: String(client.id) });
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
