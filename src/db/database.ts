// Opens the database named by DATABASE_URL: `sqlite:<path>` / `sqlite::memory:` (better-sqlite3, WAL) or
// `postgres://…` (pg pool). Everything above this file speaks Kysely and does not care which.
import SqliteDatabase from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import { withActionTransactions } from './ambient.ts';
import { loadPg } from './pg.ts';
import type { Database } from './schema.ts';
import { prepareSqliteFile, tightenSqliteFiles } from './file-modes.ts';

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
    const pg = loadPg();
    // COUNT(*) and SUM() come back as int8; they stay far below 2^53 here, so read them as numbers.
    pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));
    const pool = new pg.Pool({ connectionString: url, max: 10 });
    const wrapped = withActionTransactions(new PostgresDialect({ pool }), true);
    const db = new Kysely<Database>({ dialect: wrapped.dialect });
    wrapped.register(db as Kysely<never>);
    return { db, dialect: 'postgres', postgresUrl: url, close: () => db.destroy() };
  }
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length);
    if (path === '') throw new Error('DATABASE_URL sqlite: needs a path or :memory:');
    if (path !== ':memory:') prepareSqliteFile(path);
    const sqlite = new SqliteDatabase(path);
    sqlite.pragma('journal_mode = WAL');
    if (path !== ':memory:') tightenSqliteFiles(path);
    return sqliteHandle(sqlite);
  }
  throw new Error(`DATABASE_URL must start with sqlite: or postgres://, got "${url.split(':')[0]}:…"`);
}

/**
 * An in-memory SQLite database that starts as a copy of `image` (a serialized database). The tests open each test
 * file's database this way from one template migrated once per run (test/helpers/template-database.ts).
 */
export function openSqliteImage(image: Buffer): DatabaseHandle {
  return sqliteHandle(new SqliteDatabase(image));
}

function sqliteHandle(sqlite: SqliteDatabase.Database): DatabaseHandle {
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  const wrapped = withActionTransactions(new SqliteDialect({ database: sqlite }), false);
  const db = new Kysely<Database>({ dialect: wrapped.dialect });
  wrapped.register(db as Kysely<never>);
  return { db, dialect: 'sqlite', postgresUrl: null, close: () => db.destroy() };
}
