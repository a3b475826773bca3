// Lists at a million rows, third pass (migration 016_search_speed): totals kept by triggers, exact in every process
// and under concurrent writes; searches of one or two characters matched as "starts with"; long fragments of common
// trigrams answered from their rarest stretch; later pages read through their ids.
import { Migrator, sql, type Kysely, type Migration } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.ts';
import { migrations } from '../../src/db/migrations/index.ts';
import { rareStretch } from '../../src/db/search.ts';
import { createTestApp, freshPostgresDatabase, type TestApp } from '../helpers/app.ts';
import { makeProduct } from '../helpers/selling-fixtures.ts';

const NOW = '2026-01-01T00:00:00Z';
type Table = 'clients' | 'orders' | 'invoices';

/** The true counts of `table` by status, from the table itself. */
async function countsOf(t: TestApp, table: Table): Promise<Record<string, number>> {
  const rows = await sql<{ status: string; n: number | string }>`select status, count(*) as n from ${sql.table(table)} group by status`.execute(t.services.db);
  return Object.fromEntries(rows.rows.map((row) => [row.status, Number(row.n)]));
}

async function listTotal(t: TestApp, table: Table, params: Record<string, unknown> = {}): Promise<number> {
  const reply = await t.admin(`${table.slice(0, -1)}/get_list`, { per_page: 1, ...params });
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  expect(reply.result).not.toHaveProperty('total_capped');
  return (reply.result as { total: number }).total;
}

/** Every list's unfiltered and per-status totals equal the tables' own counts. */
async function expectExactTotals(t: TestApp): Promise<void> {
  for (const table of ['clients', 'orders', 'invoices'] as const) {
    const counts = await countsOf(t, table);
    const all = Object.values(counts).reduce((sum, n) => sum + n, 0);
    expect(await listTotal(t, table), `${table}, all`).toBe(all);
    for (const [status, n] of Object.entries(counts)) expect(await listTotal(t, table, { status }), `${table}, ${status}`).toBe(n);
  }
}

function clientRow(email: string, status: 'active' | 'suspended' | 'canceled' = 'active', firstName = 'Bulk') {
  return { email, first_name: firstName, last_name: null, company: null, phone: null, address_1: null, address_2: null, city: null, state: null, postcode: null, country: null, currency: 'USD', status, api_token_hash: `h-${email}`, api_token_enc: 'x', password_hash: null, created_at: NOW, updated_at: NOW };
}

describe('list totals kept by triggers', () => {
  let t: TestApp;
  let product: number;
  beforeAll(async () => {
    t = await createTestApp();
    product = await makeProduct(t, { title: 'Counted plan' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('follow writes this process’s services never saw (another process, a script), at once', async () => {
    await expectExactTotals(t);
    const before = await listTotal(t, 'clients');
    const suspendedBefore = await listTotal(t, 'clients', { status: 'suspended' });
    // Straight to the tables, as another worker or a maintenance script would.
    const db = t.services.db;
    const added = await db.insertInto('clients').values([clientRow('outside-1@count.example'), clientRow('outside-2@count.example', 'suspended')]).returning('id').execute();
    expect(await listTotal(t, 'clients')).toBe(before + 2);
    expect(await listTotal(t, 'clients', { status: 'suspended' })).toBe(suspendedBefore + 1);
    await db.updateTable('clients').set({ status: 'suspended' }).where('id', '=', added[0]!.id).execute();
    expect(await listTotal(t, 'clients', { status: 'suspended' })).toBe(suspendedBefore + 2);
    expect(await listTotal(t, 'clients', { status: 'active' })).toBe((await countsOf(t, 'clients')).active ?? 0);
    // An update that leaves the status alone changes no count.
    await db.updateTable('clients').set({ first_name: 'Renamed' }).where('id', 'in', added.map((row) => row.id)).execute();
    expect(await listTotal(t, 'clients', { status: 'suspended' })).toBe(suspendedBefore + 2);
    const orders = await db
      .insertInto('orders')
      .values(added.map(({ id }) => ({ client_id: id, product_id: product, title: 'Counted plan', type: 'custom', period: '1M', quantity: 1, price: 1000, currency: 'USD', status: 'active' as const, config: '{}', created_at: NOW, updated_at: NOW })))
      .returning('id')
      .execute();
    await db.insertInto('invoices').values(added.map(({ id }) => ({ hash: `count-${id}`, number: null, client_id: id, status: 'unpaid' as const, currency: 'USD', subtotal: 1000, total: 1000, created_at: NOW, updated_at: NOW }))).execute();
    await expectExactTotals(t);
    await db.deleteFrom('invoices').where('client_id', 'in', added.map((row) => row.id)).execute();
    await db.deleteFrom('orders').where('id', 'in', orders.map((row) => row.id)).execute();
    await db.deleteFrom('clients').where('id', 'in', added.map((row) => row.id)).execute();
    expect(await listTotal(t, 'clients')).toBe(before);
    await expectExactTotals(t);
  });

  it('stay exact under concurrent creates, status changes and deletes through the API and in bulk', async () => {
    const made = await Promise.all(Array.from({ length: 12 }, (_, i) => t.createClient({ email: `conc-${i}@count.example` })));
    const db = t.services.db;
    const work: Array<Promise<unknown>> = [];
    for (const [i, client] of made.entries()) {
      if (i % 3 === 0) work.push(t.admin('client/update', { id: client.id, status: 'suspended' }));
      else if (i % 3 === 1) work.push(t.admin('client/delete', { id: client.id }));
      else work.push(t.admin('client/update', { id: client.id, status: 'canceled' }).then(() => t.admin('client/update', { id: client.id, status: 'active' })));
      // Bulk statements and readers (which fold PostgreSQL's delta rows) interleaved with the API calls.
      work.push(db.insertInto('clients').values([clientRow(`bulk-${i}-a@count.example`, 'suspended'), clientRow(`bulk-${i}-b@count.example`)]).execute());
      work.push(listTotal(t, 'clients'));
    }
    // More write statements than a reader lets pile up before it folds them (64), each with a reader beside it.
    for (let i = 0; i < 80; i++) {
      work.push(db.insertInto('clients').values(clientRow(`many-${i}@count.example`, i % 2 === 0 ? 'active' : 'canceled')).execute());
      work.push(listTotal(t, 'clients'));
    }
    await Promise.all(work);
    await Promise.all([
      db.deleteFrom('clients').where('email', 'like', 'many-%').where('status', '=', 'canceled').execute(),
      db.updateTable('clients').set({ status: 'suspended' }).where('email', 'like', 'bulk-%-b@count.example').execute(),
      listTotal(t, 'clients'),
      listTotal(t, 'clients', { status: 'suspended' }),
    ]);
    await expectExactTotals(t);
    expect((await countsOf(t, 'clients')).suspended).toBeGreaterThanOrEqual(4 + 24);
  });
});

describe('migration 016_search_speed on a database with data', () => {
  const opened: Array<{ handle: DatabaseHandle; drop?: () => Promise<void> }> = [];
  afterAll(async () => {
    for (const { handle, drop } of opened) {
      await handle.close();
      await drop?.();
    }
  });

  it('starts the counts from the rows already there, then keeps them', async () => {
    const server = process.env.TEST_DATABASE_URL ?? '';
    const postgres = server === '' ? null : await freshPostgresDatabase(server);
    const handle = openDatabase(postgres?.url ?? 'sqlite::memory:');
    opened.push({ handle, ...(postgres !== null && { drop: postgres.drop }) });
    // Migrations take Kysely<any>; so does this test, which writes the tables as they were before 016.
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const db = handle.db as unknown as Kysely<any>;
    const migrator = new Migrator({ db, provider: { getMigrations: (): Promise<Record<string, Migration>> => Promise.resolve(migrations) } });
    expect((await migrator.migrateTo('015_search_more')).error).toBeUndefined();
    const statuses = ['active', 'active', 'suspended', 'canceled', 'active'];
    for (const [i, status] of statuses.entries()) await db.insertInto('clients').values(clientRow(`old-${i}@count.example`, status as 'active')).execute();

    const after = await migrator.migrateToLatest();
    expect(after.error).toBeUndefined();
    expect(after.results?.map((result) => [result.migrationName, result.status])).toContainEqual(['016_search_speed', 'Success']);
    const counts = async () => {
      const rows = await sql<{ status: string; n: number | string }>`select status, sum(n) as n from list_counts where table_name = 'clients' group by status order by status`.execute(db);
      return Object.fromEntries(rows.rows.map((row) => [row.status, Number(row.n)]));
    };
    expect(await counts()).toEqual({ active: 3, canceled: 1, suspended: 1 });
    await db.updateTable('clients').set({ status: 'suspended' }).where('email', '=', 'old-0@count.example').execute();
    await db.deleteFrom('clients').where('email', '=', 'old-3@count.example').execute();
    expect(await counts()).toEqual({ active: 2, canceled: 0, suspended: 2 });
  });
});

describe('searches of one or two characters: "starts with"', () => {
  let t: TestApp;
  const ids = { zelda: 0, lizeth: 0, mark: 0 };
  const orders = { zelda: 0, lizeth: 0 };
  const invoices = { zelda: 0, lizeth: 0 };
  beforeAll(async () => {
    t = await createTestApp();
    const product = await makeProduct(t, { title: 'Qy plan' });
    const other = await makeProduct(t, { title: 'Sofa qy plan' });
    ids.zelda = (await t.createClient({ email: 'zelda@short.example', first_name: 'Zelda', last_name: 'Hyrule', company: 'Xqoria Ltd' })).id;
    ids.lizeth = (await t.createClient({ email: 'lizeth@short.example', first_name: 'Lizeth', last_name: 'Brazeau', company: 'Axq Ltd' })).id;
    ids.mark = (await t.createClient({ email: 'xq_mark@short.example', first_name: 'Mark', last_name: 'Zeller', company: null })).id;
    for (const [name, clientId, productId] of [['zelda', ids.zelda, product], ['lizeth', ids.lizeth, other]] as const) {
      const reply = await t.admin('order/create', { client_id: clientId, product_id: productId, period: '1M', invoice_option: 'issue-invoice' });
      expect(reply.body.error).toBeNull();
      orders[name] = reply.result as number;
      invoices[name] = ((await t.admin('order/get', { id: orders[name] })).result as { unpaid_invoice_id: number }).unpaid_invoice_id;
    }
  });
  afterAll(async () => {
    await t.close();
  });

  const found = async (what: string, params: Record<string, unknown>): Promise<number[]> => {
    const reply = await t.admin(`${what}/get_list`, { per_page: 500, ...params });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    return (reply.result as { list: Array<{ id: number }> }).list.map((row) => row.id).toSorted((a, b) => a - b);
  };

  it('clients: a name, e-mail or company that starts with the text, case-insensitively; not one that only contains it', async () => {
    expect(await found('client', { search: 'ze' })).toEqual([ids.zelda, ids.mark].toSorted((a, b) => a - b));
    expect(await found('client', { search: 'ZE' })).toEqual([ids.zelda, ids.mark].toSorted((a, b) => a - b));
    expect(await found('client', { name: 'li' })).toEqual([ids.lizeth]);
    expect(await found('client', { name: 'br' })).toEqual([ids.lizeth]);
    expect(await found('client', { company: 'xq' })).toEqual([ids.zelda]);
    expect(await found('client', { email: 'xq' })).toEqual([ids.mark]);
    expect(await found('client', { search: 'xq' })).toEqual([ids.zelda, ids.mark].toSorted((a, b) => a - b));
    // Three characters and more: "contains" again.
    expect(await found('client', { search: 'zel' })).toEqual([ids.zelda, ids.mark].toSorted((a, b) => a - b));
    expect(await found('client', { search: 'aze' })).toEqual([ids.lizeth]);
    // Literal: an underscore is not a wildcard.
    expect(await found('client', { email: 'x_' })).toEqual([]);
    expect(await found('client', { search: 'q' })).toEqual([]);
  });

  it('orders and invoices: the client’s name or e-mail, the title or the number starting with the text', async () => {
    expect(await found('order', { search: 'zE' })).toEqual([orders.zelda]);
    expect(await found('order', { search: 'qy' })).toEqual([orders.zelda]);
    expect(await found('order', { search: 'so' })).toEqual([orders.lizeth]);
    expect(await found('order', { search: 'fa' })).toEqual([]);
    expect(await found('invoice', { search: 'hy' })).toEqual([invoices.zelda]);
    expect(await found('invoice', { search: 'li' })).toEqual([invoices.lizeth]);
    expect(await found('invoice', { search: 'az' })).toEqual([]);
  });
});

describe('long fragments made of common trigrams', () => {
  it('are looked up by their rarest stretch in the sample', () => {
    const sample = Array.from({ length: 200 }, (_, i) => `user${i * 7919}@mail${i % 97}.example.com`);
    const stretch = rareStretch(sample, 'mail42.example');
    expect('mail42.example').toContain(stretch);
    expect(stretch).toContain('42');
    expect(stretch).not.toContain('exa');
    // Nothing rarer than the rest: the whole text; three characters: themselves.
    expect(rareStretch([], 'meyer')).toBe('meyer');
    expect(rareStretch(sample, 'abc')).toBe('abc');
  });

  describe('over HTTP', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await createTestApp();
      const rows = Array.from({ length: 140 }, (_, i) => clientRow(`user${i}@mail${i % 7}.example.com`, 'active', i % 2 === 0 ? 'Meyer' : `Grace${i}`));
      await t.services.db.insertInto('clients').values(rows).execute();
    });
    afterAll(async () => {
      await t.close();
    });

    it('find every match of the whole text, and only those', async () => {
      const emails = async (params: Record<string, unknown>) => {
        const reply = await t.admin('client/get_list', { per_page: 500, ...params });
        return (reply.result as { list: Array<{ email: string }> }).list.map((row) => row.email).toSorted();
      };
      const expected = Array.from({ length: 140 }, (_, i) => i).filter((i) => i % 7 === 3).map((i) => `user${i}@mail3.example.com`).toSorted();
      expect(await emails({ email: 'mail3.example' })).toEqual(expected);
      expect(await emails({ search: '@MAIL3.EXAMPLE.COM' })).toEqual(expected);
      expect(await emails({ search: 'user13@mail6.example' })).toEqual(['user13@mail6.example.com']);
      expect(await emails({ email: 'mail3.example.org' })).toEqual([]);
    });
  });
});

describe('later pages', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
    const product = await makeProduct(t, { title: 'Paged plan' });
    const at = (i: number) => new Date(Date.UTC(2025, 0, 1) + (i % 5) * 86_400_000).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const clients = await t.services.db
      .insertInto('clients')
      .values(Array.from({ length: 45 }, (_, i) => ({ ...clientRow(`paged${i}@pages.example`), created_at: at(i) })))
      .returning('id')
      .execute();
    await t.services.db
      .insertInto('orders')
      .values(clients.map(({ id }, i) => ({ client_id: id, product_id: product, title: 'Paged plan', type: 'custom', period: '1M', quantity: 1, price: 1000, currency: 'USD', status: 'active' as const, config: '{}', created_at: at(i), updated_at: at(i) })))
      .execute();
  });
  afterAll(async () => {
    await t.close();
  });

  it.each([
    ['client', {}],
    ['client', { status: 'active', date_from: '2025-01-02' }],
    ['order', {}],
    ['order', { date_from: '2025-01-02', date_to: '2025-01-04' }],
  ])('%s/get_list %j: page after page are the slices of the whole list, in its order', async (what, filters) => {
    const whole = ((await t.admin(`${what}/get_list`, { ...filters, per_page: 500 })).result as { list: Array<{ id: number }>; total: number });
    expect(whole.list.length).toBe(whole.total);
    for (const page of [2, 3, 4]) {
      const reply = (await t.admin(`${what}/get_list`, { ...filters, per_page: 10, page })).result as { list: Array<{ id: number }>; total: number };
      expect(reply.total).toBe(whole.total);
      expect(reply.list.map((row) => row.id)).toEqual(whole.list.slice((page - 1) * 10, page * 10).map((row) => row.id));
    }
  });
});
