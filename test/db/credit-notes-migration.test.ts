// Migration 035 on a database with refunds already recorded: each invoice refund gets its credit note, numbered from
// CN-1 in the order refunds were made, split into net and tax; a late payment's refund (`refund_of`) gets none; the
// sequence continues after them. SQLite, and PostgreSQL when TEST_DATABASE_URL is set.
import { Migrator, type Kysely, type Migration } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.ts';
import { migrations } from '../../src/db/migrations/index.ts';
import { freshPostgresDatabase } from '../helpers/app.ts';

const NOW = '2026-01-01T00:00:00Z';

describe('migration 035_credit_notes on a database with refunds', () => {
  const opened: Array<{ handle: DatabaseHandle; drop?: () => Promise<void> }> = [];
  afterAll(async () => {
    for (const { handle, drop } of opened) {
      await handle.close();
      await drop?.();
    }
  });

  it('gives each invoice refund already recorded its note, in order, and continues the numbers after them', async () => {
    const server = process.env.TEST_DATABASE_URL ?? '';
    const postgres = server === '' ? null : await freshPostgresDatabase(server);
    const handle = openDatabase(postgres?.url ?? 'sqlite::memory:');
    opened.push({ handle, ...(postgres !== null && { drop: postgres.drop }) });
    // Migrations take Kysely<any>; so does this test, which writes the tables as they were before 035.
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const db = handle.db as unknown as Kysely<any>;
    const migrator = new Migrator({ db, provider: { getMigrations: (): Promise<Record<string, Migration>> => Promise.resolve(migrations) } });
    expect((await migrator.migrateTo('032_credits')).error).toBeUndefined();
    const client = await db
      .insertInto('clients')
      .values({ email: 'old@refunds.example', first_name: 'Old', last_name: null, company: null, phone: null, address_1: null, address_2: null, city: null, state: null, postcode: null, country: null, currency: 'USD', status: 'active', api_token_hash: 'h-old', api_token_enc: 'x', password_hash: null, created_at: NOW, updated_at: NOW })
      .returning('id')
      .executeTakeFirstOrThrow();
    // 10.00 + 5.00 with 20 % tax: 18.00.
    const invoice = await db
      .insertInto('invoices')
      .values({ hash: 'h'.repeat(32), client_id: client.id, status: 'paid', currency: 'USD', subtotal: 1500, total: 1800, tax: 300, tax_rate: 20000, tax_name: 'VAT', discount: 0, number: 'INV-1', due_at: NOW, paid_at: NOW, created_at: NOW, updated_at: NOW })
      .returning('id')
      .executeTakeFirstOrThrow();
    for (const [title, total] of [['Plan', 1000], ['Seats', 500]] as const) {
      await db.insertInto('invoice_items').values({ invoice_id: invoice.id, order_id: null, task: 'usage', title, period: null, quantity: 1, price: total, total, executed: 1 }).execute();
    }
    const transaction = (fields: Record<string, unknown>) =>
      db.insertInto('transactions').values({ invoice_id: invoice.id, client_id: client.id, gateway_id: null, gateway: null, transaction_id: null, currency: 'USD', message: null, created_at: NOW, ...fields }).returning('id').executeTakeFirstOrThrow();
    await transaction({ type: 'payment', status: 'processed', amount: 1800 });
    const first = await transaction({ type: 'refund', status: 'refunded', amount: 600, created_at: '2026-01-02T00:00:00Z' });
    const late = await transaction({ type: 'payment', status: 'error', amount: 1800 });
    await transaction({ type: 'refund', status: 'refunded', amount: 1800, refund_of: late.id });
    const second = await transaction({ type: 'refund', status: 'refunded', amount: 1200, created_at: '2026-01-03T00:00:00Z' });

    const after = await migrator.migrateToLatest();
    expect(after.error).toBeUndefined();
    const notes = await db.selectFrom('credit_notes').selectAll().orderBy('id').execute();
    expect(notes.map((row) => [row.number, Number(row.transaction_id), Number(row.subtotal), Number(row.tax), Number(row.total), row.method, row.created_at])).toEqual([
      ['CN-1', first.id, 500, 100, 600, 'refund', '2026-01-02T00:00:00Z'],
      ['CN-2', second.id, 1000, 200, 1200, 'refund', '2026-01-03T00:00:00Z'],
    ]);
    const lines = await db.selectFrom('credit_note_lines').select(['credit_note_id', 'amount']).orderBy('id').execute();
    expect(lines.reduce((sum, line) => sum + Number(line.amount), 0)).toBe(1500);
    expect(Number((await db.selectFrom('credit_note_sequence').select('next_number').executeTakeFirstOrThrow()).next_number)).toBe(3);
  });
});
