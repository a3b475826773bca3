// Lists at a million rows, third pass (issue 13): what lets every staff list and search answer without a scan.
// - `list_counts`: the number of clients, orders and invoices by status, kept by triggers, so an unfiltered list or
//   one filtered by status alone reads its total instead of counting the table. SQLite (one writer at a time): one
//   row per (table, status), updated in place by row triggers. PostgreSQL: statement triggers append one signed
//   delta row per status changed (no row is ever updated, so concurrent writers never wait on a counter row or
//   deadlock over two of them); a reader sums the deltas and folds them into one row per status now and then
//   (src/db/list-counts.ts).
// - Prefix indexes for searches of one or two characters (no trigram to look up; matched as "starts with"): the
//   lower-cased names, company, order title and invoice number, and the e-mail (stored lower-cased). PostgreSQL
//   indexes them with text_pattern_ops, which serves `LIKE 'ab%'` whatever the database's collation.
import { sql } from 'kysely';
import { isPostgres, type AnyDb } from './helpers.ts';

const COUNTED = ['clients', 'orders', 'invoices'] as const;

/** Index name → table and expression (lower-cased unless it is the e-mail, which is stored lower-cased). */
const PREFIXES = [
  { name: 'clients_email_prefix', table: 'clients', expression: 'email', sqlite: false },
  { name: 'clients_first_name_prefix', table: 'clients', expression: 'lower(first_name)', sqlite: true },
  { name: 'clients_last_name_prefix', table: 'clients', expression: 'lower(last_name)', sqlite: true },
  { name: 'clients_company_prefix', table: 'clients', expression: 'lower(company)', sqlite: true },
  { name: 'orders_title_prefix', table: 'orders', expression: 'lower(title)', sqlite: true },
  { name: 'invoices_number_prefix', table: 'invoices', expression: 'lower(number)', sqlite: true },
] as const;

export async function up(db: AnyDb): Promise<void> {
  const postgres = isPostgres(db);
  if (postgres) {
    await db.schema
      .createTable('list_counts')
      .addColumn('table_name', 'varchar(32)', (col) => col.notNull())
      .addColumn('status', 'varchar(32)', (col) => col.notNull())
      .addColumn('n', 'bigint', (col) => col.notNull())
      .execute();
    await db.schema.createIndex('list_counts_table').on('list_counts').column('table_name').execute();
    await sql`create function list_counts_delta() returns trigger language plpgsql as $$
      begin
        if tg_op = 'INSERT' then
          insert into list_counts (table_name, status, n) select tg_table_name, status, count(*) from new_rows group by status;
        elsif tg_op = 'DELETE' then
          insert into list_counts (table_name, status, n) select tg_table_name, status, -count(*) from old_rows group by status;
        else
          insert into list_counts (table_name, status, n)
            select tg_table_name, status, sum(d) from (select status, 1 as d from new_rows union all select status, -1 from old_rows) changed
            group by status having sum(d) <> 0;
        end if;
        return null;
      end $$`.execute(db);
    for (const table of COUNTED) {
      const t = sql.raw(table);
      // Triggers with transition tables name one event each. Creating them locks out writers until this migration
      // commits, so the counts taken below miss nothing and count nothing twice.
      await sql`create trigger ${sql.raw(`${table}_count_insert`)} after insert on ${t} referencing new table as new_rows for each statement execute function list_counts_delta()`.execute(db);
      await sql`create trigger ${sql.raw(`${table}_count_delete`)} after delete on ${t} referencing old table as old_rows for each statement execute function list_counts_delta()`.execute(db);
      await sql`create trigger ${sql.raw(`${table}_count_update`)} after update on ${t} referencing old table as old_rows new table as new_rows for each statement execute function list_counts_delta()`.execute(db);
    }
  } else {
    await db.schema
      .createTable('list_counts')
      .addColumn('table_name', 'varchar(32)', (col) => col.notNull())
      .addColumn('status', 'varchar(32)', (col) => col.notNull())
      .addColumn('n', 'integer', (col) => col.notNull())
      .addPrimaryKeyConstraint('list_counts_pk', ['table_name', 'status'])
      .execute();
    for (const table of COUNTED) {
      const t = sql.raw(table);
      const add = (status: string, delta: number) =>
        sql.raw(`insert into list_counts (table_name, status, n) values ('${table}', ${status}, ${delta}) on conflict (table_name, status) do update set n = n + ${delta};`);
      await sql`create trigger ${sql.raw(`${table}_count_insert`)} after insert on ${t} begin ${add('new.status', 1)} end`.execute(db);
      await sql`create trigger ${sql.raw(`${table}_count_delete`)} after delete on ${t} begin ${add('old.status', -1)} end`.execute(db);
      await sql`create trigger ${sql.raw(`${table}_count_update`)} after update of status on ${t} when old.status is not new.status begin
        ${add('old.status', -1)} ${add('new.status', 1)}
      end`.execute(db);
    }
  }
  for (const table of COUNTED) {
    await sql`insert into list_counts (table_name, status, n) select ${sql.lit(table)}, status, count(*) from ${sql.raw(table)} group by status`.execute(db);
  }

  for (const { name, table, expression, sqlite } of PREFIXES) {
    if (postgres) await sql`create index ${sql.raw(name)} on ${sql.raw(table)} (${sql.raw(expression)} text_pattern_ops)`.execute(db);
    // SQLite's unique index on the e-mail already serves its prefix ranges.
    else if (sqlite) await sql`create index ${sql.raw(name)} on ${sql.raw(table)} (${sql.raw(expression)})`.execute(db);
  }
}

export async function down(db: AnyDb): Promise<void> {
  for (const { name } of PREFIXES) await db.schema.dropIndex(name).ifExists().execute();
  for (const table of COUNTED) {
    for (const event of ['insert', 'delete', 'update']) {
      await sql`drop trigger if exists ${sql.raw(`${table}_count_${event}`)}${isPostgres(db) ? sql` on ${sql.raw(table)}` : sql``}`.execute(db);
    }
  }
  if (isPostgres(db)) await sql`drop function if exists list_counts_delta()`.execute(db);
  await db.schema.dropTable('list_counts').ifExists().execute();
}
