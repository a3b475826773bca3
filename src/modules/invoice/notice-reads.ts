// What the e-mail notices (src/modules/email/notices.ts) read of invoices, here because the invoice module owns the
// invoices and their items. The event-driven reads go through the caller's transaction: the change a notice follows
// may not be committed yet, and on SQLite a second handle would wait for the very transaction it is part of.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';

export function createInvoiceNoticeReads({ db }: { db: Kysely<Database> }) {
  return {
    /** The whole invoice row (its name, total, due date and status go into the mail); undefined when it is gone. */
    async invoice(trx: Kysely<Database>, invoiceId: number) {
      return trx.selectFrom('invoices').selectAll().where('id', '=', invoiceId).executeTakeFirst();
    },

    /** The orders the invoice's renewal items renew, first item first; none when it renews nothing. */
    async renewedOrderIds(trx: Kysely<Database>, invoiceId: number): Promise<number[]> {
      const rows = await trx
        .selectFrom('invoice_items')
        .select('order_id')
        .where('invoice_id', '=', invoiceId)
        .where('task', '=', 'renew')
        .where('order_id', 'is not', null)
        .orderBy('id')
        .execute();
      return rows.map((row) => row.order_id!);
    },

    /** Unpaid invoices due between `from` and `to` (ISO text, both included), by id: the reminders' candidates. */
    async unpaidDueBetween(from: string, to: string): Promise<Array<{ id: number; client_id: number; due_at: string }>> {
      const rows = await db
        .selectFrom('invoices')
        .select(['id', 'client_id', 'due_at'])
        .where('status', '=', 'unpaid')
        .where('due_at', 'is not', null)
        .where('due_at', '>=', from)
        .where('due_at', '<=', to)
        .orderBy('id')
        .execute();
      return rows.map((row) => ({ id: row.id, client_id: row.client_id, due_at: row.due_at! }));
    },
  };
}

export type InvoiceNoticeReads = ReturnType<typeof createInvoiceNoticeReads>;
