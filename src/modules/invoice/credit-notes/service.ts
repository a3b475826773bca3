// Credit notes (issue 24 item 8): numbered documents crediting part or all of one paid invoice. The only writer of
// `credit_notes`, `credit_note_lines` and `credit_note_sequence`. Every note is written under the invoice's row lock
// (the same no-op update the refunds take), after reading what the notes before it credited, so concurrent notes on
// one invoice never credit more than it — per line and in total. Numbers come from one counter row taken in the note's
// transaction: gapless. A refund of money writes its note in the refund's transaction (`forRefund`, once per refund
// transaction by `source_key`); staff credit the balance with `create` (the credit module writes the ledger line on
// `credit_note.created`).
import { randomUUID } from 'node:crypto';
import { sql, type Kysely, type Selectable } from 'kysely';
import type { Database } from '../../../db/schema.ts';
import type { CreditNoteTable } from '../tables.ts';
import type { EventBus } from '../../../platform/events.ts';
import { errors } from '../../../platform/errors.ts';
import { inTransaction } from '../../../platform/transaction.ts';
import { moneyFor, type Money } from '../../../lib/money.ts';
import { pageRequest, toPage, type Page } from '../../../lib/paginator.ts';
import { formatRate } from '../../../lib/rates.ts';
import { isoSeconds } from '../../../lib/time.ts';
import { leftToCredit, lineBases, shareByWeight, splitByAmount, splitByLines, type CreditSplit, type CreditState } from '../../../lib/credit-split.ts';
import type { InvoiceRow } from '../types.ts';
import type { CreditNoteDocument, CreditNoteFilters, CreditNoteMethod, CreditNoteRecord, CreditNoteRequest, InvoiceCredit } from './types.ts';
import { renderCreditNotePdf } from './pdf.ts';
import './events.ts';

export type { CreditNoteRecord, CreditNoteRequest, CreditNoteFilters, InvoiceCredit } from './types.ts';

type NoteRow = Selectable<CreditNoteTable>;

export interface CreditNoteDeps {
  db: Kysely<Database>;
  events: EventBus;
  /** The number prefix (setting `credit_note_prefix`, default `CN-`). */
  prefix: () => string;
}

const num = (value: string | number | null | undefined): number => Number(value ?? 0);

export function createCreditNotes({ db, events, prefix }: CreditNoteDeps) {
  /** Serialises credit on one invoice until `trx` ends (a no-op update takes the row lock on PostgreSQL). */
  async function lockInvoice(trx: Kysely<Database>, id: number): Promise<InvoiceRow | undefined> {
    await trx
      .updateTable('invoices')
      .set((eb) => ({ updated_at: eb.ref('updated_at') }))
      .where('id', '=', id)
      .execute();
    return trx.selectFrom('invoices').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** The invoice's lines (in their order) and what the notes so far credited of each and of the tax. */
  async function stateOf(trx: Kysely<Database>, invoice: InvoiceRow): Promise<{ items: Array<{ id: number; title: string; task: string }>; state: CreditState }> {
    const items = await trx.selectFrom('invoice_items').select(['id', 'title', 'task', 'total']).where('invoice_id', '=', invoice.id).orderBy('id').execute();
    const credited = await trx
      .selectFrom('credit_note_lines as l')
      .innerJoin('credit_notes as n', 'n.id', 'l.credit_note_id')
      .select(['l.invoice_item_id', sql<string | number>`sum(l.amount)`.as('amount')])
      .where('n.invoice_id', '=', invoice.id)
      .groupBy('l.invoice_item_id')
      .execute();
    const byItem = new Map(credited.map((row) => [row.invoice_item_id, num(row.amount)]));
    const tax = await trx.selectFrom('credit_notes').select(sql<string | number | null>`sum(tax)`.as('tax')).where('invoice_id', '=', invoice.id).executeTakeFirst();
    const gross = lineBases(items.map((item) => item.total), invoice.discount);
    return {
      items,
      state: {
        // With tax-inclusive prices the lines hold the tax: their net bases are the net total shared by line.
        bases: invoice.tax_inclusive === 1 ? shareByWeight(invoice.total - invoice.tax, gross) : gross,
        credited: items.map((item) => byItem.get(item.id) ?? 0),
        tax: invoice.tax,
        taxCredited: num(tax?.tax),
      },
    };
  }

  /** The next number, taken in `trx`: the counter row's lock serialises writers; a rollback gives the number back. */
  async function nextNumber(trx: Kysely<Database>): Promise<string> {
    const row = await trx
      .updateTable('credit_note_sequence')
      .set({ next_number: sql<number>`next_number + 1` })
      .where('name', '=', 'credit_note')
      .returning('next_number')
      .executeTakeFirstOrThrow();
    return `${prefix()}${num(row.next_number) - 1}`;
  }

  interface NoteSource {
    method: CreditNoteMethod;
    reason: string;
    transactionId: number | null;
    staffId: number | null;
    key: string;
  }

  /** Writes the note (the one already written under `source.key`, if any, is answered instead). */
  async function write(trx: Kysely<Database>, invoice: InvoiceRow, items: Array<{ id: number; title: string }>, split: CreditSplit, source: NoteSource, now: Date): Promise<number> {
    const found = await trx.selectFrom('credit_notes').select('id').where('source_key', '=', source.key).executeTakeFirst();
    if (found !== undefined) return found.id;
    const number = await nextNumber(trx);
    const note = await trx
      .insertInto('credit_notes')
      .values({
        number,
        invoice_id: invoice.id,
        client_id: invoice.client_id,
        currency: invoice.currency,
        method: source.method,
        reason: source.reason.slice(0, 500),
        subtotal: split.net,
        tax: split.tax,
        total: split.total,
        tax_name: invoice.tax_name,
        tax_rate: invoice.tax_rate,
        transaction_id: source.transactionId,
        staff_id: source.staffId,
        source_key: source.key,
        created_at: isoSeconds(now),
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const lines = items.map((item, index) => ({ credit_note_id: note.id, invoice_item_id: item.id, title: item.title, amount: split.lines[index]! })).filter((line) => line.amount > 0);
    if (lines.length > 0) await trx.insertInto('credit_note_lines').values(lines).execute();
    const event = { creditNoteId: note.id, number, invoiceId: invoice.id, clientId: invoice.client_id, total: split.total, currency: invoice.currency, method: source.method };
    await events.emit('credit_note.created', event, trx);
    return note.id;
  }

  async function toRecords(handle: Kysely<Database>, rows: NoteRow[]): Promise<CreditNoteRecord[]> {
    if (rows.length === 0) return [];
    const lines = await handle.selectFrom('credit_note_lines').selectAll().where('credit_note_id', 'in', rows.map((row) => row.id)).orderBy('id').execute();
    const invoiceIds = [...new Set(rows.map((row) => row.invoice_id))];
    const invoices = new Map((await handle.selectFrom('invoices').select(['id', 'number']).where('id', 'in', invoiceIds).execute()).map((row) => [row.id, row.number]));
    const items = await handle.selectFrom('invoice_items').select(['id', 'invoice_id']).where('invoice_id', 'in', invoiceIds).orderBy('id').execute();
    // A line names its invoice line by position in the invoice's `items`, as the invoice shows them.
    const position = new Map<number, number>();
    for (const invoiceId of invoiceIds) items.filter((item) => item.invoice_id === invoiceId).forEach((item, index) => position.set(item.id, index));
    return rows.map((row) => ({
      id: row.id,
      number: row.number,
      invoice_id: row.invoice_id,
      invoice_number: invoices.get(row.invoice_id) ?? null,
      client_id: row.client_id,
      currency: row.currency,
      method: row.method,
      reason: row.reason,
      subtotal: moneyFor(row.currency).format(num(row.subtotal)),
      tax_name: row.tax_name,
      tax_rate: formatRate(row.tax_rate),
      tax: moneyFor(row.currency).format(num(row.tax)),
      total: moneyFor(row.currency).format(num(row.total)),
      transaction_id: row.transaction_id,
      created_at: row.created_at,
      lines: lines
        .filter((line) => line.credit_note_id === row.id)
        .map((line) => ({ item: position.get(line.invoice_item_id) ?? 0, title: line.title, amount: moneyFor(row.currency).format(num(line.amount)) })),
    }));
  }

  async function requireRow(id: number, clientId?: number): Promise<NoteRow> {
    let query = db.selectFrom('credit_notes').selectAll().where('id', '=', id);
    if (clientId !== undefined) query = query.where('client_id', '=', clientId);
    const row = await query.executeTakeFirst();
    if (row === undefined) throw errors.notFound('Credit note');
    return row;
  }

  /** The request's lines as net amounts per invoice line, checked against what is left of each (422 naming the field). */
  function requestedAmounts(request: CreditNoteRequest, state: CreditState, money: Money): number[] {
    const left = state.bases.map((base, index) => base - state.credited[index]!);
    if (request.lines === null) return left;
    const amounts = left.map(() => 0);
    const seen = new Set<number>();
    for (const [index, line] of request.lines.entries()) {
      if (line.item >= left.length) throw errors.invalid(`lines[${index}].item`, `must name one of the invoice's ${left.length} lines (0–${left.length - 1})`);
      if (seen.has(line.item)) throw errors.invalid(`lines[${index}].item`, 'names a line twice');
      seen.add(line.item);
      const amount = line.amount ?? left[line.item]!;
      if (line.amount !== null && amount <= 0) throw errors.invalid(`lines[${index}].amount`, 'must be more than 0');
      if (amount > left[line.item]!) throw errors.invalid(`lines[${index}].amount`, `must not be more than what is left to credit of the line (${money.format(left[line.item]!)})`);
      amounts[line.item] = amount;
    }
    return amounts;
  }

  return {
    /**
     * In the refund's transaction (invoice/payments.ts, which holds the invoice's lock): the note documenting a refund
     * of `amount` (gross), once per refund transaction. A provider may refund more than is left to credit (a refund
     * made outside Tollgate after a credit to the balance): the note credits what is left, and none when nothing is.
     */
    async forRefund(trx: Kysely<Database>, invoiceId: number, refund: { transactionId: number; amount: number; reason: string | null }, now: Date): Promise<number | null> {
      const invoice = await lockInvoice(trx, invoiceId);
      if (invoice === undefined) return null;
      const { items, state } = await stateOf(trx, invoice);
      const amount = Math.min(refund.amount, leftToCredit(state));
      if (amount <= 0) return null;
      const source = { method: 'refund' as const, reason: refund.reason ?? 'Refund', transactionId: refund.transactionId, staffId: null, key: `refund:${refund.transactionId}` };
      return write(trx, invoice, items, splitByAmount(state, amount), source, now);
    },

    /**
     * In the transaction that stores a late VIES confirmation (invoice/vat-corrections.ts): a `balance` note crediting
     * the whole tax of a paid invoice that had nothing credited yet, once per invoice (`vat:<id>`); null otherwise.
     */
    async forVatCorrection(trx: Kysely<Database>, invoiceId: number, reason: string, now: Date): Promise<number | null> {
      const invoice = await lockInvoice(trx, invoiceId);
      if (invoice === undefined || invoice.status !== 'paid' || invoice.tax <= 0) return null;
      const { items, state } = await stateOf(trx, invoice);
      if (state.taxCredited > 0 || state.credited.some((amount) => amount > 0)) return null;
      const split: CreditSplit = { lines: items.map(() => 0), net: 0, tax: state.tax, total: state.tax };
      return write(trx, invoice, items, split, { method: 'balance', reason, transactionId: null, staffId: null, key: `vat:${invoice.id}` }, now);
    },

    /** What is left to credit of the invoice, gross minor units (what a refund may still give back). */
    async leftOf(trx: Kysely<Database>, invoice: InvoiceRow): Promise<number> {
      return leftToCredit((await stateOf(trx, invoice)).state);
    },

    /**
     * admin/invoice/credit_note_create: a `balance` note for the lines asked (or a gross `amount`, or everything left),
     * credited to the client's balance. 404 unknown invoice; 409 not paid, or a top-up invoice (refund it instead);
     * 422 more than is left.
     */
    async create(request: CreditNoteRequest, now = new Date()): Promise<number> {
      if (request.reason.trim() === '') throw errors.invalid('reason', 'must not be empty');
      if (request.lines !== null && request.amount !== null) throw errors.invalid('amount', 'give lines or amount, not both');
      if (request.lines?.length === 0) throw errors.invalid('lines', 'must name at least one line');
      return inTransaction(db, async (trx) => {
        const invoice = await lockInvoice(trx, request.invoiceId);
        if (invoice === undefined) throw errors.notFound('Invoice');
        // A retried request with the caller's key answers the note it made, whatever is left now.
        const key = request.key === null ? `staff:${randomUUID()}` : `staff:${invoice.id}:${request.key}`;
        const made = await trx.selectFrom('credit_notes').select('id').where('source_key', '=', key).executeTakeFirst();
        if (made !== undefined) return made.id;
        if (invoice.status !== 'paid') throw errors.conflict(`The invoice is ${invoice.status}; only a paid invoice can be credited`);
        const { items, state } = await stateOf(trx, invoice);
        if (items.some((item) => item.task === 'deposit')) throw errors.conflict('A top-up invoice is not credited to the balance it added to; refund it instead');
        const left = leftToCredit(state);
        if (left <= 0) throw errors.conflict('Nothing is left to credit of this invoice');
        let split: CreditSplit;
        if (request.amount !== null) {
          if (request.amount <= 0) throw errors.invalid('amount', 'must be more than 0');
          if (request.amount > left) throw errors.invalid('amount', `must not be more than what is left to credit (${moneyFor(invoice.currency).format(left)})`);
          split = splitByAmount(state, request.amount);
        } else {
          split = splitByLines(state, requestedAmounts(request, state, moneyFor(invoice.currency)));
        }
        if (split.total <= 0) throw errors.invalid('lines', 'credit nothing');
        const source = { method: 'balance' as const, reason: request.reason.trim(), transactionId: null, staffId: request.staffId, key };
        return write(trx, invoice, items, split, source, now);
      });
    },

    /** credit_note_get_list: newest first; a client sees only its own. */
    async list(filters: CreditNoteFilters, clientId?: number): Promise<Page<CreditNoteRecord>> {
      const request = pageRequest(filters);
      let query = db.selectFrom('credit_notes');
      const owner = clientId ?? filters.client_id;
      if (owner !== undefined) query = query.where('client_id', '=', owner);
      if (filters.invoice_id !== undefined) query = query.where('invoice_id', '=', filters.invoice_id);
      const total = await query.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
      const rows = await query.selectAll().orderBy('id', 'desc').limit(request.perPage).offset(request.offset).execute();
      return toPage(request, num(total.n), await toRecords(db, rows));
    },

    async get(id: number, clientId?: number): Promise<CreditNoteRecord> {
      const [record] = await toRecords(db, [await requireRow(id, clientId)]);
      return record!;
    },

    /** The note as a PDF, with the seller and buyer of its invoice. */
    async pdf(id: number, clientId?: number): Promise<{ number: string; body: Buffer }> {
      const [record] = await toRecords(db, [await requireRow(id, clientId)]);
      const invoice = await db.selectFrom('invoices').select(['seller', 'buyer']).where('id', '=', record!.invoice_id).executeTakeFirstOrThrow();
      const document: CreditNoteDocument = { ...record!, seller: invoice.seller === null ? null : JSON.parse(invoice.seller), buyer: invoice.buyer === null ? null : JSON.parse(invoice.buyer) };
      return { number: record!.number, body: await renderCreditNotePdf(document) };
    },

    /** What the invoices' records show of their credit (invoice/get): totals, notes, net per line. */
    async ofInvoices(handle: Kysely<Database>, invoiceIds: number[]): Promise<Map<number, InvoiceCredit>> {
      const out = new Map<number, InvoiceCredit>();
      if (invoiceIds.length === 0) return out;
      const notes = await handle.selectFrom('credit_notes').select(['id', 'number', 'invoice_id', 'method', 'total', 'created_at']).where('invoice_id', 'in', invoiceIds).orderBy('id').execute();
      if (notes.length === 0) return out;
      const lines = await handle.selectFrom('credit_note_lines').select(['credit_note_id', 'invoice_item_id', 'amount']).where('credit_note_id', 'in', notes.map((note) => note.id)).execute();
      const invoiceOf = new Map(notes.map((note) => [note.id, note.invoice_id]));
      for (const note of notes) {
        const credit = out.get(note.invoice_id) ?? { total: 0, notes: [], byItem: new Map<number, number>() };
        credit.total += num(note.total);
        credit.notes.push({ id: note.id, number: note.number, method: note.method, total: num(note.total), created_at: note.created_at });
        out.set(note.invoice_id, credit);
      }
      for (const line of lines) {
        const credit = out.get(invoiceOf.get(line.credit_note_id)!)!;
        credit.byItem.set(line.invoice_item_id, (credit.byItem.get(line.invoice_item_id) ?? 0) + num(line.amount));
      }
      return out;
    },
  };
}

export type CreditNotes = ReturnType<typeof createCreditNotes>;
