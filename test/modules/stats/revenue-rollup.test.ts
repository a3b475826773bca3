// The revenue rollup of migrations 041 and 052 (kept by triggers in the writes' own transactions) always equals the
// sums over the tables it rolls up — the usage and top-up lines of paid invoices included: after inserts, after changes
// of status, date, amount, gateway, currency and of a line's task, total and invoice, after deletes (an invoice's
// lines going with it), and after a change rolled back with its transaction. SQLite, and PostgreSQL when TEST_DATABASE_URL is set.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Kysely } from 'kysely';
import type { Database } from '../../../src/db/schema.ts';
import { inTransaction } from '../../../src/platform/transaction.ts';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { makeProduct } from '../../helpers/selling-fixtures.ts';
import { seedBook } from './seed.ts';

type Sums = Record<string, { paid: number; balance_paid: number; refunds: number; credit_notes: number; usage: number; top_ups: number }>;

/** The rollup, without its all-zero rows. */
async function rollup(db: Kysely<Database>): Promise<Sums> {
  const rows = await db.selectFrom('stats_revenue_days').selectAll().execute();
  const out: Sums = {};
  for (const row of rows) {
    const sums = {
      paid: Number(row.paid),
      balance_paid: Number(row.balance_paid),
      refunds: Number(row.refunds),
      credit_notes: Number(row.credit_notes),
      usage: Number(row.usage),
      top_ups: Number(row.top_ups),
    };
    if (Object.values(sums).some((value) => value !== 0)) out[`${row.day}|${row.currency}|${row.rate}|${row.base}`] = sums;
  }
  return out;
}

/** The same sums read from the tables, row by row. */
async function direct(db: Kysely<Database>): Promise<Sums> {
  const out: Sums = {};
  const invoices = await db.selectFrom('invoices').selectAll().execute();
  const byId = new Map(invoices.map((invoice) => [invoice.id, invoice]));
  // Each amount under its invoice's stored rate and base ('1' and the row's own currency without them).
  const add = (at: string, currency: string, field: keyof Sums[string], amount: number, invoiceId: number): void => {
    const invoice = byId.get(invoiceId);
    const key = `${at.slice(0, 10)}|${currency}|${invoice?.currency_rate ?? '1'}|${invoice?.currency_base ?? currency}`;
    out[key] ??= { paid: 0, balance_paid: 0, refunds: 0, credit_notes: 0, usage: 0, top_ups: 0 };
    out[key][field] += amount;
  };
  const paidInvoices = new Map(invoices.filter((invoice) => invoice.paid_at !== null && (invoice.status === 'paid' || invoice.status === 'refunded')).map((invoice) => [invoice.id, invoice]));
  for (const invoice of paidInvoices.values()) add(invoice.paid_at!, invoice.currency, 'paid', invoice.total, invoice.id);
  for (const line of await db.selectFrom('invoice_items').selectAll().execute()) {
    const invoice = paidInvoices.get(line.invoice_id);
    if (invoice !== undefined && line.task === 'usage') add(invoice.paid_at!, invoice.currency, 'usage', line.total, invoice.id);
    if (invoice !== undefined && line.task === 'deposit') add(invoice.paid_at!, invoice.currency, 'top_ups', line.total, invoice.id);
  }
  for (const t of await db.selectFrom('transactions').selectAll().execute()) {
    if (t.type === 'payment' && t.gateway === 'credits' && (t.status === 'processed' || t.status === 'refunded')) add(t.created_at, t.currency, 'balance_paid', t.amount, t.invoice_id);
    if (t.type === 'refund' && t.status === 'refunded' && t.refund_of === null && t.gateway !== 'credits') add(t.created_at, t.currency, 'refunds', t.amount, t.invoice_id);
  }
  for (const note of await db.selectFrom('credit_notes').selectAll().execute()) if (note.method === 'balance') add(note.created_at, note.currency, 'credit_notes', note.total, note.invoice_id);
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
    expect(Object.values(sums).filter((day) => day.usage > 0).length).toBeGreaterThan(10);
    expect(Object.values(sums).filter((day) => day.top_ups > 0).length).toBeGreaterThan(10);
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

  it('follows the usage and top-up lines: new lines, a changed task, total or invoice, deletes, and an invoice deleted with its lines', async () => {
    const { db } = t.services;
    const ids = (await db.selectFrom('invoices').select('id').orderBy('id').execute()).map((row) => row.id);
    // Ten slices of the invoices (each at least one), one per kind of change.
    const slice = (k: number): number[] => ids.slice(Math.floor((ids.length * k) / 10), Math.max(Math.floor((ids.length * (k + 1)) / 10), Math.floor((ids.length * k) / 10) + 1));
    const line = { order_id: null, title: 'line', period: null, quantity: 1, executed: 1, product_id: null, priced_until: null, covers_until: null };
    for (const [k, id] of slice(0).entries()) {
      const total = 100 + k * 37;
      await db.insertInto('invoice_items').values({ ...line, invoice_id: id, task: k % 3 === 0 ? 'renew' : k % 3 === 1 ? 'usage' : 'deposit', price: total, total }).execute();
    }
    await db.updateTable('invoice_items').set({ task: 'deposit' }).where('task', '=', 'usage').where('invoice_id', 'in', slice(1)).execute();
    await db.updateTable('invoice_items').set({ task: 'usage' }).where('task', '=', 'renew').where('invoice_id', 'in', slice(2)).execute();
    await db.updateTable('invoice_items').set({ task: 'activate' }).where('task', '=', 'deposit').where('invoice_id', 'in', slice(3)).execute();
    await db.updateTable('invoice_items').set({ total: sql`total * 2 + 3` }).where('invoice_id', 'in', slice(4)).execute();
    await db.updateTable('invoice_items').set({ invoice_id: ids[0]! }).where('invoice_id', 'in', slice(5)).execute();
    await db.deleteFrom('invoice_items').where('task', 'in', ['usage', 'deposit']).where('invoice_id', 'in', slice(6)).execute();
    // Lines of an invoice that then changes: paid, unpaid, another day, another currency.
    await db.updateTable('invoices').set({ status: 'paid', paid_at: '2025-06-30T23:59:59Z' }).where('id', 'in', slice(7)).execute();
    await db.updateTable('invoices').set({ status: 'unpaid', paid_at: null }).where('id', 'in', slice(8)).execute();
    await db.updateTable('invoices').set({ paid_at: '2024-12-31T00:00:00Z', currency: 'USD' }).where('id', 'in', slice(9)).where('paid_at', 'is not', null).execute();
    expect(await rollup(db)).toEqual(await direct(db));
    // An invoice deleted with its lines still on it (the lines go by the foreign key's cascade where it is enforced).
    const withLines = await db.selectFrom('invoice_items').select('invoice_id').where('task', 'in', ['usage', 'deposit']).where('invoice_id', '<>', ids[0]!).execute();
    const doomed = [...new Set(withLines.map((row) => row.invoice_id))].slice(-5);
    expect(doomed.length).toBeGreaterThan(0);
    await db.deleteFrom('credit_notes').where('invoice_id', 'in', doomed).execute();
    await db.deleteFrom('transactions').where('invoice_id', 'in', doomed).execute();
    await db.deleteFrom('invoices').where('id', 'in', doomed).execute();
    await db.deleteFrom('invoice_items').where('invoice_id', 'in', doomed).execute();
    expect(await rollup(db)).toEqual(await direct(db));
  });

  it('rolls back with the change that moved it', async () => {
    const { db } = t.services;
    const before = await rollup(db);
    await expect(
      inTransaction(db, async (trx) => {
        await trx.updateTable('invoices').set({ status: 'paid', paid_at: '2026-01-15T10:00:00Z' }).where('status', '=', 'unpaid').execute();
        await trx.updateTable('invoice_items').set({ task: 'usage', total: sql`total + 5` }).where('task', '<>', 'usage').execute();
        await trx.deleteFrom('invoice_items').where('task', '=', 'deposit').execute();
        throw new Error('failure after the change');
      }),
    ).rejects.toThrow('failure after the change');
    expect(await rollup(db)).toEqual(before);
    expect(before).toEqual(await direct(db));
  });
});
