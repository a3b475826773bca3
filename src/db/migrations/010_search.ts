// Lists and searches at a million rows (issue 13): the indexes the admin lists' queries use.
// - Client search (search, email, name, company: "contains", case-insensitive) — a substring match no b-tree can
//   serve. SQLite: an FTS5 table with the trigram tokenizer over the four columns, kept in step by triggers (external
//   content: the text lives only in `clients`). PostgreSQL: pg_trgm GIN indexes on the same lower-cased expressions
//   the query's LIKE uses. Both answer a pattern of 3 or more characters from the index; shorter ones still scan.
// - Status filters in list order: (status, created_at, id) on clients, (status, id) on orders and invoices;
//   (type, id) and (product_id, id) on orders.
import { sql } from 'kysely';
import { isPostgres, type AnyDb } from './helpers.ts';

export async function up(db: AnyDb): Promise<void> {
  await db.schema.createIndex('clients_status_created').on('clients').columns(['status', 'created_at', 'id']).execute();
  await db.schema.createIndex('orders_status_id').on('orders').columns(['status', 'id']).execute();
  await db.schema.createIndex('orders_type_id').on('orders').columns(['type', 'id']).execute();
  await db.schema.createIndex('orders_product_id').on('orders').columns(['product_id', 'id']).execute();
  await db.schema.createIndex('invoices_status_id').on('invoices').columns(['status', 'id']).execute();

  if (isPostgres(db)) {
    await sql`create extension if not exists pg_trgm`.execute(db);
    await sql`create index clients_email_trgm on clients using gin (email gin_trgm_ops)`.execute(db);
    await sql`create index clients_first_name_trgm on clients using gin (lower(first_name) gin_trgm_ops)`.execute(db);
    await sql`create index clients_last_name_trgm on clients using gin (lower(last_name) gin_trgm_ops)`.execute(db);
    await sql`create index clients_company_trgm on clients using gin (lower(company) gin_trgm_ops)`.execute(db);
    return;
  }
  await sql`create virtual table clients_search using fts5(email, first_name, last_name, company, content='clients', content_rowid='id', tokenize='trigram')`.execute(db);
  await sql`create trigger clients_search_insert after insert on clients begin
    insert into clients_search (rowid, email, first_name, last_name, company) values (new.id, new.email, new.first_name, new.last_name, new.company);
  end`.execute(db);
  await sql`create trigger clients_search_delete after delete on clients begin
    insert into clients_search (clients_search, rowid, email, first_name, last_name, company) values ('delete', old.id, old.email, old.first_name, old.last_name, old.company);
  end`.execute(db);
  await sql`create trigger clients_search_update after update of email, first_name, last_name, company on clients begin
    insert into clients_search (clients_search, rowid, email, first_name, last_name, company) values ('delete', old.id, old.email, old.first_name, old.last_name, old.company);
    insert into clients_search (rowid, email, first_name, last_name, company) values (new.id, new.email, new.first_name, new.last_name, new.company);
  end`.execute(db);
  await sql`insert into clients_search (clients_search) values ('rebuild')`.execute(db);
}

export async function down(db: AnyDb): Promise<void> {
  if (isPostgres(db)) {
    for (const name of ['clients_email_trgm', 'clients_first_name_trgm', 'clients_last_name_trgm', 'clients_company_trgm']) {
      await db.schema.dropIndex(name).ifExists().execute();
    }
  } else {
    for (const name of ['clients_search_insert', 'clients_search_delete', 'clients_search_update']) await sql`drop trigger if exists ${sql.raw(name)}`.execute(db);
    await sql`drop table if exists clients_search`.execute(db);
  }
  for (const name of ['clients_status_created', 'orders_status_id', 'orders_type_id', 'orders_product_id', 'invoices_status_id']) {
    await db.schema.dropIndex(name).ifExists().execute();
  }
}
