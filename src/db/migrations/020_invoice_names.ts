// Issue 21 (operator), item 1: an invoice has one name. `{{invoice_number}}` in a mail now holds the legal number
// or, before payment, "Pro forma 12" — never a bare id — so a template staff customised as "invoice
// #{{invoice_number}}" would read "invoice #NWD-4". The "#" in front of the placeholder is dropped from stored
// templates; nothing else a member of staff wrote is touched. Not reversible in meaning, so `down` does nothing.
import { sql } from 'kysely';
import type { AnyDb } from './helpers.ts';

export async function up(db: AnyDb): Promise<void> {
  for (const column of ['subject', 'content'] as const) {
    await db
      .updateTable('email_templates')
      .set({ [column]: sql`replace(${sql.ref(column)}, '#{{invoice_number}}', '{{invoice_number}}')` })
      .where(column, 'like', '%#{{invoice_number}}%')
      .execute();
  }
}

export async function down(): Promise<void> {
  // A "#" removed before a placeholder cannot be told apart from one never there.
}
