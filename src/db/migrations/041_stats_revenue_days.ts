// The dashboard's revenue rollup (issue 25): money in and back per UTC day and currency, kept by the database itself in
// the same transaction as every write of an invoice, a transaction or a credit note (triggers), so the 12 months of a
// dashboard read a few hundred rows instead of a million invoices, and can never disagree with the tables they sum:
// - paid: totals of invoices paid (status paid or refunded), by paid_at;
// - balance_paid: payments from the client balance (gateway `credits`), by created_at (revenue.ts takes them off);
// - refunds: money given back (refunds with refund_of null, not to the balance), by created_at;
// - credit_notes: credit notes to the balance, by created_at.
// Every trigger takes the old row's part off and adds the new row's, so any change of status, date, amount or currency
// (and a delete) moves the figures exactly. The rows already there are summed in once, here.
import { sql } from 'kysely';
import { isPostgres, type AnyDb } from './helpers.ts';

interface Part {
  column: 'paid' | 'balance_paid' | 'refunds' | 'credit_notes';
  /** The row's moment column, its amount column, and when the row counts (SQL over the row's columns). */
  at: string;
  amount: string;
  when: string;
}

const PARTS: Record<'invoices' | 'transactions' | 'credit_notes', { parts: Part[]; columns: string[] }> = {
  invoices: { parts: [{ column: 'paid', at: 'paid_at', amount: 'total', when: "{r}.paid_at IS NOT NULL AND {r}.status IN ('paid', 'refunded')" }], columns: ['status', 'paid_at', 'total', 'currency'] },
  transactions: {
    parts: [
      { column: 'balance_paid', at: 'created_at', amount: 'amount', when: "{r}.type = 'payment' AND {r}.gateway = 'credits' AND {r}.status IN ('processed', 'refunded')" },
      { column: 'refunds', at: 'created_at', amount: 'amount', when: "{r}.type = 'refund' AND {r}.status = 'refunded' AND {r}.refund_of IS NULL AND ({r}.gateway IS NULL OR {r}.gateway <> 'credits')" },
    ],
    columns: ['type', 'status', 'gateway', 'amount', 'currency', 'created_at', 'refund_of'],
  },
  credit_notes: { parts: [{ column: 'credit_notes', at: 'created_at', amount: 'total', when: "{r}.method = 'balance'" }], columns: ['method', 'total', 'currency', 'created_at'] },
};

const rowRef = (text: string, row: string): string => text.replaceAll('{r}', row);

/** The statements that add (sign 1) or take off (sign -1) one row's parts, for SQLite's triggers. */
function sqliteBumps(parts: readonly Part[], row: 'NEW' | 'OLD', sign: 1 | -1): string {
  return parts
    .map((part) => {
      const day = `substr(${row}.${part.at}, 1, 10)`;
      const when = rowRef(part.when, row);
      return `INSERT OR IGNORE INTO stats_revenue_days (day, currency) SELECT ${day}, ${row}.currency WHERE ${when};
        UPDATE stats_revenue_days SET ${part.column} = ${part.column} + (${sign}) * ${row}.${part.amount} WHERE day = ${day} AND currency = ${row}.currency AND ${when};`;
    })
    .join('\n');
}

/**
 * The same for PostgreSQL's trigger functions. Which rows there are is asked of TG_OP: `OLD IS NOT NULL` would be
 * false for any row with a null column (a row is NULL-tested field by field).
 */
function postgresBumps(parts: readonly Part[], row: 'NEW' | 'OLD', sign: 1 | -1): string {
  return parts
    .map((part) => {
      const when = rowRef(part.when, row);
      return `IF TG_OP <> '${row === 'OLD' ? 'INSERT' : 'DELETE'}' AND ${when} THEN
          INSERT INTO stats_revenue_days (day, currency, ${part.column}) VALUES (substr(${row}.${part.at}, 1, 10), ${row}.currency, (${sign}) * ${row}.${part.amount})
          ON CONFLICT (day, currency) DO UPDATE SET ${part.column} = stats_revenue_days.${part.column} + excluded.${part.column};
        END IF;`;
    })
    .join('\n');
}

export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('stats_revenue_days')
    .addColumn('day', 'varchar(10)', (col) => col.notNull())
    .addColumn('currency', 'varchar(3)', (col) => col.notNull())
    .addColumn('paid', 'bigint', (col) => col.notNull().defaultTo(0))
    .addColumn('balance_paid', 'bigint', (col) => col.notNull().defaultTo(0))
    .addColumn('refunds', 'bigint', (col) => col.notNull().defaultTo(0))
    .addColumn('credit_notes', 'bigint', (col) => col.notNull().defaultTo(0))
    .addPrimaryKeyConstraint('stats_revenue_days_pk', ['day', 'currency'])
    .execute();
  const postgres = isPostgres(db);
  for (const [table, { parts, columns }] of Object.entries(PARTS)) {
    if (postgres) {
      await sql
        .raw(
          `CREATE FUNCTION stats_revenue_${table}() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN
            ${postgresBumps(parts, 'OLD', -1)}
            ${postgresBumps(parts, 'NEW', 1)}
            RETURN NULL;
          END $$`,
        )
        .execute(db);
      await sql.raw(`CREATE TRIGGER stats_revenue_${table} AFTER INSERT OR DELETE OR UPDATE OF ${columns.join(', ')} ON ${table} FOR EACH ROW EXECUTE FUNCTION stats_revenue_${table}()`).execute(db);
    } else {
      await sql.raw(`CREATE TRIGGER stats_revenue_${table}_insert AFTER INSERT ON ${table} BEGIN ${sqliteBumps(parts, 'NEW', 1)} END`).execute(db);
      await sql.raw(`CREATE TRIGGER stats_revenue_${table}_delete AFTER DELETE ON ${table} BEGIN ${sqliteBumps(parts, 'OLD', -1)} END`).execute(db);
      await sql
        .raw(`CREATE TRIGGER stats_revenue_${table}_update AFTER UPDATE OF ${columns.join(', ')} ON ${table} BEGIN ${sqliteBumps(parts, 'OLD', -1)} ${sqliteBumps(parts, 'NEW', 1)} END`)
        .execute(db);
    }
  }
  // What is there already, summed in once.
  for (const [table, { parts }] of Object.entries(PARTS)) {
    for (const part of parts) {
      await sql
        .raw(
          `INSERT INTO stats_revenue_days (day, currency, ${part.column})
           SELECT substr(r.${part.at}, 1, 10), r.currency, sum(r.${part.amount}) FROM ${table} r WHERE ${rowRef(part.when, 'r')} GROUP BY substr(r.${part.at}, 1, 10), r.currency
           ON CONFLICT (day, currency) DO UPDATE SET ${part.column} = stats_revenue_days.${part.column} + excluded.${part.column}`,
        )
        .execute(db);
    }
  }
}

export async function down(db: AnyDb): Promise<void> {
  const postgres = isPostgres(db);
  for (const table of Object.keys(PARTS)) {
    if (postgres) {
      await sql.raw(`DROP TRIGGER stats_revenue_${table} ON ${table}`).execute(db);
      await sql.raw(`DROP FUNCTION stats_revenue_${table}()`).execute(db);
    } else {
      for (const op of ['insert', 'delete', 'update']) await sql.raw(`DROP TRIGGER stats_revenue_${table}_${op}`).execute(db);
    }
  }
  await db.schema.dropTable('stats_revenue_days').execute();
}
