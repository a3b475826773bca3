// `npm run cli -- backup <file>`: a consistent copy of the SQLite database while the server keeps running, through
// SQLite's online backup API (better-sqlite3's `backup()`), which copies page by page and restarts a step when a
// writer changed the source meanwhile. The copy is written beside its target and renamed into place, mode 0600
// (it holds the sealed keys and tokens), and never overwrites an existing file.
import { chmodSync, existsSync, renameSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import SqliteDatabase from 'better-sqlite3';

export function sqlitePathOf(databaseUrl: string): string | null {
  if (!databaseUrl.startsWith('sqlite:')) return null;
  const path = databaseUrl.slice('sqlite:'.length);
  return path === '' || path === ':memory:' ? null : path;
}

export async function backupSqlite(databaseUrl: string, target: string): Promise<{ pages: number; file: string }> {
  const source = sqlitePathOf(databaseUrl);
  if (source === null) {
    throw new Error(
      databaseUrl.startsWith('sqlite:') ? 'An in-memory database cannot be backed up' : 'backup copies the SQLite database; on PostgreSQL use pg_dump',
    );
  }
  const file = resolve(target);
  if (existsSync(file)) throw new Error(`${file} already exists; choose a new file name`);
  const partial = `${file}.partial`;
  const db = new SqliteDatabase(source, { fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    let pages = 0;
    // Copy in steps of 1000 pages, yielding between them, so a large database does not hold the writer back long.
    await db.backup(partial, {
      progress({ totalPages }) {
        pages = totalPages;
        return 1000;
      },
    });
    chmodSync(partial, 0o600);
    renameSync(partial, file);
    return { pages, file };
  } catch (error) {
    rmSync(partial, { force: true });
    throw error;
  } finally {
    db.close();
  }
}
