// admin/activity/log_get_list (FOSSBilling's name and list shape) with its filters — who, what, target, range, search,
// address, priority — its failure paths, and the CSV export /api/admin/export/activity.csv.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectError, expectInvalid } from '../../helpers/assertions.ts';
import { asStaff, makeProduct, staffWith } from '../../helpers/selling-fixtures.ts';

function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  for (const line of text.split('\r\n')) {
    if (line === '') continue;
    const cells: string[] = [];
    const cell = /"((?:[^"]|"")*)"(,|$)/y;
    let match: RegExpExecArray | null;
    while (cell.lastIndex < line.length && (match = cell.exec(line)) !== null) cells.push(match[1]!.replace(/""/g, '"'));
    rows.push(cells);
  }
  return rows;
}

describe('admin/activity/log_get_list', () => {
  let t: TestApp;
  let adminId: number;
  let otherToken: string;
  let otherId: number;
  let product: number;
  let client: number;
  beforeAll(async () => {
    t = await createTestApp();
    adminId = (await t.admin('profile/get')).result.id as number;
    otherToken = await staffWith(t, ['client.manage', 'client.view', 'activity.view']);
    otherId = (await asStaff(t, otherToken, 'profile/get')).result.id as number;
    product = await makeProduct(t, { title: 'Listed' });
    client = (await t.createClient()).id;
    expect((await asStaff(t, otherToken, 'client/update', { id: client, company: 'By other' })).body.error).toBeNull();
    expect((await t.call('/api/admin/product/update', { id: product, title: 'Listed twice' }, { basic: ['admin', t.adminToken], ip: '192.0.2.44' })).body.error).toBeNull();
  });
  afterAll(async () => {
    await t.close();
  });

  const list = async (params: Record<string, unknown>) => {
    const reply = await t.admin('activity/log_get_list', params);
    expect(reply.body.error).toBeNull();
    return reply.result as { list: Array<Record<string, any>>; total: number; page: number; per_page: number; pages: number };
  };

  it('answers FOSSBilling\'s paged shape, newest first, with staff {id, name, email}', async () => {
    const page = await list({ per_page: 2 });
    expect(Object.keys(page).toSorted()).toEqual(['list', 'page', 'pages', 'per_page', 'total']);
    expect(page.per_page).toBe(2);
    expect(page.list).toHaveLength(2);
    expect(page.list[0]!.id).toBeGreaterThan(page.list[1]!.id);
    expect(page.list[0]).toMatchObject({ priority: 6, client_id: null, admin_id: adminId, staff: { id: adminId, name: expect.any(String), email: expect.any(String) } });
    expect(Object.keys(page.list[0]!).toSorted()).toEqual(
      ['id', 'priority', 'message', 'ip', 'created_at', 'admin_id', 'client_id', 'staff', 'actor_type', 'action', 'target_type', 'target_id', 'changes'].toSorted(),
    );
    const second = await list({ per_page: 2, page: 2 });
    expect(second.list[0]!.id).toBeLessThan(page.list[1]!.id);
    expect((await list({ page: 1_000_000 })).list).toEqual([]);
  });

  it('filters by who, what, target, address, search, priority and range', async () => {
    const byOther = await list({ admin_id: otherId });
    expect(byOther.list.map((e) => e.action)).toEqual(['admin/client/update']);
    expect((await list({ action: 'admin/product/update' })).list.every((e) => e.action === 'admin/product/update')).toBe(true);
    const productModule = await list({ action: 'admin/product/' });
    expect(productModule.list.map((e) => e.action)).toEqual(['admin/product/update', 'admin/product/update', 'admin/product/prepare']);
    const target = await list({ target_type: 'product', target_id: String(product) });
    expect(target.total).toBe(3);
    expect((await list({ target_type: 'client', target_id: String(client) })).list[0]).toMatchObject({ admin_id: otherId, actor_type: 'api_token' });
    expect((await list({ ip: '192.0.2.44' })).list.map((e) => e.changes)).toEqual([[{ field: 'title', from: 'Listed', to: 'Listed twice' }]]);
    expect((await list({ search: 'LISTED' })).total).toBe(0);
    expect((await list({ search: 'product/upd' })).total).toBeGreaterThanOrEqual(2);
    expect((await list({ search: '%' })).total).toBe(0);
    expect((await list({ actor_type: 'system' })).total).toBe(0);
    expect((await list({ priority: 4 })).total).toBe(0);
    expect((await list({ min_priority: 6 })).total).toBe((await list({})).total);
    const today = new Date().toISOString().slice(0, 10);
    expect((await list({ date_from: today, date_to: today })).total).toBe((await list({})).total);
    expect((await list({ date_to: '2000-01-01' })).total).toBe(0);
    expect((await list({ date_from: '2999-01-01T00:00:00Z' })).total).toBe(0);
  });

  it('refuses bad parameters with a 4xx naming them', async () => {
    expectError(await t.admin('activity/log_get_list', { admin_id: 'me' }), 422);
    expectError(await t.admin('activity/log_get_list', { per_page: 501 }), 422);
    expectError(await t.admin('activity/log_get_list', { actor_type: 'robot' }), 422);
    expectInvalid(await t.admin('activity/log_get_list', { date_from: 'yesterday' }), 'date_from');
    expectInvalid(await t.admin('activity/log_get_list', { date_to: '2026-02-31' }), 'date_to');
    expectError(await t.admin('activity/log_get_list', { search: 'x'.repeat(300) }), 422);
  });

  it('needs activity.view; clients and guests are refused', async () => {
    const without = await staffWith(t, ['client.view']);
    expectError(await asStaff(t, without, 'activity/log_get_list'), 403);
    const buyer = await t.createClient();
    expectError(await t.call('/api/admin/activity/log_get_list', {}, { basic: ['client', buyer.token] }), 203, 401);
    expectError(await t.call('/api/admin/activity/log_get_list', {}), 201, 401);
    expectError(await t.call('/api/client/activity/log_get_list', {}, { basic: ['client', buyer.token] }), 740, 404);
  });

  const exportCsv = (query: Record<string, string> = {}, token: string | null = t.adminToken) =>
    t.app.inject({
      method: 'GET',
      url: '/api/admin/export/activity.csv',
      query,
      headers: token === null ? {} : { authorization: `Basic ${Buffer.from(`admin:${token}`).toString('base64')}` },
    });

  it('exports the filtered log as CSV, newest first, secrets as changed', async () => {
    await t.admin('system/settings_update', { smtp_password: 'Csv-Secret-123', company_email: '=cmd@example.com' });
    const reply = await exportCsv();
    expect(reply.statusCode).toBe(200);
    expect(reply.headers['content-type']).toContain('text/csv');
    expect(reply.headers['content-disposition']).toMatch(/attachment; filename="activity-\d{4}-\d{2}-\d{2}\.csv"/);
    expect(reply.body).not.toContain('Csv-Secret-123');
    const rows = parseCsv(reply.body);
    expect(rows[0]).toEqual(['id', 'created_at', 'priority', 'actor_type', 'staff_id', 'staff_name', 'staff_email', 'ip', 'action', 'target_type', 'target_id', 'changes', 'message']);
    expect(rows[1]![8]).toBe('admin/system/settings_update');
    expect(JSON.parse(rows[1]![11]!)).toEqual(expect.arrayContaining([{ field: 'smtp_password', changed: true }]));
    expect(rows.length - 1).toBe((await list({})).total);
    const other = parseCsv((await exportCsv({ admin_id: String(otherId) })).body);
    expect(other.slice(1).map((row) => row[8])).toEqual(['admin/client/update']);
  });

  it('reads the export batch by batch, each entry once, newest first', async () => {
    const all = (await list({ per_page: 500 })).list.map((e) => e.id);
    const read: number[] = [];
    for await (const entry of t.services.activity.each({}, 2)) read.push(entry.id);
    expect(read).toEqual(all);
    const filtered: number[] = [];
    for await (const entry of t.services.activity.each({ action: 'admin/product/' }, 1)) filtered.push(entry.id);
    expect(filtered).toEqual((await list({ action: 'admin/product/' })).list.map((e) => e.id));
  });

  it('refuses a bad export filter, a missing permission and no credentials with the envelope', async () => {
    const bad = await exportCsv({ admin_id: 'me' });
    expect(bad.statusCode).toBe(422);
    expect(JSON.parse(bad.body).error.message).toContain('admin_id');
    expect((await exportCsv({ date_from: 'soon' })).statusCode).toBe(422);
    expect((await exportCsv({ actor_type: 'robot' })).statusCode).toBe(422);
    const without = await staffWith(t, ['client.view']);
    expect((await exportCsv({}, without)).statusCode).toBe(403);
    expect((await exportCsv({}, null)).statusCode).toBe(401);
  });
});
