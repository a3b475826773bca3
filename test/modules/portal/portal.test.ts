// Issue 25 item 7: admin/portal/session_create makes a single-use link that opens a client session restricted to its
// scopes for that client only, until its end. Failure paths of the action (unknown client, bad scopes, expires_in out
// of bounds, bad return_url, wrong role, a verifier without the scope), and of the link (used twice, after expiry,
// another client's data, a scope it was not given) — each a clear 4xx, never a 500.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser, createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectError, expectInvalid } from '../../helpers/assertions.ts';
import { buyKey, createPlan, staffToken } from '../../helpers/apikey.ts';
import { createLink, inSession, openLink, portalSession, tokenOf } from '../../helpers/portal.ts';

describe('customer portal links', () => {
  let t: TestApp;
  let client: { id: number; token: string; email: string; password: string };
  let other: { id: number; token: string };
  let plan: number;

  beforeAll(async () => {
    t = await createTestApp();
    client = await t.createClient();
    other = await t.createClient();
    plan = await createPlan(t, {});
  });
  afterAll(async () => {
    await t.close();
  });

  it('session_create answers a single-use URL on PUBLIC_URL, all scopes and 15 minutes by default', async () => {
    const before = Date.now();
    const reply = await t.admin('portal/session_create', { client_id: client.id });
    expect(reply.body.error).toBeNull();
    const link = reply.result as { id: number; url: string; client_id: number; scopes: string[]; return_url: string | null; expires_at: string };
    expect(link.client_id).toBe(client.id);
    expect(link.scopes).toEqual(['keys', 'usage', 'invoices', 'wallet']);
    expect(link.return_url).toBeNull();
    expect(link.url.startsWith(`${t.services.config.publicUrl.replace(/\/$/, '')}/portal#token=`)).toBe(true);
    const lifetime = Date.parse(link.expires_at) - before;
    expect(lifetime).toBeGreaterThan(898_000);
    expect(lifetime).toBeLessThanOrEqual(901_000);
    // The token is stored only as its keyed hash.
    const row = await t.services.db.selectFrom('portal_links').selectAll().where('id', '=', link.id).executeTakeFirstOrThrow();
    expect(row.token_hash).not.toContain(tokenOf(link.url));
    expect(JSON.stringify(row)).not.toContain(tokenOf(link.url));
  });

  it('scopes are stored in the catalogue order, each once; expires_in and return_url are kept', async () => {
    const link = await createLink(t, { client_id: client.id, scopes: ['wallet', 'keys'], expires_in: 60, return_url: 'https://app.example.com/account?tab=billing' });
    expect(link.scopes).toEqual(['keys', 'wallet']);
    expect(Date.parse(link.expires_at) - Date.now()).toBeLessThanOrEqual(60_000);
    const { reply } = await openLink(t, link.token);
    expect(reply.result).toEqual({ scopes: ['keys', 'wallet'], return_url: 'https://app.example.com/account?tab=billing', expires_at: link.expires_at });
  });

  it('refuses bad parameters with a 422 naming them', async () => {
    expectInvalid(await t.admin('portal/session_create', {}), 'client_id');
    expectInvalid(await t.admin('portal/session_create', { client_id: 'abc' }), 'client_id');
    expectInvalid(await t.admin('portal/session_create', { client_id: client.id, scopes: ['keys', 'profile'] }), 'scopes.1');
    expectInvalid(await t.admin('portal/session_create', { client_id: client.id, scopes: [] }), 'scopes');
    expectInvalid(await t.admin('portal/session_create', { client_id: client.id, scopes: 'keys' }), 'scopes');
    expectInvalid(await t.admin('portal/session_create', { client_id: client.id, scopes: ['keys', 'keys'] }), 'scopes');
    expectInvalid(await t.admin('portal/session_create', { client_id: client.id, expires_in: 59 }), 'expires_in');
    expectInvalid(await t.admin('portal/session_create', { client_id: client.id, expires_in: 86_401 }), 'expires_in');
    expectInvalid(await t.admin('portal/session_create', { client_id: client.id, expires_in: 'soon' }), 'expires_in');
    for (const bad of ['javascript:alert(1)', 'ftp://example.com/', '/relative', 'https://user:pw@example.com/', 'data:text/html,x', 'x'.repeat(2001)]) {
      expectInvalid(await t.admin('portal/session_create', { client_id: client.id, return_url: bad }), 'return_url');
    }
    expectInvalid(await t.admin('portal/session_create', { client_id: client.id, return_url: 42 }), 'return_url');
  });

  it('an unknown client is a 404, an inactive one a 409', async () => {
    expectError(await t.admin('portal/session_create', { client_id: 99_999_999 }), 404);
    const suspended = await t.createClient({ status: 'suspended' });
    expectError(await t.admin('portal/session_create', { client_id: suspended.id }), 409);
  });

  it('return_url must be on the allowed origins once portal_frame_ancestors is set', async () => {
    expectInvalid(await t.admin('system/settings_update', { portal_frame_ancestors: 'https://app.example.com/path' }), 'portal_frame_ancestors');
    expectInvalid(await t.admin('system/settings_update', { portal_frame_ancestors: '*' }), 'portal_frame_ancestors');
    expectInvalid(await t.admin('system/settings_update', { portal_frame_ancestors: "'self'" }), 'portal_frame_ancestors');
    const saved = await t.admin('system/settings_update', { portal_frame_ancestors: 'https://App.Example.com:443, http://localhost:5173' });
    expect(saved.body.error).toBeNull();
    expect((await t.admin('system/settings_get')).result.portal_frame_ancestors).toBe('https://app.example.com http://localhost:5173');
    try {
      expect((await t.admin('portal/session_create', { client_id: client.id, return_url: 'https://app.example.com/billing' })).body.error).toBeNull();
      expect((await t.admin('portal/session_create', { client_id: client.id, return_url: 'http://localhost:5173/' })).body.error).toBeNull();
      expectInvalid(await t.admin('portal/session_create', { client_id: client.id, return_url: 'https://evil.example.net/' }), 'return_url');
      expectInvalid(await t.admin('portal/session_create', { client_id: client.id, return_url: 'http://app.example.com/' }), 'return_url');
    } finally {
      await t.admin('system/settings_update', { portal_frame_ancestors: '' });
    }
  });

  it('needs the portal.session permission: staff without it get 403, with it 200; clients and guests cannot call it', async () => {
    const without = await staffToken(t, ['client.view']);
    expectError(await t.call('/api/admin/portal/session_create', { client_id: client.id }, { basic: ['admin', without] }), 403);
    const withIt = await staffToken(t, ['portal.session']);
    expect((await t.call('/api/admin/portal/session_create', { client_id: client.id }, { basic: ['admin', withIt] })).body.error).toBeNull();
    expectError(await t.call('/api/admin/portal/session_create', { client_id: client.id }), 201, 401);
    expectError(await t.call('/api/admin/portal/session_create', { client_id: client.id }, { basic: ['client', client.token] }), 203, 401);
    expectError(await t.call('/api/client/portal/session_create', { client_id: client.id }, { basic: ['client', client.token] }), 740, 404);
    // The permission is in the catalogue staff pick from.
    const catalogue = (await t.admin('staff/permission_get_list')).result as Array<{ permission: string; actions: string[] }>;
    expect(catalogue.find((entry) => entry.permission === 'portal.session')?.actions).toEqual(['portal/session_create']);
  });

  it('a verifier token makes links only when given the portal scope', async () => {
    const plain = (await t.admin('staff/verifier_create', { name: 'App server' })).result as { token: string; scopes: string[] };
    expect(plain.scopes).toEqual([]);
    expectError(await t.call('/api/admin/portal/session_create', { client_id: client.id }, { basic: ['admin', plain.token] }), 403);
    const scoped = (await t.admin('staff/verifier_create', { name: 'App server (portal)', scopes: ['portal'] })).result as { id: number; token: string; scopes: string[] };
    expect(scoped.scopes).toEqual(['portal']);
    const made = await t.call('/api/admin/portal/session_create', { client_id: client.id, scopes: ['invoices'] }, { basic: ['admin', scoped.token] });
    expect(made.body.error).toBeNull();
    // Still a verifier: it checks keys, and nothing else opens to it.
    expect((await t.call('/api/admin/serviceapikey/check', { key: 'FFFFFFFF-FFFFFFFF' }, { basic: ['admin', scoped.token] })).status).toBe(200);
    expectError(await t.call('/api/admin/client/get_list', {}, { basic: ['admin', scoped.token] }), 403);
    const listed = (await t.admin('staff/verifier_get_list')).result.list as Array<{ id: number; scopes: string[] }>;
    expect(listed.find((row) => row.id === scoped.id)?.scopes).toEqual(['portal']);
    expectInvalid(await t.admin('staff/verifier_create', { name: 'x', scopes: ['admin'] }), 'scopes.0');
    // Granting goes no further than the caller's permissions: staff.manage without portal.session cannot.
    const manager = await staffToken(t, ['staff.manage', 'serviceapikey.check']);
    expectError(await t.call('/api/admin/staff/verifier_create', { name: 'y', scopes: ['portal'] }, { basic: ['admin', manager] }), 403);
  });

  it('opening the link starts a session of that client with the portal cookies; client/portal/get describes it', async () => {
    const link = await createLink(t, { client_id: client.id, scopes: ['invoices'] });
    const { reply, browser } = await openLink(t, link.token);
    expect(reply.body.error).toBeNull();
    const setCookie = ([] as string[]).concat(reply.headers['set-cookie'] as string | string[]);
    const session = setCookie.find((line) => line.startsWith('tollgate_session='))!;
    // inject() speaks to host "localhost": a loopback name, where browsers take Secure cookies over http.
    expect(session).toMatch(/HttpOnly/);
    expect(session).toMatch(/SameSite=None/);
    expect(session).toMatch(/Secure/);
    expect(session).toMatch(/Partitioned/);
    expect((await inSession(t, browser, 'client/portal/get')).result).toEqual({ scopes: ['invoices'], return_url: null, expires_at: link.expires_at });
    expect((await inSession(t, browser, 'guest/session/whoami')).result).toEqual({ role: 'client' });
    // The session is the client's: its invoices list answers.
    expect((await inSession(t, browser, 'client/invoice/get_list')).status).toBe(200);
    // An ordinary session or an API token has no portal: 404.
    expectError(await t.call('/api/client/portal/get', {}, { basic: ['client', client.token] }), 404);
    const ordinary = await t.login('client', client.email, client.password);
    expectError(await inSession(t, ordinary, 'client/portal/get'), 404);
  });

  it('on a plain http host that is not loopback the cookies fall back to SameSite=Lax (the portal works unframed only)', async () => {
    const link = await createLink(t, { client_id: client.id });
    const reply = await t.app.inject({ method: 'POST', url: '/api/guest/portal/open', headers: { host: 'billing.example.com', 'content-type': 'application/json' }, payload: JSON.stringify({ token: link.token }) });
    expect(reply.statusCode).toBe(200);
    const session = ([] as string[]).concat(reply.headers['set-cookie'] as string | string[]).find((line) => line.startsWith('tollgate_session='))!;
    expect(session).toMatch(/SameSite=Lax/);
    expect(session).not.toMatch(/Secure|Partitioned|SameSite=None/);
  });

  it('a link works once: the second open is refused, even at the same moment', async () => {
    const link = await createLink(t, { client_id: client.id });
    expect((await openLink(t, link.token)).reply.body.error).toBeNull();
    expectInvalid((await openLink(t, link.token)).reply, 'token');
    const race = await createLink(t, { client_id: client.id });
    const replies = await Promise.all(Array.from({ length: 8 }, () => openLink(t, race.token)));
    expect(replies.filter(({ reply }) => reply.status === 200)).toHaveLength(1);
    for (const refused of replies.filter(({ reply }) => reply.status !== 200)) expectInvalid(refused.reply, 'token');
  });

  it('unknown, malformed and missing tokens are refused alike; GET is refused (the token is a credential)', async () => {
    expectInvalid((await openLink(t, 'A'.repeat(43))).reply, 'token');
    expectInvalid((await openLink(t, 'x'.repeat(129))).reply, 'token');
    expectInvalid(await t.call('/api/guest/portal/open', {}), 'token');
    expectInvalid(await t.call('/api/guest/portal/open', { token: 12 }), 'token');
    const link = await createLink(t, { client_id: client.id });
    expectError(await t.call('/api/guest/portal/open', { token: link.token }, { method: 'GET' }), 405);
    // The refused GET did not use it up.
    expect((await openLink(t, link.token)).reply.body.error).toBeNull();
  });

  it('a link opened after its expiry is refused, and a session past its end is gone', async () => {
    const link = await createLink(t, { client_id: client.id, expires_in: 60 });
    await t.services.db.updateTable('portal_links').set({ expires_at: new Date(Date.now() - 1000).toISOString().slice(0, 19) + 'Z' }).where('id', '=', link.id).execute();
    expectInvalid((await openLink(t, link.token)).reply, 'token');

    const live = await createLink(t, { client_id: client.id, expires_in: 60 });
    const { browser } = await openLink(t, live.token);
    expect((await inSession(t, browser, 'client/portal/get')).status).toBe(200);
    await t.services.db.updateTable('sessions').set({ ends_at: new Date(Date.now() - 1000).toISOString().slice(0, 19) + 'Z' }).where('portal_scopes', 'is not', null).execute();
    expectError(await inSession(t, browser, 'client/portal/get'), 201, 401);
    expectError(await inSession(t, browser, 'client/invoice/get_list'), 201, 401);
  });

  it('ended portal sessions are purged with expired ones; links ended a day ago go when a new one is made', async () => {
    const { browser } = await openLink(t, (await createLink(t, { client_id: client.id })).token);
    const ended = new Date(Date.now() - 1000).toISOString().slice(0, 19) + 'Z';
    await t.services.db.updateTable('sessions').set({ ends_at: ended }).where('portal_scopes', 'is not', null).execute();
    expect(await t.services.sessions.purgeExpired()).toBeGreaterThanOrEqual(1);
    expect(await t.services.db.selectFrom('sessions').select('id_hash').where('portal_scopes', 'is not', null).execute()).toEqual([]);
    expectError(await inSession(t, browser, 'client/portal/get'), 201, 401);

    const old = await createLink(t, { client_id: client.id });
    const recent = await createLink(t, { client_id: client.id });
    await t.services.db.updateTable('portal_links').set({ expires_at: new Date(Date.now() - 86_400_000 - 5000).toISOString().slice(0, 19) + 'Z' }).where('id', '=', old.id).execute();
    await t.services.db.updateTable('portal_links').set({ expires_at: ended }).where('id', '=', recent.id).execute();
    await createLink(t, { client_id: client.id });
    const left = (await t.services.db.selectFrom('portal_links').select('id').where('id', 'in', [old.id, recent.id]).execute()).map((row) => row.id);
    expect(left).toEqual([recent.id]);
  });

  it('a scope it was not given is refused with 403; the profile, the cart and the admin API are out of reach', async () => {
    const browser = await portalSession(t, client.id, ['invoices']);
    const refused = await inSession(t, browser, 'client/serviceapikey/get_list');
    expectError(refused, 403);
    expect(refused.body.error!.message).toContain('portal session may not call serviceapikey/get_list');
    for (const action of ['profile/get', 'profile/change_password', 'profile/totp_setup', 'profile/change_email', 'profile/api_key_get', 'profile/logout', 'cart/checkout']) {
      expectError(await inSession(t, browser, `client/${action}`, { password: 'x', password_confirm: 'x', current_password: 'x', email: 'a@b.cd' }), 403);
    }
    expectError(await inSession(t, browser, 'guest/cart/add_item', { id: plan }), 403);
    expectError(await inSession(t, browser, 'admin/client/get_list'), 201, 401);
    // Without the CSRF token the session's calls are refused (SameSite=None sends the cookie from anywhere).
    expectError(await t.call('/api/client/invoice/get_list', {}, { browser }), 403);
    expectError(await t.call('/api/client/invoice/get_list', {}, { browser, headers: { 'x-csrf-token': 'forged' } }), 403);
  });

  it("the session shows that client's records only: another client's order, key and invoice are 404", async () => {
    const mine = await buyKey(t, plan, client.id);
    const theirs = await buyKey(t, plan, other.id);
    const browser = await portalSession(t, client.id, ['keys']);
    const list = (await inSession(t, browser, 'client/serviceapikey/get_list')).result.list as Array<{ order_id: number }>;
    expect(list.map((row) => row.order_id)).toContain(mine.orderId);
    expect(list.map((row) => row.order_id)).not.toContain(theirs.orderId);
    expectError(await inSession(t, browser, 'client/order/get', { id: theirs.orderId }), 404);
    expectError(await inSession(t, browser, 'client/serviceapikey/reset', { id: theirs.keyId }), 404);
    // Its own key resets (the keys scope: read and reset).
    const reset = await inSession(t, browser, 'client/serviceapikey/reset', { id: mine.keyId });
    expect(reset.body.error).toBeNull();
    // Not create, rename or delete.
    expectError(await inSession(t, browser, 'client/serviceapikey/create', { order_id: mine.orderId }), 403);
    expectError(await inSession(t, browser, 'client/serviceapikey/delete', { id: mine.keyId }), 403);
  });

  it('a deactivated client loses its portal session at once', async () => {
    const leaving = await t.createClient();
    const browser = await portalSession(t, leaving.id);
    expect((await inSession(t, browser, 'client/portal/get')).status).toBe(200);
    expect((await t.admin('client/update', { id: leaving.id, status: 'suspended' })).body.error).toBeNull();
    expectError(await inSession(t, browser, 'client/portal/get'), 201, 401);
  });

  it('a new login in the same browser replaces the portal session with an ordinary one', async () => {
    const browser = await portalSession(t, client.id, ['invoices']);
    await t.login('client', client.email, client.password, browser);
    expect((await inSession(t, browser, 'client/profile/get')).status).toBe(200);
    expectError(await inSession(t, browser, 'client/portal/get'), 404);
    void Browser;
  });
});
