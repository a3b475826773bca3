// The page of a staff or client list of orders or invoices, from its exact-match filters (owner, status…) on: the
// steps both lists share.
// - The staff-only filters: the creation-date range and `search` (src/db/search.ts: a search with few candidates
//   drives the query by their ids; a common one tests each row).
// - Newest first. Ids grow with creation time, so by id; with a date range by (created_at, id), the order of the
//   index that holds the range (by id, PostgreSQL would walk the primary key back to the range's days).
// - A later page of a list without a search takes its ids from the index alone, then reads those rows: PostgreSQL
//   would otherwise fetch every row it skips.
// - The total: a common search is walked, not counted (one row more than the page says whether another follows);
//   the unfiltered list and a status alone read the counts kept by triggers (src/db/list-counts.ts); anything else is
//   counted.
import { sql, type Kysely, type Selectable, type SelectQueryBuilder } from 'kysely';
import type { PageRequest } from '../lib/paginator.ts';
import { listCount } from './list-counts.ts';
import type { Database } from './schema.ts';
import { ownedSearch, walkedTotal, type ClientMatcher, type OwnedTable } from './search.ts';

type NewestTable = 'orders' | 'invoices';

export interface NewestPageOptions {
  request: PageRequest;
  /** The creation-date range (staff lists; `{}` for none), as createdRange gives it. */
  created: { from?: string; to?: string };
  /** The search text (staff lists), or null. */
  text: string | null;
  /** The table's own searched column and its trigram index. */
  searched: OwnedTable;
  clients: ClientMatcher;
  /** A filter other than the status is applied (owner, product…): the kept counts cannot answer the total. */
  narrowed: boolean;
  status: string | undefined;
}

export async function newestPage<T extends NewestTable>(
  db: Kysely<Database>,
  table: T,
  filtered: SelectQueryBuilder<Database, T, object>,
  options: NewestPageOptions,
): Promise<{ rows: Array<Selectable<Database[T]>>; total: { n: number; capped: boolean } }> {
  const { request, created, text } = options;
  let query = filtered;
  if (created.from !== undefined) query = query.where(sql.ref(`${table}.created_at`), '>=', created.from);
  if (created.to !== undefined) query = query.where(sql.ref(`${table}.created_at`), '<=', created.to);
  let walk = false;
  if (text !== null) {
    const search = await ownedSearch(db, options.searched, text, options.clients);
    // The candidates are exact matches: when there are few, they alone filter (no row re-tested).
    walk = search.drive === null;
    query = query.where(search.drive ?? search.where);
  }
  const byDate = created.from !== undefined || created.to !== undefined;
  const id = sql.ref<number>(`${table}.id`);
  const newestFirst = <Q extends SelectQueryBuilder<Database, T, object>>(q: Q): Q =>
    (byDate ? q.orderBy(sql.ref(`${table}.created_at`), 'desc') : q).orderBy(id, 'desc') as Q;
  const deep = text === null && request.offset > 0;
  const limited = deep
    ? newestFirst(query.where(id, 'in', newestFirst(query.select(id.as('id'))).limit(request.perPage).offset(request.offset)))
    : newestFirst(query).limit(request.perPage + (walk ? 1 : 0)).offset(request.offset);
  // Kysely cannot spell the row type of a table named by a type parameter; selectAll() reads exactly that row.
  const rows = (await limited.selectAll().execute()) as unknown as Array<Selectable<Database[T]>>;
  const more = walk && rows.length > request.perPage;
  if (more) rows.pop();
  const walked = walk ? walkedTotal(request.offset, rows.length, more) : null;
  if (walked !== null) return { rows, total: walked };
  const unfiltered = !options.narrowed && text === null && !byDate;
  const n = unfiltered
    ? await listCount(db, table, options.status)
    : Number((await query.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow()).n);
  return { rows, total: { n, capped: false } };
}
