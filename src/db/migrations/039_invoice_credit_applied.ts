// Paying an invoice partly from the balance (issue 24): `credit_applied` is what the client's balance has paid of an
// unpaid invoice so far (minor units); a card or any gateway then pays only `total - credit_applied`. It goes back to 0
// (and the credit back to the balance) when the invoice is canceled, or paid in full by a payment that did not count it.
import type { AnyDb } from './helpers.ts';

export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('invoices').addColumn('credit_applied', 'bigint', (col) => col.notNull().defaultTo(0)).execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.alterTable('invoices').dropColumn('credit_applied').execute();
}
