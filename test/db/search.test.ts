// Client search backed by the trigram indexes of migration 010 (SQLite FTS5 / PostgreSQL pg_trgm): results follow
// every insert, update and delete; the queries use the indexes; the unfiltered total follows this process's writes.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientsContaining, isSqlite } from '../../src/db/search.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';

describe('client search at scale', () => {
  let t: TestApp;
  const list = async (params: Record<string, unknown>) => {
    const reply = await t.admin('client/get_list', { per_page: 100, ...params });
    expect(reply.status).toBe(200);
    return reply.result as { total: number; list: Array<{ id: number; email: string; first_name: string }> };
  };

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('finds clients by fragments of e-mail, name and company, and follows updates and deletes', async () => {
    const zelda = await t.createClient({ email: 'zelda.quirk@hyrule.example', first_name: 'Zelda', last_name: 'Quirkfield', company: 'Triforce Works' });
    await t.createClient({ email: 'link@hyrule.example', first_name: 'Link', last_name: 'Hero', company: null });
    expect((await list({ search: 'quirk' })).list.map((c) => c.id)).toEqual([zelda.id]);
    expect((await list({ email: 'zelda.q' })).total).toBe(1);
    expect((await list({ name: 'QUIRKF' })).total).toBe(1);
    expect((await list({ company: 'iforce w' })).total).toBe(1);
    expect((await list({ search: 'hyrule.example' })).total).toBe(2);
    // Two characters: no trigram, the scan still answers.
    expect((await list({ name: 'ze' })).total).toBe(1);
    // FTS syntax typed by staff is plain text.
    expect((await list({ search: '"quirk" OR link' })).total).toBe(0);
    expect((await list({ search: 'qu*' })).total).toBe(0);

    await t.admin('client/update', { id: zelda.id, last_name: 'Harkinian', email: 'zelda@castle.example' });
    expect((await list({ search: 'quirk' })).total).toBe(0);
    expect((await list({ name: 'harkin' })).list.map((c) => c.id)).toEqual([zelda.id]);
    expect((await list({ email: 'castle.ex' })).total).toBe(1);

    expect((await t.admin('client/delete', { id: zelda.id })).status).toBe(200);
    expect((await list({ name: 'harkin' })).total).toBe(0);
  });

  it('counts the unfiltered and per-status totals once, and again right after this process adds, removes or re-statuses a client', async () => {
    const before = (await list({})).total;
    const added = await t.createClient();
    expect((await list({})).total).toBe(before + 1);
    expect((await list({ page: 2, per_page: 1 })).total).toBe(before + 1);
    const suspended = (await list({ status: 'suspended' })).total;
    await t.admin('client/update', { id: added.id, status: 'suspended' });
    expect((await list({ status: 'suspended' })).total).toBe(suspended + 1);
    await t.admin('client/update', { id: added.id, status: 'active' });
    expect((await list({ status: 'suspended' })).total).toBe(suspended);
    expect((await t.admin('client/delete', { id: added.id })).status).toBe(200);
    expect((await list({})).total).toBe(before);
  });

  it('answers text filters from the trigram index and status filters from (status, created_at, id)', async () => {
    const db = t.services.db;
    if (isSqlite(db)) {
      const plan = async (query: ReturnType<typeof sql>) => (await sql<{ detail: string }>`explain query plan ${query}`.execute(db)).rows.map((r) => r.detail).join('\n');
      const search = await plan(sql`select id from clients where ${clientsContaining(['email', 'first_name'], 'quirk')} order by created_at desc, id desc limit 20`);
      expect(search).toMatch(/VIRTUAL TABLE INDEX \d+:M/);
      expect(await plan(sql`select id from clients where status = 'suspended' order by created_at desc, id desc limit 20`)).toContain('clients_status_created');
      expect(await plan(sql`select count(*) from orders where status = 'suspended'`)).toMatch(/orders_status_(id|expires)/);
      expect(await plan(sql`select id from invoices where status = 'unpaid' order by id desc limit 20`)).toContain('invoices_status_id');
    } else {
      // On a table this small PostgreSQL would scan whatever the indexes; forbid the scan to see what it can use.
      const plan = (text: string) =>
        db.transaction().execute(async (trx) => {
          await sql`set local enable_seqscan = off`.execute(trx);
          return (await sql<{ 'QUERY PLAN': string }>`explain ${sql.raw(text)}`.execute(trx)).rows.map((r) => r['QUERY PLAN']).join('\n');
        });
      expect(await plan(`select id from clients where email like '%quirk%' escape '\\'`)).toContain('clients_email_trgm');
      expect(await plan(`select id from clients where lower(first_name) like '%quirk%' escape '\\'`)).toContain('clients_first_name_trgm');
      expect(await plan(`select id from clients where lower(company) like '%quirk%' escape '\\'`)).toContain('clients_company_trgm');
      expect(await plan(`select id from clients where status = 'suspended' order by created_at desc, id desc limit 20`)).toContain('clients_status_created');
      expect(await plan(`select id from invoices where status = 'unpaid' order by id desc limit 20`)).toContain('invoices_status_id');
    }
  });
});
