// Credit notes (issue 24 item 8): numbered documents that credit part or all of a paid invoice, for a refund of money
// or as credit to the client's balance. `credit_notes` holds the note and its totals, `credit_note_lines` what it
// credits of each invoice line (net), `credit_note_sequence` the one counter row their gapless numbers come from (an
// UPDATE … RETURNING inside the note's transaction: the row lock serialises PostgreSQL, a rollback gives the number
// back). `source_key` is unique: a refund transaction (`refund:<transaction id>`) or a staff request makes one note.
//
// Refunds recorded before this migration get their notes here, in the order they were made (numbered from 1, dated as
// the refund), so what is left to credit of an invoice counts them as it counts every later refund.
import { withId, type AnyDb } from './helpers.ts';
import { lineBases, leftToCredit, splitByAmount, type CreditState } from '../../lib/credit-split.ts';

/** One note per invoice refund already recorded (a late payment's refund, `refund_of` set, gave back other money). */
async function backfill(db: AnyDb): Promise<number> {
  const refunds = await db
    .selectFrom('transactions')
    .select(['id', 'invoice_id', 'amount', 'created_at'])
    .where('type', '=', 'refund')
    .where('status', '=', 'refunded')
    .where('refund_of', 'is', null)
    .orderBy('id')
    .execute();
  const states = new Map<number, { state: CreditState; items: Array<{ id: number; title: string }> }>();
  let next = 1;
  for (const refund of refunds) {
    const invoice = await db.selectFrom('invoices').selectAll().where('id', '=', refund.invoice_id).executeTakeFirst();
    if (invoice === undefined) continue;
    let known = states.get(invoice.id);
    if (known === undefined) {
      const items = await db.selectFrom('invoice_items').select(['id', 'title', 'total']).where('invoice_id', '=', invoice.id).orderBy('id').execute();
      const bases = lineBases(items.map((item: { total: number | string }) => Number(item.total)), Number(invoice.discount));
      known = { items, state: { bases, credited: bases.map(() => 0), tax: Number(invoice.tax), taxCredited: 0 } };
      states.set(invoice.id, known);
    }
    const amount = Math.min(Number(refund.amount), leftToCredit(known.state));
    if (amount <= 0) continue;
    const split = splitByAmount(known.state, amount);
    const note = await db
      .insertInto('credit_notes')
      .values({
        number: `CN-${next}`,
        invoice_id: invoice.id,
        client_id: invoice.client_id,
        currency: invoice.currency,
        method: 'refund',
        reason: 'Refund',
        subtotal: split.net,
        tax: split.tax,
        total: split.total,
        tax_name: invoice.tax_name,
        tax_rate: invoice.tax_rate,
        transaction_id: refund.id,
        staff_id: null,
        source_key: `refund:${refund.id}`,
        created_at: refund.created_at,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    next += 1;
    const lines = known.items.map((item, index) => ({ credit_note_id: note.id, invoice_item_id: item.id, title: item.title, amount: split.lines[index]! })).filter((line) => line.amount > 0);
    if (lines.length > 0) await db.insertInto('credit_note_lines').values(lines).execute();
    const state = known.state;
    known.state = { ...state, credited: state.credited.map((value, index) => value + split.lines[index]!), taxCredited: state.taxCredited + split.tax };
  }
  return next;
}

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
  await db.insertInto('credit_note_sequence').values({ name: 'credit_note', next_number: await backfill(db) }).execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('credit_note_sequence').execute();
  await db.schema.dropTable('credit_note_lines').execute();
  await db.schema.dropTable('credit_notes').execute();
}
