// Opens the database named by DATABASE_URL: `sqlite:<path>` / `sqlite::memory:` (better-sqlite3, WAL) or
// `postgres://…` (pg pool). Everything above this file speaks Kysely and does not care which.
import { chmodSync, existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import pg from 'pg';
import type { Database } from './schema.ts';

export type DialectName = 'sqlite' | 'postgres';

export interface DatabaseHandle {
  db: Kysely<Database>;
  dialect: DialectName;
  /** The PostgreSQL connection string, for LISTEN/NOTIFY; null on SQLite. */
  postgresUrl: string | null;
  close(): Promise<void>;
}

export function openDatabase(url: string): DatabaseHandle {
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    // COUNT(*) and SUM() come back as int8; they stay far below 2^53 here, so read them as numbers.
    pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));
    const pool = new pg.Pool({ connectionString: url, max: 10 });
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    return { db, dialect: 'postgres', postgresUrl: url, close: () => db.destroy() };
  }
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length);
    if (path === '') throw new Error('DATABASE_URL sqlite: needs a path or :memory:');
    // The data directory 0700 and the database files 0600 (CONTRACT §13): they hold sealed keys and tokens.
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    const sqlite = new SqliteDatabase(path);
    sqlite.pragma('journal_mode = WAL');
    if (path !== ':memory:') restrictFiles(path);
    sqlite.pragma('synchronous = NORMAL');
    sqlite.pragma('foreign_keys = ON');
    sqlite.pragma('busy_timeout = 5000');
    const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }) });
    return { db, dialect: 'sqlite', postgresUrl: null, close: () => db.destroy() };
  }
  throw new Error(`DATABASE_URL must start with sqlite: or postgres://, got "${url.split(':')[0]}:…"`);
}

function restrictFiles(path: string): void {
  for (const file of [path, `${path}-wal`, `${path}-shm`]) if (existsSync(file)) chmodSync(file, 0o600);
}
