// The revenue rollup of migration 041 (kept by triggers in the writes' own transactions) always equals the sums over
// the tables it rolls up: after inserts, after changes of status, date, amount, gateway and currency, after deletes,
// and after a change rolled back with its transaction. SQLite, and PostgreSQL when TEST_DATABASE_URL is set.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Kysely } from 'kysely';
import type { Database } from '../../../src/db/schema.ts';
import { inTransaction } from '../../../src/platform/transaction.ts';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { makeProduct } from '../../helpers/selling-fixtures.ts';
import { seedBook } from './seed.ts';

type Sums = Record<string, { paid: number; balance_paid: number; refunds: number; credit_notes: number }>;

/** The rollup, without its all-zero rows. */
async function rollup(db: Kysely<Database>): Promise<Sums> {
  const rows = await db.selectFrom('stats_revenue_days').selectAll().execute();
  const out: Sums = {};
  for (const row of rows) {
    const sums = { paid: Number(row.paid), balance_paid: Number(row.balance_paid), refunds: Number(row.refunds), credit_notes: Number(row.credit_notes) };
    if (Object.values(sums).some((value) => value !== 0)) out[`${row.day}|${row.currency}`] = sums;
  }
  return out;
}

/** The same sums read from the tables, row by row. */
async function direct(db: Kysely<Database>): Promise<Sums> {
  const out: Sums = {};
  const add = (at: string, currency: string, field: keyof Sums[string], amount: number): void => {
    const key = `${at.slice(0, 10)}|${currency}`;
    out[key] ??= { paid: 0, balance_paid: 0, refunds: 0, credit_notes: 0 };
    out[key][field] += amount;
  };
  for (const invoice of await db.selectFrom('invoices').selectAll().execute()) {
    if (invoice.paid_at !== null && (invoice.status === 'paid' || invoice.status === 'refunded')) add(invoice.paid_at, invoice.currency, 'paid', invoice.total);
  }
  for (const t of await db.selectFrom('transactions').selectAll().execute()) {
    if (t.type === 'payment' && t.gateway === 'credits' && (t.status === 'processed' || t.status === 'refunded')) add(t.created_at, t.currency, 'balance_paid', t.amount);
    if (t.type === 'refund' && t.status === 'refunded' && t.refund_of === null && t.gateway !== 'credits') add(t.created_at, t.currency, 'refunds', t.amount);
  }
  for (const note of await db.selectFrom('credit_notes').selectAll().execute()) if (note.method === 'balance') add(note.created_at, note.currency, 'credit_notes', note.total);
  for (const [key, sums] of Object.entries(out)) if (Object.values(sums).every((value) => value === 0)) delete out[key];
  return out;
}

describe('the revenue rollup', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
    const clients = [(await t.createClient()).id, (await t.createClient()).id, (await t.createClient()).id];
    await seedBook(t.services.db, clients, [await makeProduct(t)], Date.now(), 41);
  });
  afterAll(async () => {
    await t.close();
  });

  it('equals the tables’ sums after inserts', async () => {
    const sums = await rollup(t.services.db);
    expect(Object.keys(sums).length).toBeGreaterThan(50);
    expect(sums).toEqual(await direct(t.services.db));
  });

  it('follows changes of status, date, amount, gateway and currency, and deletes', async () => {
    const { db } = t.services;
    const ids = (await db.selectFrom('invoices').select('id').orderBy('id').execute()).map((row) => row.id);
    await db.updateTable('invoices').set({ status: 'refunded' }).where('id', 'in', ids.slice(0, 20)).where('status', '=', 'paid').execute();
    await db.updateTable('invoices').set({ paid_at: '2024-02-29T12:00:00Z' }).where('id', 'in', ids.slice(20, 40)).where('paid_at', 'is not', null).execute();
    await db.updateTable('invoices').set({ total: sql`total + 17`, currency: sql`case when currency = 'USD' then 'EUR' else 'USD' end` }).where('id', 'in', ids.slice(40, 60)).execute();
    await db.updateTable('invoices').set({ status: 'unpaid', paid_at: null }).where('id', 'in', ids.slice(60, 80)).execute();
    await db.updateTable('transactions').set({ gateway: 'credits' }).where('type', '=', 'refund').where('id', '<', 1_000_000).where('amount', '<', 5000).execute();
    await db.updateTable('transactions').set({ status: 'error' }).where('type', '=', 'payment').where('gateway', '=', 'credits').where('amount', '>', 10_000).execute();
    await db.updateTable('transactions').set({ refund_of: 3 }).where('type', '=', 'refund').where('amount', '>', 15_000).execute();
    await db.updateTable('credit_notes').set({ method: 'refund' }).where('total', '<', 3000).execute();
    await db.updateTable('credit_notes').set({ created_at: '2025-01-01T00:00:00Z', total: 1 }).where('total', '>', 12_000).execute();
    await db.deleteFrom('credit_notes').where('total', '>', 8000).execute();
    await db.deleteFrom('transactions').where('amount', '>', 18_000).execute();
    await db.deleteFrom('credit_notes').where('invoice_id', 'in', ids.slice(80, 100)).execute();
    await db.deleteFrom('transactions').where('invoice_id', 'in', ids.slice(80, 100)).execute();
    await db.deleteFrom('invoice_items').where('invoice_id', 'in', ids.slice(80, 100)).execute();
    await db.deleteFrom('invoices').where('id', 'in', ids.slice(80, 100)).execute();
    expect(await rollup(db)).toEqual(await direct(db));
  });

  it('rolls back with the change that moved it', async () => {
    const { db } = t.services;
    const before = await rollup(db);
    await expect(
      inTransaction(db, async (trx) => {
        await trx.updateTable('invoices').set({ status: 'paid', paid_at: '2026-01-15T10:00:00Z' }).where('status', '=', 'unpaid').execute();
        throw new Error('failure after the change');
      }),
    ).rejects.toThrow('failure after the change');
    expect(await rollup(db)).toEqual(before);
    expect(before).toEqual(await direct(db));
  });
});
