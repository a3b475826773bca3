// Helpers for the list queries that must stay fast at a million rows (migration 010_search).
import { SqliteAdapter, sql, type RawBuilder } from 'kysely';

export function isSqlite(db: { getExecutor(): { adapter: unknown } }): boolean {
  return db.getExecutor().adapter instanceof SqliteAdapter;
}

/** The trigram index needs three characters; shorter text is matched by a scan. */
export const TRIGRAM_MIN = 3;

/**
 * SQLite: `id IN (rows of the clients_search FTS5 table whose `columns` contain `text`)`, the index-backed half of a
 * "contains" filter (the caller keeps its LIKE, which stays the exact rule). The text is an FTS5 phrase: quoted,
 * its double quotes doubled, so nothing in it is FTS syntax.
 */
export function clientsContaining(columns: readonly string[], text: string): RawBuilder<boolean> {
  const query = `{${columns.join(' ')}} : "${text.replaceAll('"', '""')}"`;
  return sql<boolean>`id in (select rowid from clients_search where clients_search match ${query})`;
}

const TOTAL_TTL_MS = 5000;
const totals = new WeakMap<object, Map<string, { n: number; until: number; generation: number }>>();
/** Per table, bumped by every insert or delete this process makes there (in any database it has open). */
const generations = new Map<string, number>();

/**
 * The unfiltered total of a list (or, with `variant`, of one cheap-to-invalidate filter such as a status), computed at most once per TOTAL_TTL_MS per process and database (every page of an
 * unfiltered list otherwise counts the whole table), and forgotten as soon as this process inserts or deletes rows
 * of the table (`forgetTotal`, called once the change is committed). Another process's insert shows in the total
 * within TOTAL_TTL_MS.
 */
export async function cachedTotal(db: object, table: string, count: () => Promise<number>, variant = ''): Promise<number> {
  let cache = totals.get(db);
  if (cache === undefined) {
    cache = new Map();
    totals.set(db, cache);
  }
  const generation = generations.get(table) ?? 0;
  const key = `${table}\n${variant}`;
  const hit = cache.get(key);
  const now = Date.now();
  if (hit !== undefined && hit.until > now && hit.generation === generation) return hit.n;
  const n = await count();
  // A write that committed while counting leaves the generation moved on: the figure is not kept.
  if ((generations.get(table) ?? 0) === generation) cache.set(key, { n, until: now + TOTAL_TTL_MS, generation });
  return n;
}

/** Rows of `table` were inserted, deleted or changed status: recount its totals on the next request. */
export function forgetTotal(table: string): void {
  generations.set(table, (generations.get(table) ?? 0) + 1);
}
