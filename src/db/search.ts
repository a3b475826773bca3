// Helpers for the list queries that must stay fast at a million rows (migrations 010_search, 015_search_more).
//
// A text search ("contains") is answered one of two ways, chosen per request by how many rows the text index offers:
// - selective (at most SEARCH_CAP candidates): the candidates' ids are fetched from the index (SQLite FTS5 trigram,
//   PostgreSQL pg_trgm), checked against the exact rule, and the list query reads only those rows: exact total.
// - common (more): the list query walks its ordering index and tests each row with the exact rule, so a page needs
//   only as many rows as it takes to fill it; the total is counted up to SEARCH_CAP and then reported as that many
//   with `total_capped: true` (counting every match of a common fragment would read most of the table per page).
import { searchedId } from '../lib/list-filters.ts';
import { containsPattern, likeEscaped } from './like.ts';
import { SqliteAdapter, sql, type Expression, type Kysely, type RawBuilder, type SelectQueryBuilder, type SqlBool } from 'kysely';

export function isSqlite(db: { getExecutor(): { adapter: unknown } }): boolean {
  return db.getExecutor().adapter instanceof SqliteAdapter;
}

/** The trigram index needs three characters; shorter text is matched by a scan. */
export const TRIGRAM_MIN = 3;

/** Above this many candidates a search is "common": its total is counted up to here (see above). */
export const SEARCH_CAP = 1000;

/** SQLite: rowids of the FTS5 table `fts` whose `columns` contain `text` (a literal phrase), at most `limit`. */
export async function ftsRowids<DB>(db: Kysely<DB>, fts: string, columns: readonly string[], text: string, limit: number): Promise<number[]> {
  const query = `{${columns.join(' ')}} : "${text.replaceAll('"', '""')}"`;
  const rows = await sql<{ id: number }>`select rowid as id from ${sql.raw(fts)} where ${sql.raw(fts)} match ${query} limit ${limit}`.execute(db);
  return rows.rows.map((row) => row.id);
}

/** Finds the clients a staff list's `search` matches (ClientService.idsMatching / matches). */
export interface ClientMatcher {
  idsMatching(text: string, cap: number): Promise<number[] | null>;
  matches(text: string, clientId: Expression<number>): Expression<SqlBool>;
}

/** A table of client-owned rows whose staff list searches one column of its own (015_search_more). */
export interface OwnedTable {
  table: 'orders' | 'invoices';
  column: 'title' | 'number';
  /** SQLite's FTS5 table over `column`. */
  fts: string;
}

/**
 * Candidate ids for a staff list's `search` over client-owned rows (the client's e-mail or name, the row's own
 * column, or `id`), when every part offers at most SEARCH_CAP of them; null when one is common. The caller's query
 * still applies the exact rule to each candidate.
 */
export async function ownedCandidates<DB>(db: Kysely<DB>, owned: OwnedTable, text: string, clients: ClientMatcher, id: number | null): Promise<number[] | null> {
  const clientIds = await clients.idsMatching(text, SEARCH_CAP);
  if (clientIds === null) return null;
  const lower = text.toLowerCase();
  let own: number[];
  if (isSqlite(db)) {
    if (lower.length < TRIGRAM_MIN) return null;
    own = await ftsRowids(db, owned.fts, [owned.column], lower, SEARCH_CAP + 1);
  } else {
    const pattern = containsPattern(lower);
    const rows = await sql<{ id: number }>`select id from ${sql.table(owned.table)} where ${likeEscaped(sql`lower(${sql.ref(owned.column)})`, pattern)} limit ${SEARCH_CAP + 1}`.execute(db);
    own = rows.rows.map((row) => row.id);
  }
  if (own.length > SEARCH_CAP) return null;
  let ofClients: number[] = [];
  if (clientIds.length > 0) {
    const rows = await sql<{ id: number }>`select id from ${sql.table(owned.table)} where ${inIds(db, sql.ref('client_id'), clientIds)} limit ${SEARCH_CAP + 1}`.execute(db);
    ofClients = rows.rows.map((row) => row.id);
    if (ofClients.length > SEARCH_CAP) return null;
  }
  return [...ofClients, ...own, ...(id !== null ? [id] : [])];
}

/**
 * The `search` of a staff list of client-owned rows: `where`, the exact rule (the client's e-mail or name, the row's
 * own column, or — digits — its id), and `drive`, the candidates that narrow the query when they are few (null for a
 * common fragment: the query then tests rows in its own order, and its total is bounded).
 */
export async function ownedSearch<DB>(
  db: Kysely<DB>,
  owned: OwnedTable,
  text: string,
  clients: ClientMatcher,
): Promise<{ where: Expression<SqlBool>; drive: Expression<SqlBool> | null }> {
  const id = searchedId(text);
  const pattern = containsPattern(text.toLowerCase());
  const own = likeEscaped(sql`lower(${sql.ref(`${owned.table}.${owned.column}`)})`, pattern);
  const byId = id !== null ? sql` or ${sql.ref(`${owned.table}.id`)} = ${id}` : sql``;
  const where = sql<SqlBool>`(${clients.matches(text, sql.ref(`${owned.table}.client_id`))} or ${own}${byId})`;
  const candidates = await ownedCandidates(db, owned, text, clients, id);
  return { where, drive: candidates === null ? null : inIds(db, sql.ref(`${owned.table}.id`), candidates) };
}

/** `column IN (ids)` with the ids bound as one parameter (a JSON array on SQLite, an array on PostgreSQL). */
export function inIds(db: object & { getExecutor(): { adapter: unknown } }, column: Expression<number>, ids: readonly number[]): RawBuilder<SqlBool> {
  return isSqlite(db) ? sql<SqlBool>`${column} in (select value from json_each(${JSON.stringify(ids)}))` : sql<SqlBool>`${column} = any(${[...ids]}::integer[])`;
}

/** A total counted up to `cap`: the rows of `query` (its own filters), reading at most cap + 1 of them. */
export async function boundedCount<DB, TB extends keyof DB & string, O>(
  db: Kysely<DB>,
  query: SelectQueryBuilder<DB, TB, O>,
  cap: number,
): Promise<{ n: number; capped: boolean }> {
  const limited = query.select(sql<number>`1`.as('one')).limit(cap + 1);
  const result = await sql<{ n: number | string }>`select count(*) as n from ${limited} as bounded`.execute(db);
  const n = Number(result.rows[0]?.n ?? 0);
  return n > cap ? { n: cap, capped: true } : { n, capped: false };
}

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
 * A staff list's total: for the unfiltered list or one status alone (`cachedVariant`, '' for none), counted once per
 * few seconds (cachedTotal); for a common search (`common`), counted up to SEARCH_CAP; otherwise counted.
 */
export async function listTotal<DB, TB extends keyof DB & string, O>(
  db: Kysely<DB>,
  table: string,
  query: SelectQueryBuilder<DB, TB, O>,
  mode: { cachedVariant: string | null; common: boolean },
): Promise<{ n: number; capped: boolean }> {
  const count = async (): Promise<number> => {
    const result = await sql<{ n: number | string }>`select count(*) as n from ${query.select(sql<number>`1`.as('one'))} as counted`.execute(db);
    return Number(result.rows[0]?.n ?? 0);
  };
  if (mode.cachedVariant !== null) return { n: await cachedTotal(db, table, count, mode.cachedVariant), capped: false };
  if (mode.common) return boundedCount(db, query, SEARCH_CAP);
  return { n: await count(), capped: false };
}

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
