// The revenue rollup keyed by the rate as well (issue 26 item 7: reports in the default currency at the stored rates).
// Migrations 041 and 052 summed money per UTC day and currency; an amount in another currency can only be brought
// into the default at the rate stored on its invoice (FOSSBilling's `currency_rate`), and one day's euros may come at
// several rates. So the rollup's key becomes (day, currency, rate, base): `rate` and `base` are the invoice's
// `currency_rate` and `currency_base` ('1' and its own currency for invoices issued in the default before migration
// 048), and a transaction, credit note or invoice line counts under its invoice's. The reader sums each key's amounts
// and converts each sum once (stats/revenue.ts), so the dashboard still reads a few hundred rows however many invoices
// there are; with one currency there is one rate per day and the row count is what it was.
// The table is rebuilt: 041's and 052's triggers and table are dropped, the new ones created, and the rows already
// there summed in once (041 and 052 stay as they were: an instance may have run them). What each column sums is
// unchanged (see 041 and 052): paid, balance_paid, refunds and credit_notes by the row's own moment, usage and top_ups
// (the `usage` and `deposit` lines of paid invoices) by their invoice's paid_at. Every trigger takes the old row's
// part off and adds the new row's, in the writing transaction. A rate and a base never change once an invoice is
// issued (invoice/service.ts writes them at insert) and an invoice with transactions cannot be deleted (their foreign
// key), so a transaction's or note's key read through its invoice is the same when it is added and when taken off.
import { sql } from 'kysely';
import { up as rollupByDay } from './041_stats_revenue_days.ts';
import { up as linesByDay } from './052_stats_line_revenue.ts';
import { isPostgres, type AnyDb } from './helpers.ts';

type Column = 'paid' | 'balance_paid' | 'refunds' | 'credit_notes';

/** A row's part in one column: its moment, its amount, and when it counts (SQL over the row `{r}`). */
interface Part {
  column: Column;
  at: string;
  amount: string;
  when: string;
}

const PAID = "IN ('paid', 'refunded')";
const LINE_TASKS = "IN ('usage', 'deposit')";

const INVOICE_PAID: Part = { column: 'paid', at: 'paid_at', amount: 'total', when: `{r}.paid_at IS NOT NULL AND {r}.status ${PAID}` };
/** Transactions and credit notes: their parts, keyed through their invoice. */
const THROUGH_INVOICE: Record<'transactions' | 'credit_notes', { parts: Part[]; columns: string }> = {
  transactions: {
    parts: [
      { column: 'balance_paid', at: 'created_at', amount: 'amount', when: "{r}.type = 'payment' AND {r}.gateway = 'credits' AND {r}.status IN ('processed', 'refunded')" },
      { column: 'refunds', at: 'created_at', amount: 'amount', when: "{r}.type = 'refund' AND {r}.status = 'refunded' AND {r}.refund_of IS NULL AND ({r}.gateway IS NULL OR {r}.gateway <> 'credits')" },
    ],
    columns: 'type, status, gateway, amount, currency, created_at, refund_of, invoice_id',
  },
  credit_notes: { parts: [{ column: 'credit_notes', at: 'created_at', amount: 'total', when: "{r}.method = 'balance'" }], columns: 'method, total, currency, created_at, invoice_id' },
};
const INVOICE_COLUMNS = 'status, paid_at, total, currency, currency_rate, currency_base';
const LINE_COLUMNS = 'invoice_id, task, total';

const rowRef = (text: string, row: string): string => text.replaceAll('{r}', row);
/** An invoice row's key columns. */
const rateOf = (invoice: string): string => `coalesce(${invoice}.currency_rate, '1')`;
const baseOf = (invoice: string): string => `coalesce(${invoice}.currency_base, ${invoice}.currency)`;
/**
 * A transaction's or credit note's key columns, read through its invoice: its rate and base, or '1' and the row's own
 * currency when the invoice has none (issued before migration 048) — as currency/selling.ts storedRateConverter reads
 * them — so the key never depends on a column of the invoice that may change.
 */
const invoiceRateOf = (row: string): string => `coalesce((SELECT i.currency_rate FROM invoices i WHERE i.id = ${row}.invoice_id), '1')`;
const invoiceBaseOf = (row: string): string => `coalesce((SELECT i.currency_base FROM invoices i WHERE i.id = ${row}.invoice_id), ${row}.currency)`;
/** The sums of one invoice's usage and top-up lines. */
const lineSum = (invoice: string, task: string): string => `(SELECT coalesce(sum(l.total), 0) FROM invoice_items l WHERE l.invoice_id = ${invoice}.id AND l.task = '${task}')`;
const usageOf = (line: string): string => `(CASE WHEN ${line}.task = 'usage' THEN ${line}.total ELSE 0 END)`;
const topUpOf = (line: string): string => `(CASE WHEN ${line}.task = 'deposit' THEN ${line}.total ELSE 0 END)`;

/** One amount added to (or taken off) the rollup row of a key, as SQL values. */
interface Bump {
  day: string;
  currency: string;
  rate: string;
  base: string;
  when: string;
  /** Column → the amount to add (already signed). */
  amounts: Partial<Record<Column | 'usage' | 'top_ups', string>>;
}

function partBump(part: Part, row: string, sign: 1 | -1, rate: string, base: string): Bump {
  return { day: `substr(${row}.${part.at}, 1, 10)`, currency: `${row}.currency`, rate, base, when: rowRef(part.when, row), amounts: { [part.column]: `(${sign}) * ${row}.${part.amount}` } };
}

/** An invoice row's bumps: its total as paid, and its lines' usage and top-ups. */
function invoiceBumps(row: string, sign: 1 | -1): Bump[] {
  const key = { day: `substr(${row}.paid_at, 1, 10)`, currency: `${row}.currency`, rate: rateOf(row), base: baseOf(row), when: rowRef(INVOICE_PAID.when, row) };
  return [
    { ...key, amounts: { paid: `(${sign}) * ${row}.total` } },
    { ...key, amounts: { usage: `(${sign}) * ${lineSum(row, 'usage')}`, top_ups: `(${sign}) * ${lineSum(row, 'deposit')}` } },
  ];
}

function throughInvoiceBumps(table: keyof typeof THROUGH_INVOICE, row: string, sign: 1 | -1): Bump[] {
  return THROUGH_INVOICE[table].parts.map((part) => partBump(part, row, sign, invoiceRateOf(row), invoiceBaseOf(row)));
}

/** SQLite: a bump as two statements (the key's row made if missing, then the amounts added), both under `when`. */
function sqliteBump(bump: Bump): string {
  const sets = Object.entries(bump.amounts)
    .map(([column, amount]) => `${column} = ${column} + ${amount}`)
    .join(', ');
  return `INSERT OR IGNORE INTO stats_revenue_days (day, currency, rate, base) SELECT ${bump.day}, ${bump.currency}, ${bump.rate}, ${bump.base} WHERE ${bump.when};
    UPDATE stats_revenue_days SET ${sets} WHERE day = ${bump.day} AND currency = ${bump.currency} AND rate = ${bump.rate} AND base = ${bump.base} AND ${bump.when};`;
}

/** SQLite: a line row's bump, through its invoice as it is now (a line of an invoice not paid counts nothing). */
function sqliteLine(row: 'NEW' | 'OLD', sign: 1 | -1): string {
  const invoice = `SELECT substr(i.paid_at, 1, 10), i.currency, ${rateOf('i')}, ${baseOf('i')} FROM invoices i
    WHERE i.id = ${row}.invoice_id AND i.paid_at IS NOT NULL AND i.status ${PAID} AND ${row}.task ${LINE_TASKS}`;
  return `INSERT OR IGNORE INTO stats_revenue_days (day, currency, rate, base) ${invoice};
    UPDATE stats_revenue_days SET usage = usage + (${sign}) * ${usageOf(row)}, top_ups = top_ups + (${sign}) * ${topUpOf(row)} WHERE (day, currency, rate, base) IN (${invoice});`;
}

/** PostgreSQL: a bump as one upsert, under `when`; which rows there are is asked of TG_OP (see migration 041). */
function postgresBump(bump: Bump, row: 'NEW' | 'OLD'): string {
  const columns = Object.keys(bump.amounts);
  const updates = columns.map((column) => `${column} = stats_revenue_days.${column} + excluded.${column}`).join(', ');
  return `IF TG_OP <> '${row === 'OLD' ? 'INSERT' : 'DELETE'}' AND ${bump.when} THEN
      INSERT INTO stats_revenue_days (day, currency, rate, base, ${columns.join(', ')}) VALUES (${bump.day}, ${bump.currency}, ${bump.rate}, ${bump.base}, ${Object.values(bump.amounts).join(', ')})
      ON CONFLICT (day, currency, rate, base) DO UPDATE SET ${updates};
    END IF;`;
}

/** PostgreSQL: a line row's bump, through its invoice read FOR SHARE (a concurrent status change waits, see 052). */
function postgresLine(row: 'NEW' | 'OLD', sign: 1 | -1): string {
  return `IF TG_OP <> '${row === 'OLD' ? 'INSERT' : 'DELETE'}' AND ${row}.task ${LINE_TASKS} THEN
      SELECT substr(i.paid_at, 1, 10) AS day, i.currency, ${rateOf('i')} AS rate, ${baseOf('i')} AS base INTO inv FROM invoices i
        WHERE i.id = ${row}.invoice_id AND i.paid_at IS NOT NULL AND i.status ${PAID} FOR SHARE;
      IF FOUND THEN
        INSERT INTO stats_revenue_days (day, currency, rate, base, usage, top_ups) VALUES (inv.day, inv.currency, inv.rate, inv.base, (${sign}) * ${usageOf(row)}, (${sign}) * ${topUpOf(row)})
        ON CONFLICT (day, currency, rate, base) DO UPDATE SET usage = stats_revenue_days.usage + excluded.usage, top_ups = stats_revenue_days.top_ups + excluded.top_ups;
      END IF;
    END IF;`;
}

async function postgresFunction(db: AnyDb, name: string, body: string, declare = ''): Promise<void> {
  await sql.raw(`CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$ ${declare} BEGIN ${body} IF TG_OP = 'DELETE' THEN RETURN OLD; END IF; RETURN NULL; END $$`).execute(db);
}

async function createPostgresTriggers(db: AnyDb): Promise<void> {
  const both = (bumps: (row: 'NEW' | 'OLD', sign: 1 | -1) => Bump[]): string =>
    [...bumps('OLD', -1).map((bump) => postgresBump(bump, 'OLD')), ...bumps('NEW', 1).map((bump) => postgresBump(bump, 'NEW'))].join('\n');
  // An invoice's part is taken off BEFORE it is deleted: its lines' sums are read before the cascade removes them.
  await postgresFunction(db, 'stats_rates_invoices', both(invoiceBumps));
  await sql.raw(`CREATE TRIGGER stats_rates_invoices AFTER INSERT OR UPDATE OF ${INVOICE_COLUMNS} ON invoices FOR EACH ROW EXECUTE FUNCTION stats_rates_invoices()`).execute(db);
  await sql.raw(`CREATE TRIGGER stats_rates_invoices_delete BEFORE DELETE ON invoices FOR EACH ROW EXECUTE FUNCTION stats_rates_invoices()`).execute(db);
  for (const table of ['transactions', 'credit_notes'] as const) {
    await postgresFunction(db, `stats_rates_${table}`, both((row, sign) => throughInvoiceBumps(table, row, sign)));
    await sql.raw(`CREATE TRIGGER stats_rates_${table} AFTER INSERT OR DELETE OR UPDATE OF ${THROUGH_INVOICE[table].columns} ON ${table} FOR EACH ROW EXECUTE FUNCTION stats_rates_${table}()`).execute(db);
  }
  await postgresFunction(db, 'stats_rates_invoice_items', `${postgresLine('OLD', -1)}\n${postgresLine('NEW', 1)}`, 'DECLARE inv record;');
  await sql.raw(`CREATE TRIGGER stats_rates_invoice_items AFTER INSERT OR DELETE OR UPDATE OF ${LINE_COLUMNS} ON invoice_items FOR EACH ROW EXECUTE FUNCTION stats_rates_invoice_items()`).execute(db);
}

async function createSqliteTriggers(db: AnyDb): Promise<void> {
  const statements = (bumps: Bump[]): string => bumps.map(sqliteBump).join('\n');
  const triggers: Array<[name: string, timing: string, body: string]> = [
    ['stats_rates_invoices_insert', 'AFTER INSERT ON invoices', statements(invoiceBumps('NEW', 1))],
    ['stats_rates_invoices_update', `AFTER UPDATE OF ${INVOICE_COLUMNS} ON invoices`, statements([...invoiceBumps('OLD', -1), ...invoiceBumps('NEW', 1)])],
    // Before the delete: its lines' sums are read before the cascade removes them.
    ['stats_rates_invoices_delete', 'BEFORE DELETE ON invoices', statements(invoiceBumps('OLD', -1))],
    ['stats_rates_invoice_items_insert', 'AFTER INSERT ON invoice_items', sqliteLine('NEW', 1)],
    ['stats_rates_invoice_items_delete', 'AFTER DELETE ON invoice_items', sqliteLine('OLD', -1)],
    ['stats_rates_invoice_items_update', `AFTER UPDATE OF ${LINE_COLUMNS} ON invoice_items`, `${sqliteLine('OLD', -1)}\n${sqliteLine('NEW', 1)}`],
  ];
  for (const table of ['transactions', 'credit_notes'] as const) {
    triggers.push(
      [`stats_rates_${table}_insert`, `AFTER INSERT ON ${table}`, statements(throughInvoiceBumps(table, 'NEW', 1))],
      [`stats_rates_${table}_delete`, `AFTER DELETE ON ${table}`, statements(throughInvoiceBumps(table, 'OLD', -1))],
      [`stats_rates_${table}_update`, `AFTER UPDATE OF ${THROUGH_INVOICE[table].columns} ON ${table}`, statements([...throughInvoiceBumps(table, 'OLD', -1), ...throughInvoiceBumps(table, 'NEW', 1)])],
    );
  }
  for (const [name, timing, body] of triggers) await sql.raw(`CREATE TRIGGER ${name} ${timing} BEGIN ${body} END`).execute(db);
}

/** 041's and 052's triggers and functions. */
async function dropDayTriggers(db: AnyDb): Promise<void> {
  if (isPostgres(db)) {
    for (const table of ['invoices', 'transactions', 'credit_notes']) {
      await sql.raw(`DROP TRIGGER stats_revenue_${table} ON ${table}`).execute(db);
      await sql.raw(`DROP FUNCTION stats_revenue_${table}()`).execute(db);
    }
    await sql.raw('DROP TRIGGER stats_lines_invoice_items ON invoice_items').execute(db);
    await sql.raw('DROP TRIGGER stats_lines_invoices ON invoices').execute(db);
    await sql.raw('DROP TRIGGER stats_lines_invoices_delete ON invoices').execute(db);
    await sql.raw('DROP FUNCTION stats_lines_invoice_items()').execute(db);
    await sql.raw('DROP FUNCTION stats_lines_invoices()').execute(db);
  } else {
    for (const table of ['invoices', 'transactions', 'credit_notes']) for (const op of ['insert', 'delete', 'update']) await sql.raw(`DROP TRIGGER stats_revenue_${table}_${op}`).execute(db);
    for (const name of ['invoice_items_insert', 'invoice_items_delete', 'invoice_items_update', 'invoices_update', 'invoices_delete']) await sql.raw(`DROP TRIGGER stats_lines_${name}`).execute(db);
  }
}

/** The rows already there, summed in once per key. */
async function backfill(db: AnyDb): Promise<void> {
  const upsert = (columns: string[]): string =>
    `ON CONFLICT (day, currency, rate, base) DO UPDATE SET ${columns.map((column) => `${column} = stats_revenue_days.${column} + excluded.${column}`).join(', ')}`;
  await sql
    .raw(
      `INSERT INTO stats_revenue_days (day, currency, rate, base, paid)
       SELECT substr(r.paid_at, 1, 10), r.currency, ${rateOf('r')}, ${baseOf('r')}, sum(r.total) FROM invoices r WHERE ${rowRef(INVOICE_PAID.when, 'r')}
       GROUP BY substr(r.paid_at, 1, 10), r.currency, ${rateOf('r')}, ${baseOf('r')} ${upsert(['paid'])}`,
    )
    .execute(db);
  for (const [table, { parts }] of Object.entries(THROUGH_INVOICE)) {
    for (const part of parts) {
      await sql
        .raw(
          `INSERT INTO stats_revenue_days (day, currency, rate, base, ${part.column})
           SELECT substr(r.${part.at}, 1, 10), r.currency, coalesce(i.currency_rate, '1'), coalesce(i.currency_base, r.currency), sum(r.${part.amount})
           FROM ${table} r LEFT JOIN invoices i ON i.id = r.invoice_id WHERE ${rowRef(part.when, 'r')}
           GROUP BY substr(r.${part.at}, 1, 10), r.currency, coalesce(i.currency_rate, '1'), coalesce(i.currency_base, r.currency) ${upsert([part.column])}`,
        )
        .execute(db);
    }
  }
  await sql
    .raw(
      `INSERT INTO stats_revenue_days (day, currency, rate, base, usage, top_ups)
       SELECT substr(i.paid_at, 1, 10), i.currency, ${rateOf('i')}, ${baseOf('i')}, sum(${usageOf('l')}), sum(${topUpOf('l')})
       FROM invoices i JOIN invoice_items l ON l.invoice_id = i.id
       WHERE i.paid_at IS NOT NULL AND i.status ${PAID} AND l.task ${LINE_TASKS}
       GROUP BY substr(i.paid_at, 1, 10), i.currency, ${rateOf('i')}, ${baseOf('i')} ${upsert(['usage', 'top_ups'])}`,
    )
    .execute(db);
}

export async function up(db: AnyDb): Promise<void> {
  await dropDayTriggers(db);
  await db.schema.dropTable('stats_revenue_days').execute();
  let table = db.schema
    .createTable('stats_revenue_days')
    .addColumn('day', 'varchar(10)', (col) => col.notNull())
    .addColumn('currency', 'varchar(3)', (col) => col.notNull())
    // The rate as the invoice stores it (text: the exact decimal staff set), and the default it was against.
    .addColumn('rate', 'varchar(32)', (col) => col.notNull())
    .addColumn('base', 'varchar(3)', (col) => col.notNull())
    .addPrimaryKeyConstraint('stats_revenue_days_pk', ['day', 'currency', 'rate', 'base']);
  for (const column of ['paid', 'balance_paid', 'refunds', 'credit_notes', 'usage', 'top_ups']) table = table.addColumn(column, 'bigint', (col) => col.notNull().defaultTo(0));
  await table.execute();
  await (isPostgres(db) ? createPostgresTriggers(db) : createSqliteTriggers(db));
  await backfill(db);
}

export async function down(db: AnyDb): Promise<void> {
  if (isPostgres(db)) {
    for (const table of ['invoices', 'transactions', 'credit_notes', 'invoice_items']) await sql.raw(`DROP TRIGGER stats_rates_${table} ON ${table}`).execute(db);
    await sql.raw('DROP TRIGGER stats_rates_invoices_delete ON invoices').execute(db);
    for (const table of ['invoices', 'transactions', 'credit_notes', 'invoice_items']) await sql.raw(`DROP FUNCTION stats_rates_${table}()`).execute(db);
  } else {
    for (const table of ['invoices', 'transactions', 'credit_notes', 'invoice_items']) for (const op of ['insert', 'delete', 'update']) await sql.raw(`DROP TRIGGER stats_rates_${table}_${op}`).execute(db);
  }
  await db.schema.dropTable('stats_revenue_days').execute();
  // The per-day rollup of 041 and 052 again, rebuilt from the tables.
  await rollupByDay(db);
  await linesByDay(db);
}
