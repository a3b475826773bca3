// Credit notes (issue 24 item 8): numbered documents that credit part or all of a paid invoice, for a refund of money
// or as credit to the client's balance. `credit_notes` holds the note and its totals, `credit_note_lines` what it
// credits of each invoice line (net), `credit_note_sequence` the one counter row their gapless numbers come from (an
// UPDATE … RETURNING inside the note's transaction: the row lock serialises PostgreSQL, a rollback gives the number
// back). `source_key` is unique: a refund transaction (`refund:<transaction id>`) or a staff request makes one note.
import { withId, type AnyDb } from './helpers.ts';

export async function up(db: AnyDb): Promise<void> {
  await withId(db, db.schema.createTable('credit_notes'))
    .addColumn('number', 'varchar(64)', (col) => col.notNull())
    .addColumn('invoice_id', 'integer', (col) => col.notNull())
    .addColumn('client_id', 'integer', (col) => col.notNull())
    .addColumn('currency', 'varchar(3)', (col) => col.notNull())
    // refund (money went back through a gateway or by hand) | balance (credited to the client's balance)
    .addColumn('method', 'varchar(16)', (col) => col.notNull())
    .addColumn('reason', 'varchar(500)', (col) => col.notNull())
    // Minor units: net credited, its tax, and their sum.
    .addColumn('subtotal', 'bigint', (col) => col.notNull())
    .addColumn('tax', 'bigint', (col) => col.notNull())
    .addColumn('total', 'bigint', (col) => col.notNull())
    .addColumn('tax_name', 'varchar(255)')
    .addColumn('tax_rate', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('transaction_id', 'integer')
    .addColumn('staff_id', 'integer')
    .addColumn('source_key', 'varchar(160)', (col) => col.notNull())
    .addColumn('created_at', 'varchar(32)', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('credit_notes_number').on('credit_notes').column('number').unique().execute();
  await db.schema.createIndex('credit_notes_source').on('credit_notes').column('source_key').unique().execute();
  await db.schema.createIndex('credit_notes_invoice').on('credit_notes').column('invoice_id').execute();
  await db.schema.createIndex('credit_notes_client').on('credit_notes').columns(['client_id', 'id']).execute();

  await withId(db, db.schema.createTable('credit_note_lines'))
    .addColumn('credit_note_id', 'integer', (col) => col.notNull())
    .addColumn('invoice_item_id', 'integer', (col) => col.notNull())
    .addColumn('title', 'varchar(255)', (col) => col.notNull())
    // Net minor units credited of that invoice line (after its share of the invoice's discount).
    .addColumn('amount', 'bigint', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('credit_note_lines_note').on('credit_note_lines').column('credit_note_id').execute();
  await db.schema.createIndex('credit_note_lines_item').on('credit_note_lines').column('invoice_item_id').execute();

  await db.schema
    .createTable('credit_note_sequence')
    .addColumn('name', 'varchar(32)', (col) => col.primaryKey())
    .addColumn('next_number', 'bigint', (col) => col.notNull())
    .execute();
  await db.insertInto('credit_note_sequence').values({ name: 'credit_note', next_number: 1 }).execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('credit_note_sequence').execute();
  await db.schema.dropTable('credit_note_lines').execute();
  await db.schema.dropTable('credit_notes').execute();
}
