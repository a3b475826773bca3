// The admin panel's server side (issue 14): finding the order behind a pasted key, the catalogue of staff
// permissions, and the streamed CSV exports of clients, orders, invoices and transactions (filters, permissions,
// CSRF, CSV injection, batched reads). Runs on SQLite, and on PostgreSQL (+ Redis) when TEST_* are set.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csvCell } from '../../../src/modules/export/csv.ts';
import { Browser, createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectError, expectInvalid } from '../../helpers/assertions.ts';
import { asStaff, makeProduct, staffWith } from '../../helpers/selling-fixtures.ts';

/** Parses the CSV the export writes (every cell quoted, CRLF line ends) into rows of cells. */
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

describe('admin panel API', () => {
  let t: TestApp;
  let ada: Awaited<ReturnType<TestApp['createClient']>>;
  let bob: Awaited<ReturnType<TestApp['createClient']>>;
  let keyPlan: number;
  let adaOrder: number;
  let adaKey: string;
  let adaInvoice: number;

  const exportCsv = (file: string, query: Record<string, string> = {}, basic: [string, string] | null = ['admin', '']) =>
    t.app.inject({
      method: 'GET',
      url: `/api/admin/export/${file}`,
      query,
      headers: basic === null ? {} : { authorization: `Basic ${Buffer.from(`${basic[0]}:${basic[1] || t.adminToken}`).toString('base64')}` },
    });
  const envelope = (reply: { statusCode: number; body: string }) => ({ status: reply.statusCode, body: JSON.parse(reply.body) as { result: unknown; error: { message: string; code: number } | null } });

  beforeAll(async () => {
    t = await createTestApp();
    ada = await t.createClient({ first_name: 'Ada', last_name: 'Lovelace', email: 'ada@example.com' });
    // A name a spreadsheet would run as a formula: the export must defuse it.
    bob = await t.createClient({ first_name: '=HYPERLINK("http://evil")', last_name: '+Bob', email: 'bob@example.com', company: '@corp' });
    keyPlan = await makeProduct(t, { title: 'Key plan', type: 'apikey' });
    const created = await t.admin('order/create', { client_id: ada.id, product_id: keyPlan, period: '1M', activate: true });
    expect(created.body.error).toBeNull();
    adaOrder = created.result as number;
    adaKey = (await t.admin('serviceapikey/get', { order_id: adaOrder })).result.api_key as string;
    await t.admin('order/create', { client_id: bob.id, product_id: keyPlan, period: '1M', invoice_option: 'issue-invoice' });
    const invoiced = await t.admin('order/create', { client_id: ada.id, product_id: keyPlan, period: '1M', invoice_option: 'issue-invoice' });
    adaInvoice = (await t.admin('order/get', { id: invoiced.result })).result.unpaid_invoice_id as number;
    expect(adaInvoice).toBeGreaterThan(0);
    expect((await t.admin('invoice/mark_as_paid', { id: adaInvoice, transaction_id: '-bank-ref-42' })).body.error).toBeNull();
  });
  afterAll(async () => {
    await t.close();
  });

  describe('admin/serviceapikey/find', () => {
    it('finds the order and client behind a pasted key, without echoing the key', async () => {
      const found = await t.admin('serviceapikey/find', { key: `  ${adaKey}\n` });
      expect(found.body).toEqual({ result: { order_id: adaOrder, client_id: ada.id, valid: 1, reason: 'VALID' }, error: null });
      expect(JSON.stringify(found.body)).not.toContain(adaKey);
      // A switched-off key is still found, with the reason check would give.
      await t.admin('serviceapikey/update', { order_id: adaOrder, valid: false });
      expect((await t.admin('serviceapikey/find', { key: adaKey })).result).toMatchObject({ order_id: adaOrder, valid: 0, reason: 'DISABLED' });
      await t.admin('serviceapikey/update', { order_id: adaOrder, valid: true });
    });

    it('answers 404 for an unknown key, without the key in the message', async () => {
      const reply = await t.admin('serviceapikey/find', { key: 'AAAAAAAA-BBBBBBBB-CCCCCCCC-DDDDDDDD' });
      expectError(reply, 404);
      expect(reply.body.error!.message).not.toContain('AAAAAAAA');
    });

    it('refuses missing, empty, wrong-typed and over-long keys (422)', async () => {
      expectInvalid(await t.admin('serviceapikey/find', {}), 'key');
      expectInvalid(await t.admin('serviceapikey/find', { key: '' }), 'key');
      expectInvalid(await t.admin('serviceapikey/find', { key: 12345 }), 'key');
      expectInvalid(await t.admin('serviceapikey/find', { key: 'x'.repeat(257) }), 'key');
    });

    it('needs serviceapikey.manage (403) and a staff login (401); clients and guests have no such action', async () => {
      const viewer = await staffWith(t, ['order.view']);
      expectError(await asStaff(t, viewer, 'serviceapikey/find', { key: adaKey }), 403);
      const manager = await staffWith(t, ['serviceapikey.manage']);
      expect((await asStaff(t, manager, 'serviceapikey/find', { key: adaKey })).result.order_id).toBe(adaOrder);
      expectError(await t.call('/api/admin/serviceapikey/find', { key: adaKey }), 201, 401);
      expectError(await t.call('/api/client/serviceapikey/find', { key: adaKey }, { basic: ['client', ada.token] }), 740, 404);
      expectError(await t.call('/api/guest/serviceapikey/find', { key: adaKey }), 740, 404);
    });
  });

  describe('admin/staff/permission_get_list', () => {
    it('lists every permission the admin actions ask for, with its module and actions', async () => {
      const reply = await t.admin('staff/permission_get_list');
      expect(reply.body.error).toBeNull();
      const list = reply.result as Array<{ permission: string; module: string; actions: string[] }>;
      const names = list.map((entry) => entry.permission);
      expect(names).toEqual(names.toSorted((a, b) => a.localeCompare(b)));
      expect(new Set(names).size).toBe(names.length);
      for (const name of ['client.view', 'client.manage', 'order.view', 'order.manage', 'invoice.view', 'serviceapikey.manage', 'serviceapikey.check', 'staff.manage']) {
        expect(names).toContain(name);
      }
      const keys = list.find((entry) => entry.permission === 'serviceapikey.manage')!;
      expect(keys.module).toBe('serviceapikey');
      expect(keys.actions).toContain('serviceapikey/find');
      expect(keys.actions).not.toContain('serviceapikey/check');
      // Every listed permission is one a group can be given.
      expect((await t.admin('staff/group_create', { name: 'Everything listed', permissions: names })).body.error).toBeNull();
    });

    it('needs staff.manage (403), a login (401), and takes no unknown parameters quietly', async () => {
      const viewer = await staffWith(t, ['order.view']);
      expectError(await asStaff(t, viewer, 'staff/permission_get_list'), 403);
      expectError(await t.call('/api/admin/staff/permission_get_list', {}), 201, 401);
      expectError(await t.call('/api/client/staff/permission_get_list', {}, { basic: ['client', ada.token] }), 740, 404);
    });
  });

  describe('guest/session/whoami', () => {
    it("names the session's role and never fails for a visitor", async () => {
      const role = async (browser?: Browser) => {
        const reply = await t.call('/api/guest/session/whoami', {}, browser === undefined ? {} : { browser });
        expect(reply.status).toBe(200);
        return reply.result as { role: string };
      };
      expect(await role()).toEqual({ role: 'guest' });
      const junk = new Browser();
      junk.cookies.tollgate_session = 'not-a-session';
      expect(await role(junk)).toEqual({ role: 'guest' });
      // A guest cart's session is still a guest.
      const shopper = new Browser();
      await t.call('/api/guest/cart/get', {}, { browser: shopper });
      expect(Object.keys(shopper.cookies).length).toBeGreaterThan(0);
      expect(await role(shopper)).toEqual({ role: 'guest' });
      const client = await t.login('client', ada.email, ada.password, new Browser());
      expect(await role(client)).toEqual({ role: 'client' });
      const { ADMIN_EMAIL, ADMIN_PASSWORD } = await import('../../helpers/app.ts');
      const staff = await t.login('staff', ADMIN_EMAIL, ADMIN_PASSWORD, new Browser());
      expect(await role(staff)).toEqual({ role: 'admin' });
      // After logout the cookie names no session.
      expect((await t.call('/api/client/profile/logout', {}, { browser: client, csrf: true })).body.error).toBeNull();
      expect(await role(client)).toEqual({ role: 'guest' });
      // No client or admin variant.
      expectError(await t.call('/api/client/session/whoami', {}, { basic: ['client', ada.token] }), 740, 404);
    });
  });

  describe('CSV exports', () => {
    it('exports clients with a header, quoted cells and formulas defused', async () => {
      const reply = await exportCsv('clients.csv');
      expect(reply.statusCode).toBe(200);
      expect(reply.headers['content-type']).toBe('text/csv; charset=utf-8');
      expect(reply.headers['content-disposition']).toMatch(/^attachment; filename="clients-\d{4}-\d{2}-\d{2}\.csv"$/);
      expect(reply.headers['cache-control']).toBe('no-store');
      const rows = parseCsv(reply.body);
      expect(rows[0]).toEqual(['id', 'email', 'first_name', 'last_name', 'company', 'phone', 'country', 'status', 'currency', 'created_at']);
      const bobRow = rows.find((row) => row[1] === 'bob@example.com')!;
      expect(bobRow[2]).toBe(`'=HYPERLINK("http://evil")`);
      expect(bobRow[3]).toBe("'+Bob");
      expect(bobRow[4]).toBe("'@corp");
      expect(rows.find((row) => row[1] === 'ada@example.com')!.slice(0, 4)).toEqual([String(ada.id), 'ada@example.com', 'Ada', 'Lovelace']);
      // Ascending ids, each client once.
      const ids = rows.slice(1).map((row) => Number(row[0]));
      expect(ids).toEqual(ids.toSorted((a, b) => a - b));
    });

    it('quotes every cell and prefixes = + - @ tab and CR', () => {
      expect(csvCell('=1+1')).toBe(`"'=1+1"`);
      expect(csvCell('-2')).toBe(`"'-2"`);
      expect(csvCell('@SUM(A1)')).toBe(`"'@SUM(A1)"`);
      expect(csvCell('\t=x')).toBe(`"'\t=x"`);
      expect(csvCell('\r=x')).toBe(`"'\r=x"`);
      expect(csvCell('say "hi", then\nleave')).toBe('"say ""hi"", then\nleave"');
      expect(csvCell(-5)).toBe('"-5"');
      expect(csvCell(null)).toBe('""');
      expect(csvCell('plain')).toBe('"plain"');
    });

    it('exports orders and invoices with the client e-mail and name, filtered by status, client and search', async () => {
      const orders = parseCsv((await exportCsv('orders.csv')).body);
      expect(orders[0]).toEqual(['id', 'client_id', 'client_email', 'client_name', 'product_id', 'title', 'type', 'period', 'price', 'currency', 'status', 'expires_at', 'created_at']);
      expect(orders).toHaveLength(4);
      const first = orders.find((row) => row[0] === String(adaOrder))!;
      expect(first.slice(1, 4)).toEqual([String(ada.id), 'ada@example.com', 'Ada Lovelace']);
      expect(first[8]).toBe('10.00');
      expect(first[10]).toBe('active');

      // Ada's two orders are active (one by payment); Bob's waits for its invoice.
      const active = parseCsv((await exportCsv('orders.csv', { status: 'active' })).body).slice(1);
      expect(active.map((row) => [row[2], row[10]])).toEqual([['ada@example.com', 'active'], ['ada@example.com', 'active']]);
      expect(parseCsv((await exportCsv('orders.csv', { client_id: String(bob.id) })).body).slice(1).every((row) => row[2] === 'bob@example.com')).toBe(true);
      const bySearch = parseCsv((await exportCsv('orders.csv', { search: 'LOVELACE' })).body).slice(1);
      expect(bySearch).toHaveLength(2);
      expect(bySearch.every((row) => row[1] === String(ada.id))).toBe(true);
      // `%` is matched literally, not as a wildcard.
      expect(parseCsv((await exportCsv('orders.csv', { search: '%' })).body)).toHaveLength(1);

      const invoices = parseCsv((await exportCsv('invoices.csv', { status: 'paid' })).body);
      expect(invoices[0]).toEqual(['id', 'number', 'client_id', 'client_email', 'client_name', 'status', 'currency', 'subtotal', 'total', 'due_at', 'paid_at', 'created_at', 'invoice', 'currency_rate', 'default_currency', 'subtotal_in_default', 'total_in_default']);
      expect(invoices.slice(1).map((row) => [row[0], row[3], row[5], row[8]])).toEqual([[String(adaInvoice), 'ada@example.com', 'paid', '10.00']]);
      // In the default currency at the stored rate (issue 26): the same amounts here, at rate 1.
      expect(invoices[1]!.slice(13)).toEqual(['1', 'USD', '10.00', '10.00']);
      expect(parseCsv((await exportCsv('invoices.csv', { search: 'bob@' })).body).slice(1).map((row) => row[5])).toEqual(['unpaid']);
      // As on the lists: digits also name a record by id, and the search covers the order's title.
      expect(parseCsv((await exportCsv('invoices.csv', { search: String(adaInvoice) })).body).slice(1).map((row) => row[0])).toEqual([String(adaInvoice)]);
      expect(parseCsv((await exportCsv('orders.csv', { search: 'key plan' })).body)).toHaveLength(4);
      // The creation-day range: today has them all, yesterday none.
      const today = new Date().toISOString().slice(0, 10);
      const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
      expect(parseCsv((await exportCsv('orders.csv', { date_from: today, date_to: today })).body)).toHaveLength(4);
      expect(parseCsv((await exportCsv('invoices.csv', { date_to: yesterday })).body)).toHaveLength(1);
      expect(parseCsv((await exportCsv('clients.csv', { date_from: today, search: 'lovelace' })).body)).toHaveLength(2);
    });

    it('exports transactions with the reference staff typed, defused', async () => {
      const rows = parseCsv((await exportCsv('transactions.csv', { invoice_id: String(adaInvoice) })).body);
      expect(rows[0]).toEqual(['id', 'invoice_id', 'client_id', 'client_email', 'client_name', 'type', 'gateway', 'txn_id', 'amount', 'currency', 'status', 'message', 'created_at', 'invoice', 'currency_rate', 'default_currency', 'amount_in_default']);
      expect(rows[1]!.slice(14)).toEqual(['1', 'USD', '10.00']);
      expect(rows).toHaveLength(2);
      expect(rows[1]!.slice(1, 5)).toEqual([String(adaInvoice), String(ada.id), 'ada@example.com', 'Ada Lovelace']);
      expect(rows[1]![7]).toBe("'-bank-ref-42");
      expect(rows[1]![8]).toBe('10.00');
      expect(parseCsv((await exportCsv('transactions.csv', { client_id: String(bob.id) })).body)).toHaveLength(1);
    });

    it('refuses bad filters with 422 naming the parameter, and unknown exports with 404', async () => {
      for (const [file, query, param] of [
        ['orders.csv', { status: 'nope' }, 'status'],
        ['orders.csv', { client_id: 'abc' }, 'client_id'],
        ['orders.csv', { client_id: '0' }, 'client_id'],
        ['invoices.csv', { client_id: '99999999999' }, 'client_id'],
        ['transactions.csv', { invoice_id: '1.5' }, 'invoice_id'],
        ['clients.csv', { search: 'x'.repeat(256) }, 'search'],
        ['clients.csv', { status: 'paid' }, 'status'],
        ['orders.csv', { date_from: '2026-13-40' }, 'date_from'],
        ['invoices.csv', { date_to: 'yesterday' }, 'date_to'],
        ['transactions.csv', { date_from: '2026-05-02', date_to: '2026-05-01' }, 'date_to'],
      ] as const) {
        expectInvalid(envelope(await exportCsv(file, query)), param);
      }
      expectError(envelope(await exportCsv('products.csv')), 740, 404);
      expectError(envelope(await exportCsv('clients')), 740, 404);
      // Several values for one filter (an array from the query string) are refused, not joined.
      expectInvalid(envelope(await t.app.inject({ method: 'GET', url: '/api/admin/export/orders.csv?status=active&status=canceled', headers: { authorization: `Basic ${Buffer.from(`admin:${t.adminToken}`).toString('base64')}` } })), 'status');
    });

    it('needs a staff login (401) and the list permission (403); client tokens are refused', async () => {
      expectError(envelope(await exportCsv('clients.csv', {}, null)), 201, 401);
      expectError(envelope(await exportCsv('clients.csv', {}, ['admin', 'wrong-token'])), 205, 401);
      expectError(envelope(await exportCsv('clients.csv', {}, ['client', ada.token])), 203, 401);
      const ordersOnly = await staffWith(t, ['order.view']);
      expect((await exportCsv('orders.csv', {}, ['admin', ordersOnly])).statusCode).toBe(200);
      for (const file of ['clients.csv', 'invoices.csv', 'transactions.csv']) expectError(envelope(await exportCsv(file, {}, ['admin', ordersOnly])), 403);
      const billing = await staffWith(t, ['invoice.view']);
      expect((await exportCsv('transactions.csv', {}, ['admin', billing])).statusCode).toBe(200);
      expectError(envelope(await exportCsv('orders.csv', {}, ['admin', billing])), 403);
    });

    it('takes a staff session only with its CSRF token (a form post carries it in the body)', async () => {
      const { ADMIN_EMAIL, ADMIN_PASSWORD } = await import('../../helpers/app.ts');
      const browser = await t.login('staff', ADMIN_EMAIL, ADMIN_PASSWORD, new Browser());
      const post = (body: string) =>
        t.app.inject({ method: 'POST', url: '/api/admin/export/clients.csv', payload: body, headers: { cookie: browser.cookieHeader(), 'content-type': 'application/x-www-form-urlencoded' } });
      expectError(envelope(await post('status=active')), 403);
      expectError(envelope(await post(`CSRFToken=wrong&status=active`)), 403);
      const ok = await post(`CSRFToken=${encodeURIComponent(browser.csrfToken)}&status=active&search=ada`);
      expect(ok.statusCode).toBe(200);
      expect(parseCsv(ok.body).slice(1).map((row) => row[1])).toEqual(['ada@example.com']);
    });

    it('reads a large export in batches and streams every row once', async () => {
      const total = 2_500;
      const now = new Date().toISOString();
      for (let start = 0; start < total; start += 250) {
        await t.services.db
          .insertInto('clients')
          .values(
            Array.from({ length: 250 }, (_, index) => ({
              email: `bulk${start + index}@example.com`,
              first_name: 'Bulk',
              last_name: String(start + index),
              status: 'active' as const,
              api_token_hash: `bulk-hash-${start + index}`,
              api_token_enc: 'x',
              created_at: now,
              updated_at: now,
            })),
          )
          .execute();
      }
      // The generator hands out one batch at a time: never more than `batchSize` rows per read.
      const chunks: string[] = [];
      for await (const chunk of t.services.csvExports.csv('clients', { search: 'bulk' }, 200)) chunks.push(chunk);
      expect(chunks).toHaveLength(1 + Math.ceil(total / 200));
      for (const chunk of chunks.slice(1)) expect(chunk.split('\r\n').length - 1).toBeLessThanOrEqual(200);
      // Stopping early reads no further batches.
      const partial = t.services.csvExports.csv('clients', { search: 'bulk' }, 200);
      await partial.next();
      await partial.next();
      await partial.return(undefined);
      expect((await partial.next()).done).toBe(true);

      // Over a real socket, with the default batch size: chunked, every bulk row exactly once, in order.
      const address = await t.app.listen({ host: '127.0.0.1', port: 0 });
      const response = await fetch(`${address}/api/admin/export/clients.csv?search=bulk`, { headers: { authorization: `Basic ${Buffer.from(`admin:${t.adminToken}`).toString('base64')}` } });
      expect(response.status).toBe(200);
      expect(response.headers.get('transfer-encoding')).toBe('chunked');
      const rows = parseCsv(await response.text()).slice(1);
      expect(rows).toHaveLength(total);
      expect(new Set(rows.map((row) => row[1])).size).toBe(total);
      expect(rows.map((row) => Number(row[3]))).toEqual(Array.from({ length: total }, (_, index) => index));
    });
  });
});
