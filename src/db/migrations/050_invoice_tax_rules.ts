// EU VAT on invoices (issue 26 item 2 and 4): the rule that chose each line's rate (`domestic`, `reverse_charge`,
// `oss`, `export`, `manual`, `exempt`, `untaxed`), also on the invoice for reports (one invoice has one buyer, so its
// lines share the rule); the evidence of the buyer's country and VAT number at issue (JSON); and whether its prices
// included tax (then `tax` was extracted from `subtotal − discount`, which is the total). Invoices issued before this
// migration were taxed by the manual rules with prices excluding tax.
import type { AnyDb } from './helpers.ts';

export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('invoices').addColumn('tax_rule', 'varchar(20)', (col) => col.notNull().defaultTo('manual')).execute();
  await db.schema.alterTable('invoices').addColumn('tax_inclusive', 'integer', (col) => col.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('invoices').addColumn('tax_evidence', 'text').execute();
  await db.schema.alterTable('invoice_items').addColumn('tax_rule', 'varchar(20)', (col) => col.notNull().defaultTo('manual')).execute();
  // The OSS report reads one rule's invoices by date.
  await db.schema.createIndex('invoices_tax_rule').on('invoices').columns(['tax_rule', 'created_at']).execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropIndex('invoices_tax_rule').ifExists().execute();
  await db.schema.alterTable('invoice_items').dropColumn('tax_rule').execute();
  await db.schema.alterTable('invoices').dropColumn('tax_evidence').execute();
  await db.schema.alterTable('invoices').dropColumn('tax_inclusive').execute();
  await db.schema.alterTable('invoices').dropColumn('tax_rule').execute();
}
