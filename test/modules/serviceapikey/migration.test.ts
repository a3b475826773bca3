// Migration 014 (several keys per order) on a database that already holds keys and usage: SQLite rebuilds `api_keys`
// (it cannot drop a column's UNIQUE constraint), PostgreSQL drops the constraint. Keys, ids and usage must survive,
// foreign keys must still hold (and be switched on again on SQLite), and an order may then hold a second key.
import { Migrator, sql, type Kysely, type Migration } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../../../src/db/database.ts';
import { migrations } from '../../../src/db/migrations/index.ts';
import { freshPostgresDatabase } from '../../helpers/app.ts';

const PG = process.env.TEST_DATABASE_URL ?? '';
const NOW = '2026-11-22T10:00:00Z';

function migratorOf(db: Kysely<unknown>): Migrator {
  return new Migrator({ db, provider: { getMigrations: (): Promise<Record<string, Migration>> => Promise.resolve(migrations) } });
}

describe('migration 014_keys on a database with keys', () => {
  const opened: Array<{ handle: DatabaseHandle; drop?: () => Promise<void> }> = [];
  afterAll(async () => {
    for (const { handle, drop } of opened) {
      await handle.close();
      await drop?.();
    }
  });

  it('keeps keys, ids and usage, keeps foreign keys on, and lets an order hold a second key', async () => {
    const postgres = PG === '' ? null : await freshPostgresDatabase(PG);
    const handle = openDatabase(postgres?.url ?? 'sqlite::memory:');
    opened.push({ handle, ...(postgres !== null && { drop: postgres.drop }) });
    // Migrations take Kysely<any>; so does this test, which writes tables as they were before 014.
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const db = handle.db as unknown as Kysely<any>;
    const before = await migratorOf(db).migrateTo('012_webhooks');
    expect(before.error).toBeUndefined();

    await sql`INSERT INTO clients (email, first_name, status, api_token_hash, api_token_enc, created_at, updated_at) VALUES ('a@example.com', 'A', 'active', 'h1', 'e1', ${NOW}, ${NOW})`.execute(db);
    await sql`INSERT INTO products (title, slug, type, status, setup, pricing, created_at, updated_at) VALUES ('P', 'p', 'apikey', 'enabled', 'after_payment', '{}', ${NOW}, ${NOW})`.execute(db);
    for (const id of [1, 2]) {
      await sql`INSERT INTO orders (id, client_id, product_id, title, type, quantity, price, currency, status, created_at, updated_at) VALUES (${id}, 1, 1, 'P', 'apikey', 1, 100, 'USD', 'active', ${NOW}, ${NOW})`.execute(db);
    }
    await sql`INSERT INTO api_keys (id, order_id, client_id, key_hash, key_enc, valid, options, config, created_at, updated_at) VALUES (7, 1, 1, 'hash-a', 'enc-a', 1, '{}', '{"tier":"pro"}', ${NOW}, ${NOW})`.execute(db);
    await sql`INSERT INTO api_keys (id, order_id, client_id, key_hash, key_enc, valid, options, config, created_at, updated_at) VALUES (9, 2, 1, 'hash-b', 'enc-b', 0, '{}', '{}', ${NOW}, ${NOW})`.execute(db);
    await sql`INSERT INTO api_key_usage (api_key_id, day, count) VALUES (7, '2026-11-21', 5), (7, '2026-11-22', 3), (9, '2026-11-22', 1)`.execute(db);
    // Before 014 an order holds one key.
    await expect(sql`INSERT INTO api_keys (order_id, client_id, key_hash, key_enc, valid, options, created_at, updated_at) VALUES (1, 1, 'hash-c', 'enc-c', 1, '{}', ${NOW}, ${NOW})`.execute(db)).rejects.toThrow();

    const after = await migratorOf(db).migrateToLatest();
    expect(after.error).toBeUndefined();
    expect(after.results?.map((result) => [result.migrationName, result.status])).toContainEqual(['014_keys', 'Success']);

    const keys = await db.selectFrom('api_keys').select(['id', 'order_id', 'key_hash', 'valid', 'config', 'name', 'grace_hash', 'deleted_at']).orderBy('id').execute();
    expect(keys).toEqual([
      { id: 7, order_id: 1, key_hash: 'hash-a', valid: 1, config: '{"tier":"pro"}', name: null, grace_hash: null, deleted_at: null },
      { id: 9, order_id: 2, key_hash: 'hash-b', valid: 0, config: '{}', name: null, grace_hash: null, deleted_at: null },
    ]);
    const usage = await db.selectFrom('api_key_usage').select(['api_key_id', 'day', 'count']).orderBy('api_key_id').orderBy('day').execute();
    expect(usage).toEqual([
      { api_key_id: 7, day: '2026-11-21', count: 5 },
      { api_key_id: 7, day: '2026-11-22', count: 3 },
      { api_key_id: 9, day: '2026-11-22', count: 1 },
    ]);
    // A second key for order 1 (on PostgreSQL the sequence never saw this test's explicit ids); key hashes stay unique.
    const inserted = await db
      .insertInto('api_keys')
      .values({ order_id: 1, client_id: 1, key_hash: 'hash-c', key_enc: 'enc-c', valid: 1, options: '{}', created_at: NOW, updated_at: NOW })
      .returning('id')
      .executeTakeFirstOrThrow();
    expect([7, 9]).not.toContain(inserted.id);
    if (handle.dialect === 'sqlite') expect(inserted.id).toBeGreaterThan(9);
    await expect(db.insertInto('api_keys').values({ order_id: 2, client_id: 1, key_hash: 'hash-c', key_enc: 'x', valid: 1, options: '{}', created_at: NOW, updated_at: NOW }).execute()).rejects.toThrow();
    // Foreign keys hold: usage of a key that does not exist is refused, and deleting a key still cascades.
    await expect(sql`INSERT INTO api_key_usage (api_key_id, day, count) VALUES (999, '2026-11-22', 1)`.execute(db)).rejects.toThrow();
    await db.deleteFrom('api_keys').where('id', '=', 9).execute();
    expect(await db.selectFrom('api_key_usage').select('api_key_id').where('api_key_id', '=', 9).execute()).toEqual([]);
    if (handle.dialect === 'sqlite') {
      expect((await sql<{ foreign_keys: number }>`PRAGMA foreign_keys`.execute(db)).rows[0]?.foreign_keys).toBe(1);
    }
  });
});
