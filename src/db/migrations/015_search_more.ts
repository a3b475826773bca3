// Order and invoice lists at a million rows (issue 13): the indexes their `search` and date filters use.
// - `search` over an order's title or an invoice's number ("contains", case-insensitive). SQLite: FTS5 trigram
//   tables over the column, external content kept in step by triggers, as clients_search (010_search). PostgreSQL:
//   pg_trgm GIN indexes on the lower-cased column the query's LIKE uses.
// - `date_from`/`date_to` on created_at: (created_at, id) and (status, created_at, id) indexes on each table; a list
//   filtered by dates is read in that order (newest first, as by id), so the range and the order come from one index.
import { sql } from 'kysely';
import { isPostgres, type AnyDb } from './helpers.ts';

/** Table → its searched column and the FTS5 table mirroring it (SQLite). */
const SEARCHED = [
  { table: 'orders', column: 'title', fts: 'orders_search' },
  { table: 'invoices', column: 'number', fts: 'invoices_search' },
] as const;

export async function up(db: AnyDb): Promise<void> {
  await db.schema.createIndex('orders_created').on('orders').columns(['created_at', 'id']).execute();
  await db.schema.createIndex('invoices_created').on('invoices').columns(['created_at', 'id']).execute();
  await db.schema.createIndex('orders_status_created').on('orders').columns(['status', 'created_at', 'id']).execute();
  await db.schema.createIndex('invoices_status_created').on('invoices').columns(['status', 'created_at', 'id']).execute();

  if (isPostgres(db)) {
    await sql`create extension if not exists pg_trgm`.execute(db);
    for (const { table, column } of SEARCHED) {
      await sql`create index ${sql.raw(`${table}_${column}_trgm`)} on ${sql.raw(table)} using gin (lower(${sql.raw(column)}) gin_trgm_ops)`.execute(db);
    }
    return;
  }
  for (const { table, column, fts } of SEARCHED) {
    const [t, c, f] = [sql.raw(table), sql.raw(column), sql.raw(fts)];
    await sql`create virtual table ${f} using fts5(${c}, content='${t}', content_rowid='id', tokenize='trigram')`.execute(db);
    await sql`create trigger ${sql.raw(`${fts}_insert`)} after insert on ${t} begin
      insert into ${f} (rowid, ${c}) values (new.id, new.${c});
    end`.execute(db);
    await sql`create trigger ${sql.raw(`${fts}_delete`)} after delete on ${t} begin
      insert into ${f} (${f}, rowid, ${c}) values ('delete', old.id, old.${c});
    end`.execute(db);
    await sql`create trigger ${sql.raw(`${fts}_update`)} after update of ${c} on ${t} begin
      insert into ${f} (${f}, rowid, ${c}) values ('delete', old.id, old.${c});
      insert into ${f} (rowid, ${c}) values (new.id, new.${c});
    end`.execute(db);
    await sql`insert into ${f} (${f}) values ('rebuild')`.execute(db);
  }
}

export async function down(db: AnyDb): Promise<void> {
  if (isPostgres(db)) {
    for (const { table, column } of SEARCHED) await db.schema.dropIndex(`${table}_${column}_trgm`).ifExists().execute();
  } else {
    for (const { fts } of SEARCHED) {
      for (const suffix of ['insert', 'delete', 'update']) await sql`drop trigger if exists ${sql.raw(`${fts}_${suffix}`)}`.execute(db);
      await sql`drop table if exists ${sql.raw(fts)}`.execute(db);
    }
  }
  await db.schema.dropIndex('orders_created').ifExists().execute();
  await db.schema.dropIndex('invoices_created').ifExists().execute();
  await db.schema.dropIndex('orders_status_created').ifExists().execute();
  await db.schema.dropIndex('invoices_status_created').ifExists().execute();
}
