// Issue 20, M3: a verifier token is a verifier and nothing more. Verifier credentials call exactly check, get_info,
// report_usage and the events stream (an allow-list the gateway checks, ActionDef.verifier); every other admin action
// and route answers 403, including ones added later; a verifier never logs in, gets no reset mail and sets no
// password; verifier_rotate and verifier_revoke end every credential, session and link derived from it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Type } from '@sinclair/typebox';
import { listActions } from '../../src/http/gateway.ts';
import { adminAction, type ModuleApi } from '../../src/platform/action.ts';
import { modules } from '../../src/modules/index.ts';
import { issueToken } from '../../src/modules/account/tokens.ts';
import { inTransaction } from '../../src/platform/transaction.ts';
import { buildApp } from '../../src/app.ts';
import { Browser, createTestApp, type TestApp } from '../helpers/app.ts';
import { expectError, expectInvalid } from '../helpers/assertions.ts';

const VERIFIER_SCOPE = 'Verifier credentials may only verify keys (check, get_info, report_usage, events)';
const PASSWORD = 'Verifier-Passw0rd9';

describe('verifier scope', () => {
  let t: TestApp;
  let base: string;
  const as = (token: string, action: string, params: Record<string, unknown> = {}) => t.call(`/api/admin/${action}`, params, { basic: ['admin', token] });
  const newVerifier = async (): Promise<{ id: number; token: string }> => (await t.admin('staff/verifier_create', { name: `V ${Math.random()}` })).result as { id: number; token: string };
  const expectScope = (reply: Awaited<ReturnType<typeof as>>): void => {
    expectError(reply, 403);
    expect(reply.body.error!.message).toBe(VERIFIER_SCOPE);
  };
  /** A browser holding a session of the verifier, as one obtained through the holes M3 closes would be. */
  const verifierSession = async (id: number): Promise<Browser> => {
    const created = await t.services.sessions.create({ type: 'admin', id });
    const browser = new Browser();
    browser.cookies = { tollgate_session: created.id, csrf_token: created.csrfToken };
    return browser;
  };
  const mailsTo = async (address: string) => t.services.db.selectFrom('emails').select(['template', 'to_email']).where('to_email', '=', address).execute();

  beforeAll(async () => {
    t = await createTestApp();
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('the allow-list is exactly check, get_info, report_usage and usage/ingest (and the events stream, a route)', () => {
    const allowed = listActions(modules)
      .filter(({ def }) => def.verifier === true)
      .map(({ role, module, action }) => `${role}/${module}/${action}`)
      .toSorted();
    // usage/ingest (issue 23): an app server reports what the keys it checks used, as report_usage does for calls.
    // portal/session_create (issue 25): opens to a verifier only when its group holds portal.session (the portal scope).
    expect(allowed).toEqual(['admin/portal/session_create', 'admin/serviceapikey/check', 'admin/serviceapikey/get_info', 'admin/serviceapikey/report_usage', 'admin/usage/ingest']);
  });

  it('a verifier token calls its four: check, get_info, report_usage and the events stream', async () => {
    const { token } = await newVerifier();
    expect((await as(token, 'serviceapikey/check', { key: 'FFFFFFFF-FFFFFFFF', ip: '203.0.113.9' })).body).toEqual({ result: false, error: null });
    expect((await as(token, 'serviceapikey/get_info', { key: 'FFFFFFFF-FFFFFFFF' })).status).toBe(200);
    expect((await as(token, 'serviceapikey/report_usage', { batch_id: `scope-${token.slice(0, 6)}`, usage: [] })).result).toBe(true);
    const controller = new AbortController();
    const stream = await fetch(`${base}/api/admin/serviceapikey/events`, {
      headers: { authorization: `Basic ${Buffer.from(`admin:${token}`).toString('base64')}` },
      signal: controller.signal,
    });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    controller.abort();
    // Its own actions still validate their parameters: missing or wrong-typed → 422.
    expectInvalid(await as(token, 'serviceapikey/check', {}), 'key');
    expectInvalid(await as(token, 'serviceapikey/get_info', { key: 'x', ip: 12 }), 'ip');
    expectInvalid(await as(token, 'serviceapikey/report_usage', { batch_id: 'b', usage: 'many' }), 'usage');
  });

  it('nothing in admin/profile/*: no e-mail change, no token generation, no second factor, no password (the M3 chain)', async () => {
    const { id, token } = await newVerifier();
    const before = await t.services.staff.get(id);
    const profileActions = listActions(modules).filter(({ role, module }) => role === 'admin' && module === 'profile');
    expect(profileActions.length).toBeGreaterThan(5);
    for (const { action } of profileActions) expectScope(await as(token, `profile/${action}`, { email: 'taken-over@example.com', name: 'x' }));
    expectScope(await as(token, 'profile/update', { email: 'taken-over@example.com' }));
    expectScope(await as(token, 'profile/generate_api_key'));
    expectScope(await as(token, 'profile/totp_setup'));
    expectScope(await as(token, 'profile/change_email', { email: 'taken-over@example.com', password: 'x' }));
    // Nothing changed: same address, the token still works.
    expect((await t.services.staff.get(id)).email).toBe(before.email);
    expect((await as(token, 'serviceapikey/check', { key: 'x' })).result).toBe(false);
    expect(await t.services.db.selectFrom('account_totp').select('subject_id').where('subject_type', '=', 'admin').where('subject_id', '=', id).execute()).toEqual([]);
  });

  it('every other admin action answers 403 to a verifier, before its parameters are even read', async () => {
    const { token } = await newVerifier();
    const others = listActions(modules).filter(({ role, def }) => role === 'admin' && def.verifier !== true);
    expect(others.length).toBeGreaterThan(50);
    for (const { module, action } of others) {
      const reply = await t.call(`/api/admin/${module}/${action}`, {}, { basic: ['admin', token] });
      expect(reply.status, `${module}/${action}`).toBe(403);
      expect(reply.body.error?.message, `${module}/${action}`).toBe(VERIFIER_SCOPE);
    }
    // Routes outside the gateway too: an export is refused the same way.
    const exported = await fetch(`${base}/api/admin/export/clients.csv`, { headers: { authorization: `Basic ${Buffer.from(`admin:${token}`).toString('base64')}` } });
    expect(exported.status).toBe(403);
    expect(((await exported.json()) as { error: { message: string } }).error.message).toBe(VERIFIER_SCOPE);
  });

  it('an action added later is refused by default, and opens to verifiers only with the flag', async () => {
    const { token } = await newVerifier();
    const extra: ModuleApi = {
      name: 'scopeprobe',
      admin: {
        closed: adminAction({ params: Type.Object({}), permission: 'serviceapikey.check', handler: () => 'reached' }),
        open: adminAction({ params: Type.Object({}), permission: 'serviceapikey.check', verifier: true, handler: () => 'reached' }),
      },
    };
    const probe = buildApp(t.services, { modules: [...modules, extra] });
    await probe.ready();
    try {
      const ask = (action: string) =>
        probe.inject({ method: 'POST', url: `/api/admin/scopeprobe/${action}`, headers: { authorization: `Basic ${Buffer.from(`admin:${token}`).toString('base64')}` }, payload: {} });
      const closed = await ask('closed');
      expect(closed.statusCode).toBe(403);
      expect(closed.json()).toEqual({ result: null, error: { message: VERIFIER_SCOPE, code: 403 } });
      const open = await ask('open');
      expect(open.json()).toEqual({ result: 'reached', error: null });
      // An administrator is not affected by the flag either way.
      const admin = await probe.inject({ method: 'POST', url: '/api/admin/scopeprobe/closed', headers: { authorization: `Basic ${Buffer.from(`admin:${t.adminToken}`).toString('base64')}` }, payload: {} });
      expect(admin.json()).toEqual({ result: 'reached', error: null });
    } finally {
      await probe.close();
    }
  });

  it('no login, no reset mail, no password set through a reset link, even once its address can receive mail', async () => {
    const { id } = await newVerifier();
    // The worst case: an administrator gave the verifier row a real address and a known password.
    const address = `verifier-${id}@example.com`;
    expect((await t.admin('staff/update', { id, email: address })).status).toBe(200);
    expect((await t.admin('staff/change_password', { id, password: PASSWORD, password_confirm: PASSWORD })).status).toBe(200);
    expectError(await t.call('/api/guest/staff/login', { email: address, password: PASSWORD }), 206, 401);
    // A reset request answers true (it always does) but mails nothing.
    expect((await t.call('/api/guest/staff/passwordreset', { email: address })).result).toBe(true);
    expect(await mailsTo(address)).toEqual([]);
    // A link issued before this fix (planted here) does not set a password either.
    const hash = await inTransaction(t.services.db, (trx) =>
      issueToken(trx, t.services.secrets, { purpose: 'staff_password_reset', subjectType: 'admin', subjectId: id, lifetimeSeconds: 1800, now: new Date() }),
    );
    const reply = await t.call('/api/guest/staff/update_password', { hash, password: 'Another-Passw0rd1', password_confirm: 'Another-Passw0rd1' });
    expectError(reply, 422);
    expect(await t.services.staff.verifyOwnPassword(id, PASSWORD)).toBe(true);
  });

  it('a verifier session (however obtained) is held to the same allow-list', async () => {
    const { id } = await newVerifier();
    const browser = await verifierSession(id);
    expectScope(await t.call('/api/admin/profile/get', {}, { browser, csrf: true }));
    expectScope(await t.call('/api/admin/profile/generate_api_key', {}, { browser, csrf: true }));
    expect((await t.call('/api/admin/serviceapikey/check', { key: 'x' }, { browser, csrf: true })).result).toBe(false);
  });

  for (const how of ['verifier_rotate', 'verifier_revoke'] as const) {
    it(`${how} ends every credential derived from the verifier: token, sessions and reset links`, async () => {
      const { id, token } = await newVerifier();
      const browser = await verifierSession(id);
      const link = await inTransaction(t.services.db, (trx) =>
        issueToken(trx, t.services.secrets, { purpose: 'staff_password_reset', subjectType: 'admin', subjectId: id, lifetimeSeconds: 1800, now: new Date() }),
      );
      expect((await t.call('/api/admin/serviceapikey/check', { key: 'x' }, { browser, csrf: true })).status).toBe(200);
      expect((await t.admin(`staff/${how}`, { id })).status).toBe(200);
      expectError(await as(token, 'serviceapikey/check', { key: 'x' }), 205, 401);
      expectError(await t.call('/api/admin/serviceapikey/check', { key: 'x' }, { browser, csrf: true }), 201, 401);
      const rows = await t.services.db.selectFrom('account_tokens').select(['used_at']).where('subject_type', '=', 'admin').where('subject_id', '=', id).execute();
      for (const row of rows) expect(row.used_at).not.toBeNull();
      expectError(await t.call('/api/guest/staff/update_password', { hash: link, password: 'Another-Passw0rd1', password_confirm: 'Another-Passw0rd1' }), 422);
    });
  }

  it('rotate and revoke: another staff member → 404, a missing or wrong-typed id → 422, a verifier token → 403', async () => {
    const { id, token } = await newVerifier();
    expectError(await t.admin('staff/verifier_rotate', { id: 1 }), 404);
    expectError(await t.admin('staff/verifier_revoke', { id: 1 }), 404);
    expectInvalid(await t.admin('staff/verifier_rotate', {}), 'id');
    expectInvalid(await t.admin('staff/verifier_revoke', { id: 'one' }), 'id');
    expectScope(await as(token, 'staff/verifier_rotate', { id }));
    expectScope(await as(token, 'staff/verifier_revoke', { id }));
    // Two revokes racing: one wins, the other is told the verifier is gone.
    const [a, b] = await Promise.all([t.admin('staff/verifier_revoke', { id }), t.admin('staff/verifier_revoke', { id })]);
    expect([a.status, b.status].toSorted((x, y) => x - y)).toEqual([200, 404]);
  });

  it('a staff member whose group holds serviceapikey.check and more is not a verifier', async () => {
    const group = await t.services.staff.createGroup(`Checkers ${Math.random()}`, ['serviceapikey.check', 'client.view']);
    const { apiToken } = await t.services.staff.create({ email: `checker-${group}@example.com`, password: PASSWORD, name: 'Checker', admin_group_id: group });
    expect((await as(apiToken, 'profile/get')).status).toBe(200);
    expect((await as(apiToken, 'serviceapikey/check', { key: 'x' })).result).toBe(false);
    expect((await t.call('/api/guest/staff/login', { email: `checker-${group}@example.com`, password: PASSWORD })).status).toBe(200);
  });
});
