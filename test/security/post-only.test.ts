// Issue 8 item 6 (CONTRACT §10 "POST only"): actions that carry credentials answer GET with the 405 envelope, never
// echo the credentials, and change nothing; over POST they work. A registry check keeps new credential-carrying
// actions from missing the flag.
import type { TObject } from '@sinclair/typebox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listActions } from '../../src/http/gateway.ts';
import { modules } from '../../src/modules/index.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD, Browser, createTestApp, type Reply, type TestApp } from '../helpers/app.ts';
import { expectError } from '../helpers/assertions.ts';

const SECRET = 'Get-Secret-Passw0rd9';

function expectGetRefused(reply: Reply & { raw?: string }): void {
  expectError(reply, 405);
  expect(reply.body.error!.message).toMatch(/POST/);
  expect(JSON.stringify(reply.body)).not.toContain(SECRET);
  expect(JSON.stringify(reply.headers)).not.toContain(SECRET);
  expect(reply.headers['set-cookie']).toBeUndefined();
}

describe('credential actions take POST only', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  const loginStatus = async (kind: 'client' | 'staff', email: string, password: string) =>
    (await t.call(`/api/guest/${kind}/login`, { email, password })).status;

  it('guest/client/login: GET → 405, no session; POST logs in', async () => {
    const client = await t.createClient();
    expectGetRefused(await t.call('/api/guest/client/login', { email: client.email, password: client.password }, { method: 'GET' }));
    const browser = new Browser();
    const post = await t.call('/api/guest/client/login', { email: client.email, password: client.password }, { browser });
    expect(post.status).toBe(200);
    expect(browser.cookies.tollgate_session).toBeDefined();
  });

  it('guest/staff/login: GET → 405, no session; POST logs in', async () => {
    expectGetRefused(await t.call('/api/guest/staff/login', { email: ADMIN_EMAIL, password: ADMIN_PASSWORD }, { method: 'GET' }));
    expect(await loginStatus('staff', ADMIN_EMAIL, ADMIN_PASSWORD)).toBe(200);
  });

  it('guest/client/create: GET → 405 and no account; POST signs up', async () => {
    const email = 'get-signup@example.com';
    const params = { email, first_name: 'Get', password: SECRET, password_confirm: SECRET };
    expectGetRefused(await t.call('/api/guest/client/create', params, { method: 'GET' }));
    expect((await t.admin('client/get_list', { search: email })).result.total).toBe(0);
    const post = await t.call('/api/guest/client/create', params);
    expect(post.status).toBe(200);
    expect(await loginStatus('client', email, SECRET)).toBe(200);
  });

  it('admin/client/create and admin/staff/create (they carry a password): GET → 405; POST creates', async () => {
    const basic: [string, string] = ['admin', t.adminToken];
    const client = { email: 'get-admin-client@example.com', first_name: 'Get', password: SECRET };
    expectGetRefused(await t.call('/api/admin/client/create', client, { method: 'GET', basic }));
    expect((await t.admin('client/get_list', { search: client.email })).result.total).toBe(0);
    expect((await t.call('/api/admin/client/create', client, { basic })).status).toBe(200);

    const staff = { email: 'get-admin-staff@example.com', name: 'Get', password: SECRET, admin_group_id: 2 };
    expectGetRefused(await t.call('/api/admin/staff/create', staff, { method: 'GET', basic }));
    expect((await t.admin('staff/get_list', { search: staff.email })).result.total).toBe(0);
    expect((await t.call('/api/admin/staff/create', staff, { basic })).status).toBe(200);
    expect(await loginStatus('staff', staff.email, SECRET)).toBe(200);
  });

  it('admin/client/change_password and admin/staff/change_password: GET → 405, password unchanged; POST changes it', async () => {
    const basic: [string, string] = ['admin', t.adminToken];
    const client = await t.createClient();
    const params = { id: client.id, password: SECRET, password_confirm: SECRET };
    expectGetRefused(await t.call('/api/admin/client/change_password', params, { method: 'GET', basic }));
    expect(await loginStatus('client', client.email, client.password)).toBe(200);
    expect((await t.call('/api/admin/client/change_password', params, { basic })).result).toBe(true);
    expect(await loginStatus('client', client.email, SECRET)).toBe(200);

    const staffId = (await t.admin('staff/create', { email: 'pw-staff@example.com', name: 'Pw', password: 'Staff-Passw0rd', admin_group_id: 2 })).result as number;
    const staffParams = { id: staffId, password: SECRET, password_confirm: SECRET };
    expectGetRefused(await t.call('/api/admin/staff/change_password', staffParams, { method: 'GET', basic }));
    expect(await loginStatus('staff', 'pw-staff@example.com', 'Staff-Passw0rd')).toBe(200);
    expect((await t.call('/api/admin/staff/change_password', staffParams, { basic })).result).toBe(true);
    expect(await loginStatus('staff', 'pw-staff@example.com', SECRET)).toBe(200);
  });

  it('client/profile/change_password and admin/profile/change_password: GET → 405; POST changes it', async () => {
    const client = await t.createClient();
    const params = { current_password: client.password, password: SECRET, password_confirm: SECRET };
    expectGetRefused(await t.call('/api/client/profile/change_password', params, { method: 'GET', basic: ['client', client.token] }));
    expect(await loginStatus('client', client.email, client.password)).toBe(200);
    expect((await t.call('/api/client/profile/change_password', params, { basic: ['client', client.token] })).result).toBe(true);
    expect(await loginStatus('client', client.email, SECRET)).toBe(200);

    const staffId = (await t.admin('staff/create', { email: 'own-pw@example.com', name: 'Own', password: 'Staff-Passw0rd', admin_group_id: 2 })).result as number;
    const token = (await t.services.staff.profile(staffId)).api_token;
    const own = { current_password: 'Staff-Passw0rd', password: SECRET, password_confirm: SECRET };
    expectGetRefused(await t.call('/api/admin/profile/change_password', own, { method: 'GET', basic: ['admin', token] }));
    expect(await loginStatus('staff', 'own-pw@example.com', 'Staff-Passw0rd')).toBe(200);
    expect((await t.call('/api/admin/profile/change_password', own, { basic: ['admin', token] })).result).toBe(true);
    expect(await loginStatus('staff', 'own-pw@example.com', SECRET)).toBe(200);
  });

  it('every action with a password parameter is POST only; the rest still answer GET', () => {
    const carriesPassword = (schema: TObject) => Object.keys(schema.properties).some((name) => /password/i.test(name));
    const actions = listActions(modules);
    const missing = actions.filter(({ def }) => carriesPassword(def.params) && def.postOnly !== true).map((a) => `${a.role}/${a.module}/${a.action}`);
    expect(missing).toEqual([]);
    const postOnly = actions.filter(({ def }) => def.postOnly === true).map((a) => `${a.role}/${a.module}/${a.action}`);
    expect(postOnly.toSorted()).toEqual(
      [
        'admin/client/change_password',
        'admin/client/create',
        'admin/profile/change_email',
        'admin/profile/change_password',
        'admin/staff/change_password',
        'admin/staff/create',
        'client/profile/change_password',
        'guest/client/create',
        'guest/client/login',
        'guest/staff/login',
        // Account security (CONTRACT §10): reset, change of e-mail and the TOTP actions carry credentials too.
        'admin/profile/totp_disable',
        'admin/profile/totp_enable',
        'admin/profile/totp_setup',
        'client/profile/change_email',
        'client/profile/totp_disable',
        'client/profile/totp_enable',
        'client/profile/totp_setup',
        'guest/client/reset_password',
        'guest/client/update_password',
        'guest/staff/passwordreset',
        'guest/staff/update_password',
        // Settings carry the secret settings (SMTP password, Stripe keys).
        'admin/system/settings_update',
        // Usage events name API keys, and a batch is up to 1 MB: never a URL (issue 23).
        'admin/usage/ingest',
        // A portal link's token opens a session (issue 25): a credential, never in a URL.
        'guest/portal/open',
      ].toSorted(),
    );
  });

  it('an action without credentials still answers GET', async () => {
    expect((await t.call('/api/guest/system/version', {}, { method: 'GET' })).status).toBe(200);
  });
});
