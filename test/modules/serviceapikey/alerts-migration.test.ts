// Migration 029 (alerts per meter) on a database that already holds sent alerts: `usage_thresholds` is rebuilt with
// `meter` in its primary key; the rows sent before are the built-in `calls` meter's and keep stopping a repeat, while
// the same percentage of another meter may now be recorded. On SQLite, and on PostgreSQL when TEST_DATABASE_URL is set.
import { Migrator, sql, type Kysely, type Migration } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../../../src/db/database.ts';
import { migrations } from '../../../src/db/migrations/index.ts';
import { freshPostgresDatabase } from '../../helpers/app.ts';

const PG = process.env.TEST_DATABASE_URL ?? '';
const NOW = '2026-11-22T10:00:00Z';
const MONTH = '2026-11-01T00:00:00Z';

function migratorOf(db: Kysely<unknown>): Migrator {
  return new Migrator({ db, provider: { getMigrations: (): Promise<Record<string, Migration>> => Promise.resolve(migrations) } });
}

describe('migration 029_meter_alerts on a database with sent alerts', () => {
  const opened: Array<{ handle: DatabaseHandle; drop?: () => Promise<void> }> = [];
  afterAll(async () => {
    for (const { handle, drop } of opened) {
      await handle.close();
      await drop?.();
    }
  });

  it('keeps every sent alert as the calls meter, still once, and lets another meter record the same percentage', async () => {
    const postgres = PG === '' ? null : await freshPostgresDatabase(PG);
    const handle = openDatabase(postgres?.url ?? 'sqlite::memory:');
    opened.push({ handle, ...(postgres !== null && { drop: postgres.drop }) });
    // Migrations take Kysely<any>; so does this test, which writes tables as they were before 029.
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const db = handle.db as unknown as Kysely<any>;
    expect((await migratorOf(db).migrateTo('027_usage_meter_days')).error).toBeUndefined();

    await sql`INSERT INTO clients (email, first_name, status, api_token_hash, api_token_enc, created_at, updated_at) VALUES ('a@example.com', 'A', 'active', 'h1', 'e1', ${NOW}, ${NOW})`.execute(db);
    await sql`INSERT INTO products (title, slug, type, status, setup, pricing, created_at, updated_at) VALUES ('P', 'p', 'apikey', 'enabled', 'after_payment', '{}', ${NOW}, ${NOW})`.execute(db);
    await sql`INSERT INTO orders (id, client_id, product_id, title, type, quantity, price, currency, status, created_at, updated_at) VALUES (1, 1, 1, 'P', 'apikey', 1, 100, 'USD', 'active', ${NOW}, ${NOW})`.execute(db);
    await sql`INSERT INTO usage_thresholds (order_id, period_start, threshold, used, created_at) VALUES (1, ${MONTH}, 80, 800, ${NOW}), (1, ${MONTH}, 100, 1000, ${NOW})`.execute(db);

    const after = await migratorOf(db).migrateToLatest();
    expect(after.error).toBeUndefined();
    expect(after.results?.map((result) => [result.migrationName, result.status])).toContainEqual(['029_meter_alerts', 'Success']);

    const rows = await db.selectFrom('usage_thresholds').select(['order_id', 'period_start', 'meter', 'threshold', 'used']).orderBy('threshold').execute();
    expect(rows.map((row) => ({ ...row, used: Number(row.used) }))).toEqual([
      { order_id: 1, period_start: MONTH, meter: 'calls', threshold: 80, used: 800 },
      { order_id: 1, period_start: MONTH, meter: 'calls', threshold: 100, used: 1000 },
    ]);
    // The calls alerts already sent stay once; the same percentage of another meter is a new alert.
    await expect(sql`INSERT INTO usage_thresholds (order_id, period_start, meter, threshold, used, created_at) VALUES (1, ${MONTH}, 'calls', 80, 801, ${NOW})`.execute(db)).rejects.toThrow();
    await sql`INSERT INTO usage_thresholds (order_id, period_start, meter, threshold, used, created_at) VALUES (1, ${MONTH}, 'tokens', 80, 8, ${NOW})`.execute(db);
    // A client's percentages: one row each per order and meter; they go with their order.
    await sql`INSERT INTO usage_alert_percentages (order_id, meter, percentage, created_at) VALUES (1, 'tokens', 50, ${NOW})`.execute(db);
    await expect(sql`INSERT INTO usage_alert_percentages (order_id, meter, percentage, created_at) VALUES (1, 'tokens', 50, ${NOW})`.execute(db)).rejects.toThrow();
    await sql`DELETE FROM orders WHERE id = 1`.execute(db);
    expect(await db.selectFrom('usage_alert_percentages').selectAll().execute()).toEqual([]);
    expect(await db.selectFrom('usage_thresholds').selectAll().execute()).toEqual([]);
  });
});
