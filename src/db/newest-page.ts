// The page of a staff or client list of orders or invoices once its filters are applied: the steps both lists share.
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
import { walkedTotal } from './search.ts';

type NewestTable = 'orders' | 'invoices';

export interface NewestPageOptions {
  request: PageRequest;
  /** A date range is filtered on: order by (created_at, id). */
  byDate: boolean;
  /** A search text is applied. */
  searched: boolean;
  /** The search is a common one: walk it instead of counting. */
  walk: boolean;
  /** No filter but (perhaps) the status: the kept counts answer the total. */
  unfiltered: boolean;
  status: string | undefined;
}

export async function newestPage<T extends NewestTable>(
  db: Kysely<Database>,
  table: T,
  query: SelectQueryBuilder<Database, T, object>,
  options: NewestPageOptions,
): Promise<{ rows: Array<Selectable<Database[T]>>; total: { n: number; capped: boolean } }> {
  const { request, byDate, walk } = options;
  const id = sql.ref<number>(`${table}.id`);
  const newestFirst = <Q extends SelectQueryBuilder<Database, T, object>>(q: Q): Q =>
    (byDate ? q.orderBy(sql.ref(`${table}.created_at`), 'desc') : q).orderBy(id, 'desc') as Q;
  const deep = !options.searched && request.offset > 0;
  const limited = deep
    ? newestFirst(query.where(id, 'in', newestFirst(query.select(id.as('id'))).limit(request.perPage).offset(request.offset)))
    : newestFirst(query).limit(request.perPage + (walk ? 1 : 0)).offset(request.offset);
  // Kysely cannot spell the row type of a table named by a type parameter; selectAll() reads exactly that row.
  const rows = (await limited.selectAll().execute()) as unknown as Array<Selectable<Database[T]>>;
  const more = walk && rows.length > request.perPage;
  if (more) rows.pop();
  const walked = walk ? walkedTotal(request.offset, rows.length, more) : null;
  if (walked !== null) return { rows, total: walked };
  const n = options.unfiltered
    ? await listCount(db, table, options.status)
    : Number((await query.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow()).n);
  return { rows, total: { n, capped: false } };
}
