// The row counts of the staff lists (clients, orders, invoices) by status, kept by the triggers of migration
// 016_search_speed: an unfiltered list or one filtered by status alone reads its total here instead of counting a
// table of a million rows. Exact in every process at once (the triggers write in the writer's own transaction).
import { sql, type Kysely } from 'kysely';
import type { Database } from './schema.ts';

export type CountedTable = 'clients' | 'orders' | 'invoices';

/** PostgreSQL keeps one delta row per write statement; a reader that sums more than this many folds the table's. */
const FOLD_AFTER = 64;

/** The number of rows of `table`, with `status` alone when given. */
export async function listCount(db: Kysely<Database>, table: CountedTable, status?: string): Promise<number> {
  const rows = await db
    .selectFrom('list_counts')
    .select((eb) => [eb.fn.sum<number | string>('n').as('n'), eb.fn.countAll<number | string>().as('rows')])
    .where('table_name', '=', table)
    .$if(status !== undefined, (query) => query.where('status', '=', status!))
    .executeTakeFirstOrThrow();
  if (Number(rows.rows) > FOLD_AFTER) await fold(db, table);
  return Number(rows.n ?? 0);
}

/**
 * PostgreSQL: replaces the delta rows of `table` by one row per status, in one statement. Only the rows this
 * statement deletes are summed into the rows it inserts, so deltas committed meanwhile stay, and a concurrent fold
 * (which waits for this one, then finds those rows gone) adds nothing twice. SQLite's rows are already one per status.
 */
async function fold(db: Kysely<Database>, table: CountedTable): Promise<void> {
  await sql`with gone as (delete from list_counts where table_name = ${table} returning status, n)
    insert into list_counts (table_name, status, n) select ${sql.lit(table)}, status, sum(n) from gone group by status`.execute(db);
}
