// The dashboard's usage (overage) and top-up revenue in the daily rollup of migration 041 (issue 25 item 3): two more
// columns of stats_revenue_days — `usage` and `top_ups`, the totals of the `usage` and `deposit` lines of invoices paid
// (status paid or refunded), by the invoice's paid_at day and currency — kept by the database in the same transaction
// as every write of an invoice line or of an invoice's status, paid_at or currency (triggers), so the figure reads the
// range's rollup rows instead of every invoice line. Migrations 040 and 041 stay as they were (an instance may have run
// them): this one adds the columns, the triggers and the backfill.
// - A line's trigger takes its old row off and adds its new row, each through its invoice as it is now (a line of an
//   invoice not paid counts nothing). On PostgreSQL the invoice is read FOR SHARE, so a concurrent change of that
//   invoice's status waits for the line's transaction and then sums its lines with the line included.
// - An invoice's trigger, on a change of status, paid_at or currency, takes its lines' sums off the old day and
//   currency and adds them to the new ones; on delete it runs BEFORE the row goes (and before the cascade deletes the
//   lines, whose own triggers then find no invoice and count nothing).
import { sql } from 'kysely';
import { isPostgres, type AnyDb } from './helpers.ts';

const PAID = "IN ('paid', 'refunded')";
const LINE_TASKS = "IN ('usage', 'deposit')";
const usageOf = (row: string): string => `(CASE WHEN ${row}.task = 'usage' THEN ${row}.total ELSE 0 END)`;
const topUpOf = (row: string): string => `(CASE WHEN ${row}.task = 'deposit' THEN ${row}.total ELSE 0 END)`;
/** The sums of one invoice's usage and top-up lines, as two scalar subqueries. */
const lineSum = (invoice: string, task: string): string => `(SELECT coalesce(sum(l.total), 0) FROM invoice_items l WHERE l.invoice_id = ${invoice}.id AND l.task = '${task}')`;

/** SQLite: one line row's part (sign 1 adds, -1 takes off), through its invoice as it is now. */
function sqliteLine(row: 'NEW' | 'OLD', sign: 1 | -1): string {
  const invoice = `SELECT substr(i.paid_at, 1, 10), i.currency FROM invoices i WHERE i.id = ${row}.invoice_id AND i.paid_at IS NOT NULL AND i.status ${PAID} AND ${row}.task ${LINE_TASKS}`;
  return `INSERT OR IGNORE INTO stats_revenue_days (day, currency) ${invoice};
    UPDATE stats_revenue_days SET usage = usage + (${sign}) * ${usageOf(row)}, top_ups = top_ups + (${sign}) * ${topUpOf(row)} WHERE (day, currency) IN (${invoice});`;
}

/** SQLite: one invoice row's lines (sign 1 adds, -1 takes off). */
function sqliteInvoice(row: 'NEW' | 'OLD', sign: 1 | -1): string {
  const when = `${row}.paid_at IS NOT NULL AND ${row}.status ${PAID}`;
  return `INSERT OR IGNORE INTO stats_revenue_days (day, currency) SELECT substr(${row}.paid_at, 1, 10), ${row}.currency WHERE ${when};
    UPDATE stats_revenue_days SET usage = usage + (${sign}) * ${lineSum(row, 'usage')}, top_ups = top_ups + (${sign}) * ${lineSum(row, 'deposit')}
    WHERE day = substr(${row}.paid_at, 1, 10) AND currency = ${row}.currency AND ${when};`;
}

const UPSERT = `ON CONFLICT (day, currency) DO UPDATE SET usage = stats_revenue_days.usage + excluded.usage, top_ups = stats_revenue_days.top_ups + excluded.top_ups`;

/** PostgreSQL: one line row's part, through its invoice (read FOR SHARE). */
function postgresLine(row: 'NEW' | 'OLD', sign: 1 | -1): string {
  return `IF TG_OP <> '${row === 'OLD' ? 'INSERT' : 'DELETE'}' AND ${row}.task ${LINE_TASKS} THEN
      SELECT substr(i.paid_at, 1, 10) AS day, i.currency INTO inv FROM invoices i
        WHERE i.id = ${row}.invoice_id AND i.paid_at IS NOT NULL AND i.status ${PAID} FOR SHARE;
      IF FOUND THEN
        INSERT INTO stats_revenue_days (day, currency, usage, top_ups) VALUES (inv.day, inv.currency, (${sign}) * ${usageOf(row)}, (${sign}) * ${topUpOf(row)}) ${UPSERT};
      END IF;
    END IF;`;
}

/** PostgreSQL: one invoice row's lines. */
function postgresInvoice(row: 'NEW' | 'OLD', sign: 1 | -1): string {
  return `IF TG_OP <> '${row === 'OLD' ? 'INSERT' : 'DELETE'}' AND ${row}.paid_at IS NOT NULL AND ${row}.status ${PAID} THEN
      SELECT ${lineSum(row, 'usage')}, ${lineSum(row, 'deposit')} INTO u, t;
      IF u <> 0 OR t <> 0 THEN
        INSERT INTO stats_revenue_days (day, currency, usage, top_ups) VALUES (substr(${row}.paid_at, 1, 10), ${row}.currency, (${sign}) * u, (${sign}) * t) ${UPSERT};
      END IF;
    END IF;`;
}

const INVOICE_COLUMNS = 'status, paid_at, currency';
const LINE_COLUMNS = 'invoice_id, task, total';

export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('stats_revenue_days').addColumn('usage', 'bigint', (col) => col.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('stats_revenue_days').addColumn('top_ups', 'bigint', (col) => col.notNull().defaultTo(0)).execute();
  if (isPostgres(db)) {
    await sql
      .raw(
        `CREATE FUNCTION stats_lines_invoice_items() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE inv record;
        BEGIN
          ${postgresLine('OLD', -1)}
          ${postgresLine('NEW', 1)}
          RETURN NULL;
        END $$`,
      )
      .execute(db);
    await sql.raw(`CREATE TRIGGER stats_lines_invoice_items AFTER INSERT OR DELETE OR UPDATE OF ${LINE_COLUMNS} ON invoice_items FOR EACH ROW EXECUTE FUNCTION stats_lines_invoice_items()`).execute(db);
    await sql
      .raw(
        `CREATE FUNCTION stats_lines_invoices() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE u bigint; t bigint;
        BEGIN
          ${postgresInvoice('OLD', -1)}
          ${postgresInvoice('NEW', 1)}
          IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
          RETURN NULL;
        END $$`,
      )
      .execute(db);
    await sql.raw(`CREATE TRIGGER stats_lines_invoices AFTER UPDATE OF ${INVOICE_COLUMNS} ON invoices FOR EACH ROW EXECUTE FUNCTION stats_lines_invoices()`).execute(db);
    await sql.raw(`CREATE TRIGGER stats_lines_invoices_delete BEFORE DELETE ON invoices FOR EACH ROW EXECUTE FUNCTION stats_lines_invoices()`).execute(db);
  } else {
    await sql.raw(`CREATE TRIGGER stats_lines_invoice_items_insert AFTER INSERT ON invoice_items BEGIN ${sqliteLine('NEW', 1)} END`).execute(db);
    await sql.raw(`CREATE TRIGGER stats_lines_invoice_items_delete AFTER DELETE ON invoice_items BEGIN ${sqliteLine('OLD', -1)} END`).execute(db);
    await sql.raw(`CREATE TRIGGER stats_lines_invoice_items_update AFTER UPDATE OF ${LINE_COLUMNS} ON invoice_items BEGIN ${sqliteLine('OLD', -1)} ${sqliteLine('NEW', 1)} END`).execute(db);
    await sql.raw(`CREATE TRIGGER stats_lines_invoices_update AFTER UPDATE OF ${INVOICE_COLUMNS} ON invoices BEGIN ${sqliteInvoice('OLD', -1)} ${sqliteInvoice('NEW', 1)} END`).execute(db);
    await sql.raw(`CREATE TRIGGER stats_lines_invoices_delete BEFORE DELETE ON invoices BEGIN ${sqliteInvoice('OLD', -1)} END`).execute(db);
  }
  // The lines already there, summed in once.
  await sql
    .raw(
      `INSERT INTO stats_revenue_days (day, currency, usage, top_ups)
       SELECT substr(i.paid_at, 1, 10), i.currency, sum(${usageOf('l')}), sum(${topUpOf('l')})
       FROM invoices i JOIN invoice_items l ON l.invoice_id = i.id
       WHERE i.paid_at IS NOT NULL AND i.status ${PAID} AND l.task ${LINE_TASKS}
       GROUP BY substr(i.paid_at, 1, 10), i.currency
       ${UPSERT}`,
    )
    .execute(db);
}

export async function down(db: AnyDb): Promise<void> {
  if (isPostgres(db)) {
    await sql.raw('DROP TRIGGER stats_lines_invoice_items ON invoice_items').execute(db);
    await sql.raw('DROP TRIGGER stats_lines_invoices ON invoices').execute(db);
    await sql.raw('DROP TRIGGER stats_lines_invoices_delete ON invoices').execute(db);
    await sql.raw('DROP FUNCTION stats_lines_invoice_items()').execute(db);
    await sql.raw('DROP FUNCTION stats_lines_invoices()').execute(db);
  } else {
    for (const name of ['invoice_items_insert', 'invoice_items_delete', 'invoice_items_update', 'invoices_update', 'invoices_delete']) await sql.raw(`DROP TRIGGER stats_lines_${name}`).execute(db);
  }
  await db.schema.alterTable('stats_revenue_days').dropColumn('top_ups').execute();
  await db.schema.alterTable('stats_revenue_days').dropColumn('usage').execute();
}
