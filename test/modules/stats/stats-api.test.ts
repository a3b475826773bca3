// The stats module's actions (issue 25 item 4): FOSSBilling's Stats shapes, the dashboard's parameters and every
// failure path (bad, missing and wrong-typed dates and figures; another role; staff without stats.view), and the
// figures' CSV exports. SQLite, and PostgreSQL + Redis when TEST_* are set.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectError, expectInvalid } from '../../helpers/assertions.ts';
import { asClient, asStaff, makeProduct, staffWith } from '../../helpers/selling-fixtures.ts';

describe('stats actions', () => {
  let t: TestApp;
  let buyer: { id: number; token: string; email: string };
  let plan: number;
  beforeAll(async () => {
    t = await createTestApp();
    plan = await makeProduct(t, { title: 'Starter' });
    buyer = await t.createClient({ country: 'DE' });
    await t.createClient({ country: 'DE' });
    await t.createClient({ country: 'FR' });
    for (let index = 0; index < 2; index += 1) {
      expect((await asClient(t, buyer.token, 'cart/add_item', { id: plan, period: '1M' })).body.error).toBeNull();
      const checkout = await asClient(t, buyer.token, 'cart/checkout');
      expect((await t.admin('invoice/mark_as_paid', { id: checkout.result.invoice_id })).result).toBe(true);
    }
    expect((await asClient(t, buyer.token, 'cart/add_item', { id: plan, period: '1M' })).body.error).toBeNull();
    expect((await asClient(t, buyer.token, 'cart/checkout')).body.error).toBeNull();
  });
  afterAll(async () => {
    await t.close();
  });

  it('get_summary: FOSSBilling’s keys, counts as numbers', async () => {
    const summary = (await t.admin('stats/get_summary')).result;
    const keys = ['clients', 'orders', 'invoices', 'tickets'].flatMap((what) => ['total', 'today', 'yesterday', 'this_month', 'last_month'].map((when) => `${what}_${when}`));
    expect(Object.keys(summary).toSorted()).toEqual(keys.toSorted());
    expect(summary).toMatchObject({ clients_total: 3, clients_today: 3, clients_yesterday: 0, orders_total: 3, orders_today: 3, invoices_total: 3, invoices_today: 3, tickets_total: 0 });
  });

  it('get_summary_income and get_income_vs_refunds: money in the default currency', async () => {
    expect((await t.admin('stats/get_summary_income')).result).toEqual({ total: '20.00', today: '20.00', yesterday: '0.00', this_month: '20.00', last_month: '0.00' });
    expect((await t.admin('stats/get_income_vs_refunds')).result).toEqual({ refund: '0.00', income: '20.00' });
  });

  it('get_orders_statuses names every status; get_product_summary counts active orders per product', async () => {
    expect((await t.admin('stats/get_orders_statuses')).result).toEqual({ pending_setup: 1, failed_setup: 0, failed_renew: 0, active: 2, suspended: 0, canceled: 0 });
    expect((await t.admin('stats/get_product_summary')).result).toEqual([{ id: plan, title: 'Starter', orders: 2 }]);
  });

  it('client_countries and sales_countries: most first, at most `limit`', async () => {
    expect((await t.admin('stats/client_countries')).result).toEqual({ DE: 2, FR: 1 });
    expect((await t.admin('stats/client_countries', { limit: 1 })).result).toEqual({ DE: 2 });
    expect((await t.admin('stats/sales_countries')).result).toEqual({ DE: 2 });
    for (const limit of [0, 1001, 'many', 1.5]) {
      expectInvalid(await t.admin('stats/client_countries', { limit }), 'limit');
      expectInvalid(await t.admin('stats/sales_countries', { limit }), 'limit');
    }
  });

  it('refuses bad ranges with a 422 naming the parameter', async () => {
    for (const from of ['2026-02-30', 'yesterday', '26-01-01', '2026-1-1']) expectInvalid(await t.admin('stats/dashboard', { from }), 'from');
    expectInvalid(await t.admin('stats/dashboard', { from: 20260101 }), 'from');
    expectInvalid(await t.admin('stats/dashboard', { to: ['2026-01-01'] }), 'to');
    expectInvalid(await t.admin('stats/dashboard', { to: '99999-01-01' }), 'to');
    expectInvalid(await t.admin('stats/dashboard', { from: '2026-03-02', to: '2026-03-01' }), 'to');
    expectInvalid(await t.admin('stats/dashboard', { from: '2020-01-01', to: '2026-01-01' }), 'from');
    expectInvalid(await t.admin('stats/dashboard', { from: '1969-12-31', to: '1970-01-02' }), 'from');
    const oneDay = await t.admin('stats/dashboard', { from: '2026-03-01', to: '2026-03-01' });
    expect(oneDay.result).toMatchObject({ from: '2026-03-01', to: '2026-03-01', previous_from: '2026-02-28', previous_to: '2026-02-28' });
    const leap = await t.admin('stats/dashboard', { from: '2024-02-29' });
    expect(leap.result).toMatchObject({ from: '2024-02-29', to: '2024-03-29', previous_to: '2024-02-28' });
    expect((await t.call('/api/admin/stats/dashboard?from=2026-01-01&to=2026-01-31', {}, { method: 'GET', basic: ['admin', t.adminToken] })).result).toMatchObject({ from: '2026-01-01', to: '2026-01-31' });
  });

  it('dashboard_list: a missing, unknown or wrong-typed figure, or a bad page, is a 422', async () => {
    expectInvalid(await t.admin('stats/dashboard_list', {}), 'figure');
    expectInvalid(await t.admin('stats/dashboard_list', { figure: 'profit' }), 'figure');
    expectInvalid(await t.admin('stats/dashboard_list', { figure: 7 }), 'figure');
    expectInvalid(await t.admin('stats/dashboard_list', { figure: 'mrr', page: 0 }), 'page');
    expectInvalid(await t.admin('stats/dashboard_list', { figure: 'mrr', per_page: 501 }), 'per_page');
    expectInvalid(await t.admin('stats/dashboard_list', { figure: 'mrr', from: '2026-13-01' }), 'from');
    const page = await t.admin('stats/dashboard_list', { figure: 'mrr', per_page: 1, page: 2 });
    expect(page.result).toMatchObject({ figure: 'mrr', page: 2, per_page: 1, pages: 2, total: 2 });
    expect(page.result.list).toHaveLength(1);
    expect(Object.keys(page.result.list[0])).toEqual(page.result.columns);
    expect((await t.admin('stats/dashboard_list', { figure: 'mrr', page: 9 })).result.list).toEqual([]);
  });

  it('is staff-only, and needs stats.view', async () => {
    for (const action of ['dashboard', 'get_summary', 'client_countries']) {
      expectError(await t.call(`/api/admin/stats/${action}`, {}), 201, 401);
      expectError(await t.call(`/api/admin/stats/${action}`, {}, { basic: ['client', buyer.token] }), 203, 401);
      expectError(await t.call(`/api/client/stats/${action}`, {}, { basic: ['client', buyer.token] }), 740, 404);
      expectError(await t.call(`/api/guest/stats/${action}`, {}), 740, 404);
    }
    const without = await staffWith(t, ['order.view', 'invoice.view']);
    expectError(await asStaff(t, without, 'stats/dashboard'), 403);
    expectError(await asStaff(t, without, 'stats/dashboard_list', { figure: 'mrr' }), 403);
    expectError(await asStaff(t, without, 'stats/get_summary_income'), 403);
    const viewer = await staffWith(t, ['stats.view']);
    expect((await asStaff(t, viewer, 'stats/dashboard')).body.error).toBeNull();
    const catalogue = (await t.admin('staff/permission_get_list')).result as Array<{ permission: string; actions: string[] }>;
    expect(catalogue.find((entry) => entry.permission === 'stats.view')?.actions).toEqual(expect.arrayContaining(['stats/dashboard', 'stats/get_summary', 'stats/sales_countries']));
  });

  describe('CSV exports of the figures', () => {
    const auth = (token: string) => ({ authorization: `Basic ${Buffer.from(`admin:${token}`).toString('base64')}` });

    it('answers the records behind a figure as CSV, the columns of dashboard_list', async () => {
      const reply = await t.app.inject({ method: 'GET', url: '/api/admin/export/dashboard_mrr.csv', headers: auth(t.adminToken) });
      expect(reply.statusCode).toBe(200);
      expect(reply.headers['content-type']).toBe('text/csv; charset=utf-8');
      expect(reply.headers['content-disposition']).toMatch(/^attachment; filename="dashboard_mrr-\d{4}-\d{2}-\d{2}\.csv"$/);
      const lines = reply.body.trim().split('\r\n');
      expect(lines[0]).toBe('"order_id","client_id","title","period","currency","quantity","price","discount","amount","mrr","expires_at","default_currency","amount_in_default","mrr_in_default"');
      expect(lines).toHaveLength(3);
      expect(lines[1]).toContain('"Starter');
      const revenue = await t.app.inject({ method: 'GET', url: '/api/admin/export/dashboard_revenue.csv?from=2020-01-01&to=2021-12-31', headers: auth(t.adminToken) });
      expect(revenue.body.trim().split('\r\n')).toHaveLength(1);
    });

    it('refuses bad dates, unknown figures and staff without stats.view, in the envelope', async () => {
      const bad = await t.app.inject({ method: 'GET', url: '/api/admin/export/dashboard_mrr.csv?from=2026-02-31', headers: auth(t.adminToken) });
      expect(bad.statusCode).toBe(422);
      expect(JSON.parse(bad.body).error.message).toContain('"from"');
      expect((await t.app.inject({ method: 'GET', url: '/api/admin/export/dashboard_profit.csv', headers: auth(t.adminToken) })).statusCode).toBe(404);
      const without = await staffWith(t, ['client.view']);
      const refused = await t.app.inject({ method: 'GET', url: '/api/admin/export/dashboard_mrr.csv', headers: auth(without) });
      expect(refused.statusCode).toBe(403);
      expect((await t.app.inject({ method: 'GET', url: '/api/admin/export/dashboard_mrr.csv' })).statusCode).toBe(401);
      // The lists' own exports are still served beside them.
      expect((await t.app.inject({ method: 'GET', url: '/api/admin/export/clients.csv', headers: auth(t.adminToken) })).statusCode).toBe(200);
    });
  });
});
