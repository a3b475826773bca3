// Staff order and invoice lists (issue 13, for the panel): `search` over the client's e-mail and name, the order's
// title or the invoice's number, `client_id`, a created_at day range, and the client shown on each row — with the
// same validation as admin/client/get_list.
import { FormatRegistry } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SEARCH_CAP } from '../../src/db/search.ts';
import { StaffInvoicePage } from '../../src/modules/invoice/results.ts';
import { StaffOrderPage } from '../../src/modules/order/results.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { expectError, expectInvalid } from '../helpers/assertions.ts';
import { asClient, asStaff, makeProduct, staffWith } from '../helpers/selling-fixtures.ts';

// The server registers the formats it validates input with; answers also carry moments (CONTRACT §1's form).
if (!FormatRegistry.Has('date-time')) FormatRegistry.Set('date-time', (value) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/.test(value));

interface Row {
  id: number;
  client_id: number;
  client_email: string | null;
  client_name: string | null;
}

describe('admin order and invoice lists: search, client, dates', () => {
  let t: TestApp;
  const tag = Math.random().toString(36).slice(2, 8);
  let quill: { id: number; token: string; email: string };
  let rook: { id: number; token: string; email: string };
  /** Orders and invoices by name: q1 (Quill, Jan 2024), q2 (Quill, Mar 2024), r1 (Rook, 15 Mar 2024, "Falcon" plan). */
  const orders: Record<string, number> = {};
  const invoices: Record<string, number> = {};
  let paidNumber: string;

  beforeAll(async () => {
    t = await createTestApp();
    const plain = await makeProduct(t, { title: `Plain plan ${tag}` });
    const falcon = await makeProduct(t, { title: `Falcon plan ${tag}` });
    quill = await t.createClient({ email: `quill-${tag}@writers.example`, first_name: 'Ada', last_name: `Quillfeather${tag}` });
    rook = await t.createClient({ email: `rook-${tag}@chess.example`, first_name: `Rookie${tag}`, last_name: '' });
    const make = async (name: string, clientId: number, productId: number, createdAt: string): Promise<void> => {
      const reply = await t.admin('order/create', { client_id: clientId, product_id: productId, period: '1M', invoice_option: 'issue-invoice' });
      expect(reply.body.error).toBeNull();
      orders[name] = reply.result as number;
      const order = (await t.admin('order/get', { id: orders[name] })).result as { unpaid_invoice_id: number };
      invoices[name] = order.unpaid_invoice_id;
      await t.services.db.updateTable('orders').set({ created_at: createdAt }).where('id', '=', orders[name]).execute();
      await t.services.db.updateTable('invoices').set({ created_at: createdAt }).where('id', '=', invoices[name]).execute();
    };
    await make('q1', quill.id, plain, '2024-01-10T08:00:00Z');
    await make('q2', quill.id, plain, '2024-03-14T23:59:59Z');
    await make('r1', rook.id, falcon, '2024-03-15T00:00:00Z');
    expect((await t.admin('invoice/mark_as_paid', { id: invoices.q2 })).result).toBe(true);
    paidNumber = ((await t.admin('invoice/get', { id: invoices.q2 })).result as { number: string }).number;
    expect(paidNumber).toEqual(expect.any(String));
  });
  afterAll(async () => {
    await t.close();
  });

  const list = async (what: 'order' | 'invoice', params: Record<string, unknown>): Promise<{ total: number; list: Row[] }> => {
    const reply = await t.admin(`${what}/get_list`, { per_page: 500, ...params });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    // The declared result schema (CONTRACT §11) describes what is answered.
    const schema = what === 'order' ? StaffOrderPage : StaffInvoicePage;
    expect([...Value.Errors(schema, reply.result)].map((error) => `${error.path}: ${error.message}`)).toEqual([]);
    return reply.result as { total: number; list: Row[] };
  };
  const ids = async (what: 'order' | 'invoice', params: Record<string, unknown>): Promise<number[]> =>
    (await list(what, params)).list.map((row) => row.id);

  it("each row names its client: client_email and client_name (first name alone when there is no last name)", async () => {
    const rows = (await list('order', { search: tag })).list;
    expect(rows.find((row) => row.id === orders.q1)).toMatchObject({ client_id: quill.id, client_email: quill.email, client_name: `Ada Quillfeather${tag}` });
    expect(rows.find((row) => row.id === orders.r1)).toMatchObject({ client_id: rook.id, client_email: rook.email, client_name: `Rookie${tag}` });
    const invoiceRows = (await list('invoice', { search: tag })).list;
    expect(invoiceRows.find((row) => row.id === invoices.r1)).toMatchObject({ client_email: rook.email, client_name: `Rookie${tag}` });
  });

  it("search matches the client's e-mail or name, case-insensitively; newest first", async () => {
    expect(await ids('order', { search: `QUILL-${tag}@` })).toEqual([orders.q2, orders.q1]);
    expect(await ids('order', { search: `quillfeather${tag}` })).toEqual([orders.q2, orders.q1]);
    expect(await ids('order', { search: `rookie${tag}` })).toEqual([orders.r1]);
    expect(await ids('invoice', { search: `rook-${tag}` })).toEqual([invoices.r1]);
    expect(await ids('invoice', { search: `Quillfeather${tag}` })).toEqual([invoices.q2, invoices.q1]);
    expect(await ids('order', { search: `nobody-${tag}` })).toEqual([]);
  });

  it("search matches an order's title and an invoice's number, and digits name the record's id", async () => {
    expect(await ids('order', { search: `falcon PLAN ${tag}` })).toEqual([orders.r1]);
    expect(await ids('invoice', { search: paidNumber.toLowerCase() })).toContain(invoices.q2);
    expect((await list('invoice', { search: paidNumber, client_id: quill.id })).list.map((row) => row.id)).toEqual([invoices.q2]);
    // A title is not an invoice's search field, nor a number an order's.
    expect(await ids('invoice', { search: `Falcon plan ${tag}` })).toEqual([]);
    expect(await ids('order', { search: String(orders.r1) })).toContain(orders.r1);
    expect(await ids('invoice', { search: String(invoices.q1) })).toContain(invoices.q1);
  });

  it('what staff type is literal: LIKE wildcards match only themselves', async () => {
    expect(await ids('order', { search: `quill_${tag}` })).toEqual([]);
    expect(await ids('invoice', { search: `%${tag}%` })).toEqual([]);
    expect(await ids('order', { search: '%' })).toEqual([]);
  });

  it('client_id, status and a search combine', async () => {
    expect(await ids('order', { client_id: quill.id })).toEqual([orders.q2, orders.q1]);
    expect(await ids('order', { client_id: rook.id, search: `quill-${tag}` })).toEqual([]);
    expect(await ids('invoice', { search: tag, status: 'paid' })).toEqual([invoices.q2]);
    expect(await ids('invoice', { search: tag, status: 'unpaid' })).toEqual([invoices.r1, invoices.q1]);
    // Paying q2's invoice activated its order.
    expect(await ids('order', { search: tag, status: 'active' })).toEqual([orders.q2]);
    expect(await ids('order', { search: tag, status: 'pending_setup' })).toEqual([orders.r1, orders.q1]);
    expect(await ids('order', { search: `quill-${tag}`, status: 'canceled' })).toEqual([]);
  });

  it('date_from and date_to bound created_at by whole UTC days, both inclusive', async () => {
    for (const what of ['order', 'invoice'] as const) {
      const of = what === 'order' ? orders : invoices;
      expect(await ids(what, { search: tag, date_from: '2024-03-14' })).toEqual([of.r1, of.q2]);
      expect(await ids(what, { search: tag, date_to: '2024-03-14' })).toEqual([of.q2, of.q1]);
      expect(await ids(what, { search: tag, date_from: '2024-03-15', date_to: '2024-03-15' })).toEqual([of.r1]);
      expect(await ids(what, { search: tag, date_from: '2024-01-11', date_to: '2024-03-13' })).toEqual([]);
      expect(await ids(what, { date_from: '2024-01-10', date_to: '2024-01-10' })).toEqual([of.q1]);
    }
  });

  it('pages through a search with its exact total', async () => {
    const first = (await t.admin('order/get_list', { search: tag, per_page: 2 })).result;
    expect(first).toMatchObject({ page: 1, per_page: 2, pages: 2, total: 3 });
    expect(first.list.map((row: Row) => row.id)).toEqual([orders.r1, orders.q2]);
    const second = (await t.admin('order/get_list', { search: tag, per_page: 2, page: 2 })).result;
    expect(second.list.map((row: Row) => row.id)).toEqual([orders.q1]);
    expect((await t.admin('invoice/get_list', { search: tag, per_page: 2, page: 3 })).result).toEqual({ list: [], page: 3, per_page: 2, pages: 2, total: 3 });
  });

  it.each(['order', 'invoice', 'client'])('%s/get_list: bad filters → 422 naming the parameter; a range ending before it starts → 422', async (what) => {
    const path = `${what}/get_list`;
    expectInvalid(await t.admin(path, { date_from: '2024-13-45' }), 'date_from');
    expectInvalid(await t.admin(path, { date_from: '2024-02-30' }), 'date_from');
    expectInvalid(await t.admin(path, { date_to: 'yesterday' }), 'date_to');
    expectInvalid(await t.admin(path, { date_to: '2024-03-20T00:00:00Z' }), 'date_to');
    expectInvalid(await t.admin(path, { date_to: '10000-01-01' }), 'date_to');
    expectInvalid(await t.admin(path, { date_from: '2024-03-02', date_to: '2024-03-01' }), 'date_to');
    expect((await t.admin(path, { date_from: '2024-03-01', date_to: '2024-03-01' })).status).toBe(200);
    expectInvalid(await t.admin(path, { search: 5 }), 'search');
    expectInvalid(await t.admin(path, { search: ['a'] }), 'search');
    expectInvalid(await t.admin(path, { search: 'x'.repeat(256) }), 'search');
    expectInvalid(await t.admin(path, { per_page: 0 }), 'per_page');
    if (what !== 'client') {
      expectInvalid(await t.admin(path, { client_id: 'abc' }), 'client_id');
      expectInvalid(await t.admin(path, { client_id: 0 }), 'client_id');
    }
  });

  it('a client ID nobody has, or an empty search, is not an error', async () => {
    expect((await list('order', { client_id: 2_000_000_000 })).total).toBe(0);
    expect((await list('invoice', { client_id: 2_000_000_000 })).total).toBe(0);
    expect((await list('order', { search: '' })).total).toBe((await list('order', {})).total);
  });

  it('staff lists only: no credentials → 401 (201); a client token used as an admin token → 401 (205); a client reads its own rows without client_email', async () => {
    for (const what of ['order', 'invoice']) {
      expectError(await t.call(`/api/admin/${what}/get_list`, { search: tag }), 201, 401);
      expectError(await t.call(`/api/admin/${what}/get_list`, { search: tag }, { basic: ['admin', quill.token] }), 205, 401);
      const own = await asClient(t, quill.token, `${what}/get_list`, { per_page: 500 });
      expect(own.status).toBe(200);
      const rows = own.result.list as Array<Record<string, unknown>>;
      expect(rows.map((row) => row.client_id)).toEqual([quill.id, quill.id]);
      for (const row of rows) expect(row).not.toHaveProperty('client_email');
    }
  });

  it('totals by status alone (counted once per few seconds) follow this process’s status changes at once', async () => {
    const canceled = (await list('order', { status: 'canceled' })).total;
    const pending = (await list('order', { status: 'pending_setup' })).total;
    expect((await t.admin('order/cancel', { id: orders.q1 })).result).toBe(true);
    expect((await list('order', { status: 'canceled' })).total).toBe(canceled + 1);
    expect((await list('order', { status: 'pending_setup' })).total).toBe(pending - 1);
    expect((await t.admin('order/uncancel', { id: orders.q1 })).result).toBe(true);
    expect((await list('order', { status: 'canceled' })).total).toBe(canceled);

    const paid = (await list('invoice', { status: 'paid' })).total;
    const unpaid = (await list('invoice', { status: 'unpaid' })).total;
    expect((await t.admin('invoice/mark_as_paid', { id: invoices.r1, execute: false })).result).toBe(true);
    expect((await list('invoice', { status: 'paid' })).total).toBe(paid + 1);
    expect((await list('invoice', { status: 'unpaid' })).total).toBe(unpaid - 1);
  });

  it('staff without the view permission → 403', async () => {
    const token = await staffWith(t, ['client.view']);
    expectError(await asStaff(t, token, 'order/get_list', { search: tag }), 403);
    expectError(await asStaff(t, token, 'invoice/get_list', { search: tag }), 403);
    expect((await asStaff(t, token, 'client/get_list', { search: tag })).status).toBe(200);
  });
});

// More matches than SEARCH_CAP: the lists test rows one by one in list order and do not count them. Rows are
// written straight to the tables (2,100 through the API would take minutes); the lists are read over HTTP.
describe('a search matching more rows than SEARCH_CAP', () => {
  let t: TestApp;
  const many = SEARCH_CAP + 100;
  const tag = `bulk${Math.random().toString(36).slice(2, 7)}`;
  let firstId = 0;

  beforeAll(async () => {
    t = await createTestApp();
    const product = await makeProduct(t, { title: 'Bulk plan' });
    const db = t.services.db;
    const at = (i: number) => new Date(Date.UTC(2025, 0, 1) + i * 3_600_000).toISOString().replace(/\.\d{3}Z$/, 'Z');
    for (let start = 0; start < many; start += 300) {
      const indexes = Array.from({ length: Math.min(300, many - start) }, (_, k) => start + k);
      const clients = await db
        .insertInto('clients')
        .values(indexes.map((i) => ({ email: `c${i}-${tag}@bulk.example`, first_name: `Bulk${i}`, last_name: null, company: null, phone: null, address_1: null, address_2: null, city: null, state: null, postcode: null, country: null, currency: 'USD', status: 'active' as const, api_token_hash: `${tag}-${i}`, api_token_enc: 'x', password_hash: null, created_at: at(i), updated_at: at(i) })))
        .returning('id')
        .execute();
      firstId ||= clients[0]!.id;
      await db
        .insertInto('orders')
        .values(clients.map(({ id }, k) => ({ client_id: id, product_id: product, title: k % 2 === 0 ? `Even ${tag}` : `Odd ${tag}`, type: 'custom', period: '1M', quantity: 1, price: 1000, currency: 'USD', status: 'active' as const, config: '{}', created_at: at(indexes[k]!), updated_at: at(indexes[k]!) })))
        .execute();
      await db
        .insertInto('invoices')
        .values(clients.map(({ id }, k) => ({ hash: `${tag}-${id}`, number: `${tag.toUpperCase()}-${indexes[k]}`, client_id: id, status: 'paid' as const, currency: 'USD', subtotal: 1000, total: 1000, created_at: at(indexes[k]!), updated_at: at(indexes[k]!) })))
        .execute();
    }
  });
  afterAll(async () => {
    await t.close();
  });

  const page = async (what: string, params: Record<string, unknown>) => {
    const reply = await t.admin(`${what}/get_list`, { per_page: 50, ...params });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    return reply.result as { total: number; pages: number; total_capped?: true; list: Array<{ id: number; client_email?: string; email?: string }> };
  };

  it.each(['client', 'order', 'invoice'])('%s/get_list: a common fragment → the newest matches, not counted: "at least" this page and one more, with total_capped', async (what) => {
    const first = await page(what, { search: tag });
    expect(first).toMatchObject({ total: 51, pages: 2, total_capped: true });
    expect(first.list).toHaveLength(50);
    // Newest first: the last rows written, in order.
    const emails = first.list.map((row) => row.client_email ?? row.email);
    expect(emails.slice(0, 2)).toEqual([`c${many - 1}-${tag}@bulk.example`, `c${many - 2}-${tag}@bulk.example`]);
    const later = await page(what, { search: tag, page: 3 });
    expect(later).toMatchObject({ total: 151, pages: 4, total_capped: true });
    expect(later.list[0]!.client_email ?? later.list[0]!.email).toBe(`c${many - 101}-${tag}@bulk.example`);
    // The last page knows there is nothing after it: exact, not capped; past the end, the rows are counted.
    const last = await page(what, { search: tag, page: many / 50 });
    expect(last).toMatchObject({ total: many, pages: many / 50 });
    expect(last).not.toHaveProperty('total_capped');
    expect(last.list.at(-1)!.client_email ?? last.list.at(-1)!.email).toBe(`c0-${tag}@bulk.example`);
    const past = await page(what, { search: tag, page: many / 50 + 1 });
    expect(past).toMatchObject({ total: many, pages: many / 50, list: [] });
    expect(past).not.toHaveProperty('total_capped');
  });

  it('a fragment with few matches among them is counted exactly, with no total_capped', async () => {
    const exact = await page('order', { search: `c1050-${tag}` });
    expect(exact.total).toBe(1);
    expect(exact).not.toHaveProperty('total_capped');
    expect((await page('invoice', { search: `${tag}-105` })).total).toBe(11);
    expect((await page('client', { search: `c205-${tag}` })).total).toBe(1);
    // Half the titles: under the cap, counted exactly.
    const even = await page('order', { search: `even ${tag}` });
    expect(even.total).toBe(many / 2);
    expect(even).not.toHaveProperty('total_capped');
    // A common search narrowed by another filter is counted exactly when the narrowed rows are few.
    const narrowed = await page('order', { search: tag, client_id: firstId });
    expect(narrowed).toMatchObject({ total: 1 });
    expect(narrowed).not.toHaveProperty('total_capped');
    // One row an hour: 24 on the first day, counted exactly on every list.
    for (const what of ['client', 'order', 'invoice']) {
      const day = await page(what, { search: tag, date_from: '2025-01-01', date_to: '2025-01-01' });
      expect(day.total).toBe(24);
      expect(day).not.toHaveProperty('total_capped');
    }
  });
});
