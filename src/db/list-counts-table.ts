// The table migration 016_search_speed adds: row counts of the staff lists by status. No module writes it: the
// database's triggers keep it, and list-counts.ts reads it (and folds PostgreSQL's deltas), so its type lives in db/.

export interface ListCountsTable {
  table_name: string;
  status: string;
  /** SQLite: the count. PostgreSQL: one signed delta of it (the count is their sum); bigint, read as a string. */
  n: number | string;
}

export interface ListCountsTables {
  list_counts: ListCountsTable;
}
