// The audit log (issue 25 items 8–9, docs/audit-log.md): one row per changing staff or API-token action, staff login
// or refused login, and system change worth recording. Append-only, kept so by the database itself: an UPDATE is
// always refused and a DELETE only inside the retention pruning's transaction, which marks itself by a row in
// `activity_log_pruning` (a table rather than a session variable, so one mechanism works on both dialects; on
// PostgreSQL the row is invisible to every other transaction until it is gone again).
import { sql } from 'kysely';
import { isPostgres, withId, type AnyDb } from './helpers.ts';

export async function up(db: AnyDb): Promise<void> {
  await withId(db, db.schema.createTable('activity_log'))
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    // FOSSBilling's priorities: 6 info (changes, logins), 4 warning (refused logins).
    .addColumn('priority', 'integer', (col) => col.notNull())
    // staff (a browser session), api_token, verifier, system, guest (a refused login).
    .addColumn('actor_type', 'varchar(16)', (col) => col.notNull())
    .addColumn('staff_id', 'integer')
    .addColumn('staff_name', 'varchar(255)')
    .addColumn('staff_email', 'varchar(254)')
    .addColumn('ip', 'varchar(64)')
    // `admin/order/update`, `guest/staff/login`, `system/order/suspend`.
    .addColumn('action', 'varchar(100)', (col) => col.notNull())
    .addColumn('target_type', 'varchar(50)')
    .addColumn('target_id', 'varchar(100)')
    // JSON: [{field, from, to}] or [{field, changed: true}] for secrets.
    .addColumn('changes', 'text', (col) => col.notNull())
    .addColumn('message', 'varchar(1000)', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('activity_log_created').on('activity_log').column('created_at').execute();
  await db.schema.createIndex('activity_log_staff').on('activity_log').columns(['staff_id', 'id']).execute();
  await db.schema.createIndex('activity_log_action').on('activity_log').columns(['action', 'id']).execute();
  await db.schema.createIndex('activity_log_target').on('activity_log').columns(['target_type', 'target_id', 'id']).execute();

  await db.schema.createTable('activity_log_pruning').addColumn('started_at', 'varchar(32)', (col) => col.notNull()).execute();

  if (isPostgres(db)) {
    await sql`create function activity_log_append_only() returns trigger language plpgsql as $$
      begin
        if tg_op = 'DELETE' and exists (select 1 from activity_log_pruning) then return old; end if;
        raise exception 'activity_log is append-only';
      end $$`.execute(db);
    await sql`create trigger activity_log_append_only before update or delete on activity_log
      for each row execute function activity_log_append_only()`.execute(db);
  } else {
    await sql`create trigger activity_log_no_update before update on activity_log
      begin select raise(abort, 'activity_log is append-only'); end`.execute(db);
    await sql`create trigger activity_log_no_delete before delete on activity_log
      when not exists (select 1 from activity_log_pruning)
      begin select raise(abort, 'activity_log is append-only'); end`.execute(db);
  }
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('activity_log').execute();
  await db.schema.dropTable('activity_log_pruning').execute();
  if (isPostgres(db)) await sql`drop function if exists activity_log_append_only()`.execute(db);
}
