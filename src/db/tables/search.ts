// The table migration 016_search_speed adds: row counts of the staff lists by status, kept by triggers.

export interface ListCountsTable {
  table_name: string;
  status: string;
  /** SQLite: the count. PostgreSQL: one signed delta of it (the count is their sum); bigint, read as a string. */
  n: number | string;
}

export interface SearchTables {
  list_counts: ListCountsTable;
}
