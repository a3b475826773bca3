// Column helpers that hide the two dialects' differences from the migrations.
import { PostgresAdapter, type CreateTableBuilder, type Kysely } from 'kysely';

// Migrations take Kysely<any>: they are frozen in time and must not depend on the app's current table types.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyDb = Kysely<any>;

export function isPostgres(db: AnyDb): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}

/** Adds an auto-incrementing integer primary key named `id`. */
export function withId<T extends string>(db: AnyDb, table: CreateTableBuilder<T>): CreateTableBuilder<T, 'id'> {
  return isPostgres(db)
    ? table.addColumn('id', 'serial', (col) => col.primaryKey())
    : table.addColumn('id', 'integer', (col) => col.primaryKey().autoIncrement());
}
