// Helpers for the staff list queries that must stay fast at a million rows (migrations 010, 015 and 016).
//
// A text search of three or more characters matches "contains", of one or two "starts with" (src/db/like.ts). It is
// answered one of two ways, chosen per request:
// - selective (at most SEARCH_CAP matching rows): their ids are read from an index — SQLite's FTS5 trigram tables,
//   PostgreSQL's pg_trgm GIN indexes, or for a prefix the b-trees of 016 — and the list reads only those rows; its
//   total is exact.
// - common (more): the list walks its own ordering index and tests each row until the page is full. It is not
//   counted (that would read the whole table for every page): the total is what this page shows, plus one when a
//   next page exists, and then carries `total_capped: true` ("at least this many").
// A trigram index is slow to read for a fragment made only of very common trigrams (every address holds "example"):
// the index is asked for the rarest stretch of the text instead, judged on a small random sample of the table, and
// each row it offers is then checked against the whole text.
import { searchedId } from '../lib/searched-id.ts';
import { isPrefixSearch, likeEscaped, searchPattern } from './like.ts';
import { SqliteAdapter, sql, type Expression, type Kysely, type RawBuilder, type SqlBool } from 'kysely';

export function isSqlite(db: { getExecutor(): { adapter: unknown } }): boolean {
  return db.getExecutor().adapter instanceof SqliteAdapter;
}

/** The most rows a search reads by id; more matches make it "common" (see above). */
export const SEARCH_CAP = 2000;

/** A searched column: its name, and whether it is stored lower-cased (the e-mail) or compared through lower(). */
export interface SearchedColumn {
  column: string;
  stored: 'lower' | 'any';
}

/** A table searched by text: its searched columns, and (SQLite) the FTS5 trigram table mirroring them. */
export interface SearchedTable {
  table: 'clients' | 'orders' | 'invoices';
  fts: string;
}

/** The lower-cased value of `column` in `table` (qualified), as the indexes hold it. */
function lowered(table: string, { column, stored }: SearchedColumn): RawBuilder<string | null> {
  const ref = sql.ref(`${table}.${column}`);
  return stored === 'lower' ? sql<string>`${ref}` : sql<string | null>`lower(${ref})`;
}

/**
 * The exact rule: any of `columns` of `table` matches `text` (contains, or starts with when short), literally. A
 * list tests it on the rows its ids or its own order give (`indexed` false): PostgreSQL would otherwise read the
 * trigram index for it again, common trigrams and all, beside the ids it was given.
 */
export function textMatches(table: string, columns: readonly SearchedColumn[], text: string, indexed = true): RawBuilder<SqlBool> {
  const pattern = searchPattern(text.toLowerCase());
  const value = (column: SearchedColumn) => (indexed ? lowered(table, column) : sql<string | null>`(${lowered(table, column)} || '')`);
  return sql<SqlBool>`(${sql.join(columns.map((column) => likeEscaped(value(column), pattern)), sql` or `)})`;
}

// ---- Which stretch of the text to ask a trigram index for --------------------------------------------------------

const SAMPLE_SIZE = 256;
const SAMPLE_RUN = 16;
const SAMPLE_TTL_MS = 10 * 60_000;
/** A trigram in more than this share of the sample is not worth reading from the index beside a rarer one. */
const COMMON_TRIGRAM = 0.05;
const samples = new WeakMap<object, Map<string, { values: string[]; rows: number; until: number }>>();

/**
 * The lower-cased values of `columns` (joined by a newline) of up to SAMPLE_SIZE random rows of `table`, and the
 * table's id span (about its row count), kept for a few minutes per process and database.
 */
async function sampleOf<DB>(db: Kysely<DB>, table: string, columns: readonly SearchedColumn[]): Promise<{ values: string[]; rows: number }> {
  let cache = samples.get(db);
  if (cache === undefined) {
    cache = new Map();
    samples.set(db, cache);
  }
  const key = `${table}:${columns.map((c) => c.column).join(',')}`;
  const hit = cache.get(key);
  if (hit !== undefined && hit.until > Date.now()) return hit;
  // Two subqueries: SQLite answers min() or max() alone from the primary key, but scans for both in one select.
  const span = (await sql<{ low: number | null; high: number | null }>`select (select min(id) from ${sql.table(table)}) as low, (select max(id) from ${sql.table(table)}) as high`.execute(db)).rows[0];
  const [low, high] = [span?.low ?? 0, span?.high ?? 0];
  // Runs of consecutive ids from random places: a run shares its pages, so the sample costs a few page reads.
  const ids = new Set<number>();
  const runs = high >= low ? SAMPLE_SIZE / SAMPLE_RUN : 0;
  for (let run = 0; run < runs; run++) {
    const start = low + Math.floor(Math.random() * (high - low + 1));
    for (let id = start; id < start + SAMPLE_RUN && id <= high; id++) ids.add(id);
  }
  // One string per row: the columns lower-cased, joined by a newline (no search text spans two of them).
  const newline = isSqlite(db) ? sql`char(10)` : sql`chr(10)`;
  const joined = sql.join(columns.map((column) => sql`coalesce(${lowered(table, column)}, '')`), sql` || ${newline} || `);
  const rows = ids.size === 0 ? [] : (await sql<{ v: string }>`select ${joined} as v from ${sql.table(table)} where ${inIds(db, sql.ref(`${table}.id`), [...ids])}`.execute(db)).rows;
  const entry = { values: rows.map((row) => row.v), rows: high >= low && high > 0 ? high - low + 1 : 0, until: Date.now() + SAMPLE_TTL_MS };
  cache.set(key, entry);
  return entry;
}

/** Sampled rows holding `fragment` (with `prefix`, a column starting with it). */
function hits(values: readonly string[], fragment: string, prefix = false): number {
  let n = 0;
  for (const value of values) if (prefix ? value.startsWith(fragment) || value.includes(`\n${fragment}`) : value.includes(fragment)) n++;
  return n;
}

/** Share of the sample holding `fragment`. */
function share(values: readonly string[], fragment: string): number {
  return values.length === 0 ? 0 : hits(values, fragment) / values.length;
}

/**
 * Whether the sample already shows `text` matching far more rows than `cap` (then the index is not asked for cap + 1
 * of them only to learn that). Enough sampled rows must hold it that chance alone would rarely say so.
 */
async function surelyCommon<DB>(db: Kysely<DB>, table: string, columns: readonly SearchedColumn[], text: string, prefix: boolean, cap: number): Promise<boolean> {
  const sample = await sampleOf(db, table, columns);
  const n = hits(sample.values, text, prefix);
  return n >= 8 && (n / sample.values.length) * sample.rows > 4 * cap;
}

/**
 * The stretch of `text` (lower-cased, three or more characters) to look up in a trigram index: its rarest trigram
 * in the sample, widened on either side by trigrams that are not common. Every match of `text` contains it.
 */
export function rareStretch(values: readonly string[], text: string): string {
  if (text.length <= 3) return text;
  const shares = Array.from({ length: text.length - 2 }, (_, i) => share(values, text.slice(i, i + 3)));
  let from = shares.indexOf(Math.min(...shares));
  let to = from;
  for (;;) {
    const left = from > 0 && shares[from - 1]! <= COMMON_TRIGRAM ? shares[from - 1]! : Infinity;
    const right = to < shares.length - 1 && shares[to + 1]! <= COMMON_TRIGRAM ? shares[to + 1]! : Infinity;
    if (left === Infinity && right === Infinity) break;
    if (left <= right) from--;
    else to++;
  }
  return text.slice(from, to + 3);
}

// ---- Matching ids -------------------------------------------------------------------------------------------------

/**
 * Ids of the rows of `table` whose `columns` match `text` (the exact rule of textMatches) when there are at most
 * `cap`; null when there are more, or when the sample already says the text is that common.
 */
export async function matchingIds<DB>(db: Kysely<DB>, searched: SearchedTable, columns: readonly SearchedColumn[], text: string, cap = SEARCH_CAP): Promise<number[] | null> {
  const lower = text.toLowerCase();
  const { table } = searched;
  const exact = textMatches(table, columns, lower);
  let ids: number[];
  if (await surelyCommon(db, table, columns, lower, isPrefixSearch(lower), cap)) return null;
  if (isPrefixSearch(lower)) {
    // One b-tree range per column (016's prefix indexes); SQLite compares bounds (its LIKE uses no index here).
    const found = new Set<number>();
    for (const column of columns) {
      const condition = isSqlite(db)
        ? sql`${lowered(table, column)} >= ${lower} and ${lowered(table, column)} < ${nextPrefix(lower)}`
        : likeEscaped(lowered(table, column), searchPattern(lower));
      const rows = await sql<{ id: number }>`select id from ${sql.table(table)} where ${condition} limit ${cap + 1}`.execute(db);
      for (const row of rows.rows) found.add(row.id);
      if (found.size > cap) return null;
    }
    ids = [...found];
  } else {
    let stretch = rareStretch((await sampleOf(db, table, columns)).values, lower);
    // pg_trgm takes its trigrams from runs of letters and digits: a stretch without three in a row may give it none
    // (a read of the whole index); the whole text then.
    if (!isSqlite(db) && !/[\p{L}\p{N}]{3}/u.test(stretch)) stretch = lower;
    if (isSqlite(db)) {
      const query = `{${columns.map((c) => c.column).join(' ')}} : "${stretch.replaceAll('"', '""')}"`;
      ids = (await sql<{ id: number }>`select id from ${sql.table(table)} where id in (select rowid from ${sql.table(searched.fts)} where ${sql.table(searched.fts)} match ${query}) and ${exact} limit ${cap + 1}`.execute(db)).rows.map((row) => row.id);
    } else if (stretch === lower) {
      ids = (await sql<{ id: number }>`select id from ${sql.table(table)} where ${exact} limit ${cap + 1}`.execute(db)).rows.map((row) => row.id);
    } else {
      // The index is asked for the stretch only (materialized: PostgreSQL would otherwise read it for the whole text
      // too); the whole text is checked on the rows it offers.
      const cols = sql.join(columns.map((column) => sql.ref(`${table}.${column.column}`)));
      ids = (
        await sql<{ id: number }>`with offered as materialized (select ${sql.ref(`${table}.id`)}, ${cols} from ${sql.table(table)} where ${textMatches(table, columns, stretch)})
          select id from offered as ${sql.table(table)} where ${exact} limit ${cap + 1}`.execute(db)
      ).rows.map((row) => row.id);
    }
  }
  return ids.length > cap ? null : ids;
}

/** The least string greater than every string that starts with `prefix` (its last character, plus one). */
function nextPrefix(prefix: string): string {
  return prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
}

// ---- Client-owned rows (orders, invoices) -------------------------------------------------------------------------

/** Finds the clients a staff list's `search` matches (ClientService.idsMatching / matches). */
export interface ClientMatcher {
  idsMatching(text: string, cap: number): Promise<number[] | null>;
  matches(text: string, clientId: Expression<number>): Expression<SqlBool>;
}

/** A table of client-owned rows whose staff list searches one column of its own (015_search_more). */
export interface OwnedTable extends SearchedTable {
  table: 'orders' | 'invoices';
  column: 'title' | 'number';
}

/**
 * Ids of the client-owned rows a staff list's `search` matches (the client's e-mail or name, the row's own column,
 * or `id`), when every part offers at most SEARCH_CAP of them; null when one is common.
 */
export async function ownedCandidates<DB>(db: Kysely<DB>, owned: OwnedTable, text: string, clients: ClientMatcher, id: number | null): Promise<number[] | null> {
  const clientIds = await clients.idsMatching(text, SEARCH_CAP);
  if (clientIds === null) return null;
  const own = await matchingIds(db, owned, [{ column: owned.column, stored: 'any' }], text);
  if (own === null) return null;
  let ofClients: number[] = [];
  if (clientIds.length > 0) {
    const rows = await sql<{ id: number }>`select id from ${sql.table(owned.table)} where ${inIds(db, sql.ref('client_id'), clientIds)} limit ${SEARCH_CAP + 1}`.execute(db);
    ofClients = rows.rows.map((row) => row.id);
    if (ofClients.length > SEARCH_CAP) return null;
  }
  return [...ofClients, ...own, ...(id !== null ? [id] : [])];
}

/** The staff lists' rule, tested on each row: the client's e-mail or name, the row's own column, or (digits) its id. */
export function ownedMatches(owned: OwnedTable, text: string, clients: Pick<ClientMatcher, 'matches'>): Expression<SqlBool> {
  const id = searchedId(text);
  const own = textMatches(owned.table, [{ column: owned.column, stored: 'any' }], text, false);
  const byId = id !== null ? sql` or ${sql.ref(`${owned.table}.id`)} = ${id}` : sql``;
  return sql<SqlBool>`(${clients.matches(text, sql.ref(`${owned.table}.client_id`))} or ${own}${byId})`;
}

/**
 * The `search` of a staff list of client-owned rows: `where`, the exact rule (the client's e-mail or name, the row's
 * own column, or — digits — its id), and `drive`, the ids of exactly the rows it matches when they are few (null for
 * a common text: the query then tests `where` on rows in its own order, and its total is not counted).
 */
export async function ownedSearch<DB>(
  db: Kysely<DB>,
  owned: OwnedTable,
  text: string,
  clients: ClientMatcher,
): Promise<{ where: Expression<SqlBool>; drive: Expression<SqlBool> | null }> {
  const where = ownedMatches(owned, text, clients);
  const candidates = await ownedCandidates(db, owned, text, clients, searchedId(text));
  return { where, drive: candidates === null ? null : inIds(db, sql.ref(`${owned.table}.id`), candidates) };
}

/** `column IN (ids)` with the ids bound as one parameter (a JSON array on SQLite, an array on PostgreSQL). */
export function inIds(db: object & { getExecutor(): { adapter: unknown } }, column: Expression<number>, ids: readonly number[]): RawBuilder<SqlBool> {
  return isSqlite(db) ? sql<SqlBool>`${column} in (select value from json_each(${JSON.stringify(ids)}))` : sql<SqlBool>`${column} = any(${[...ids]}::integer[])`;
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

// ---- A page of a list ---------------------------------------------------------------------------------------------

/**
 * The total of a list whose rows were walked without counting (a common search): what this page shows and, when
 * `more` (the query found a row past the page), one more, capped ("at least"). Null for an empty page past the
 * first, which cannot say how many rows come before it: the caller counts them.
 */
export function walkedTotal(offset: number, shown: number, more: boolean): { n: number; capped: boolean } | null {
  if (shown === 0 && offset > 0) return null;
  return { n: offset + shown + (more ? 1 : 0), capped: more };
}
