// Who may call admin/usage/ingest (issue 23, item 2): staff holding `usage.ingest`, administrators, and verifier
// tokens (app servers that check keys report what those keys used); not clients, not guests, not staff without the
// permission. The action is POST only (events name API keys) and the OpenAPI document declares its result.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { staffToken } from '../../helpers/apikey.ts';
import { meteredOrder, storedEvents } from './helpers.ts';

describe('admin/usage/ingest: who may call it', () => {
  let t: TestApp;
  let orderId: number;
  let clientToken: string;

  const send = (token: string, id: string, user = 'admin') =>
    t.call('/api/admin/usage/ingest', { events: [{ id, order_id: orderId, meter: 'calls' }] }, { basic: [user, token] });

  beforeAll(async () => {
    t = await createTestApp();
    const client = await t.createClient();
    clientToken = client.token;
    ({ orderId } = await meteredOrder(t, client.id));
  });
  afterAll(async () => {
    await t.close();
  });

  it('staff holding usage.ingest may ingest', async () => {
    const reply = await send(await staffToken(t, ['usage.ingest']), 'staff-1');
    expect(reply.status).toBe(200);
    expect(reply.result).toEqual({ accepted: 1, duplicates: 0, rejected: [] });
  });

  it('a verifier token (its group grants only serviceapikey.check) may ingest', async () => {
    const token = await staffToken(t, ['serviceapikey.check']);
    expect((await t.services.staff.principalByToken(token))?.verifier).toBe(true);
    const reply = await send(token, 'verifier-1');
    expect(reply.status).toBe(200);
    expect(reply.result).toEqual({ accepted: 1, duplicates: 0, rejected: [] });
    // Still a verifier everywhere else: ingestion opened no other action to it.
    expect((await t.call('/api/admin/client/get_list', {}, { basic: ['admin', token] })).status).toBe(403);
  });

  it('staff without usage.ingest → 403 naming the permission, and nothing is stored', async () => {
    const reply = await send(await staffToken(t, ['order.manage', 'serviceapikey.manage']), 'nope-1');
    expect(reply.status).toBe(403);
    expect(reply.body.error?.message).toMatch(/usage\.ingest/);
    expect((await storedEvents(t, orderId)).map((row) => row.event_id)).not.toContain('nope-1');
  });

  it('a client token → 401 (wrong role) at admin/, and there is no client/usage/ingest', async () => {
    const asAdmin = await send(clientToken, 'client-1', 'client');
    expect([401, 403]).toContain(asAdmin.status);
    const own = await t.call('/api/client/usage/ingest', { events: [{ id: 'client-2', order_id: orderId, meter: 'calls' }] }, { basic: ['client', clientToken] });
    expect(own.status).toBe(404);
    const guest = await t.call('/api/admin/usage/ingest', { events: [] });
    expect(guest.status).toBe(401);
    const ids = (await storedEvents(t, orderId)).map((row) => row.event_id);
    expect(ids).not.toContain('client-1');
    expect(ids).not.toContain('client-2');
  });

  it('answers POST only: GET is 405 (events carry API keys, which must not land in URLs)', async () => {
    const reply = await t.call('/api/admin/usage/ingest', { events: '[]' }, { method: 'GET', basic: ['admin', t.adminToken] });
    expect(reply.status).toBe(405);
  });

  it('usage.ingest is in the staff permission catalogue, so the panel offers it', async () => {
    const list = (await t.admin('staff/permission_get_list')).result as Array<{ permission: string; module: string; actions: string[] }>;
    expect(list).toContainEqual({ permission: 'usage.ingest', module: 'usage', actions: ['usage/ingest'] });
    const names = list.map((entry) => entry.permission);
    expect(names).toEqual(names.toSorted((a, b) => a.localeCompare(b)));
  });

  it('the OpenAPI document lists admin/usage/ingest with its result schema', async () => {
    const reply = await t.call('/api/openapi.json', {}, { method: 'GET' });
    const doc = reply.body as unknown as { paths: Record<string, { post?: unknown; get?: unknown }>; components: { schemas: Record<string, { properties?: Record<string, unknown> }> } };
    const path = doc.paths['/api/admin/usage/ingest'];
    expect(path?.post).toBeDefined();
    expect(path?.get).toBeUndefined();
    expect(JSON.stringify(path?.post)).toContain('UsageIngestResult');
    expect(Object.keys(doc.components.schemas.UsageIngestResult?.properties ?? {})).toEqual(['accepted', 'duplicates', 'rejected']);
  });
});
