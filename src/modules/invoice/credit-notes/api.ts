// The invoice module's credit-note actions (issue 24 item 8): staff list, read, download and create (to the client's
// balance) credit notes; clients list, read and download their own. Refunds make theirs through admin/invoice/refund.
import { Type } from '@sinclair/typebox';
import { actionsFor, FileResult } from '../../../platform/action.ts';
import { paginationParams } from '../../../lib/paginator.ts';
import { parseMoney, precisionOf } from '../../../lib/money.ts';
import { FileDownload, Money, Nullable, PageOf, Timestamp } from '../../../platform/schemas.ts';
import type { CreditNotes } from './service.ts';
import type { InvoiceService } from '../service.ts';

export interface CreditNoteNeeds {
  /** A note is in its invoice's currency: its amounts are read in that currency's decimals. */
  invoices: Pick<InvoiceService, 'currencyOf'>;
  creditNotes: Pick<CreditNotes, 'create' | 'list' | 'get' | 'pdf'>;
}

const { adminAction, clientAction } = actionsFor<CreditNoteNeeds>();

const Id = Type.Integer({ minimum: 1, maximum: 2_147_483_647 });
const Amount = Type.Union([Type.String({ maxLength: 40 }), Type.Number()]);

export const CreditNote = Type.Object(
  {
    id: Type.Integer(),
    number: Type.String({ description: '`<credit_note_prefix><n>`, gapless (default prefix `CN-`)' }),
    invoice_id: Type.Integer(),
    invoice_number: Nullable(Type.String()),
    client_id: Type.Integer(),
    currency: Type.String(),
    method: Type.Union([Type.Literal('refund'), Type.Literal('balance')], { description: 'refund: money went back to the payer; balance: credited to the client balance' }),
    reason: Type.String(),
    subtotal: Type.String({ ...Money, description: 'Net credited' }),
    tax_name: Nullable(Type.String()),
    tax_rate: Type.String(),
    tax: Type.String({ ...Money, description: "The invoice's tax in proportion to the net credited" }),
    total: Type.String({ ...Money, description: 'subtotal + tax' }),
    transaction_id: Nullable(Type.Integer({ description: 'The refund transaction it documents' })),
    created_at: Timestamp,
    lines: Type.Array(
      Type.Object({
        item: Type.Integer({ description: "The invoice line's index in the invoice's items, from 0" }),
        title: Type.String(),
        amount: Type.String({ ...Money, description: 'Net credited of the line' }),
      }),
    ),
  },
  { $id: 'CreditNote' },
);

const ListParams = { ...paginationParams };

async function pdfOf(notes: Pick<CreditNotes, 'pdf'>, id: number, clientId?: number): Promise<FileResult> {
  const { number, body } = await notes.pdf(id, clientId);
  return new FileResult('application/pdf', body, `${number}.pdf`);
}

export const creditNoteAdminActions = {
  credit_note_get_list: adminAction({
    params: Type.Object({ invoice_id: Type.Optional(Id), client_id: Type.Optional(Id), ...ListParams }),
    permission: 'invoice.view',
    summary: 'Credit notes, newest first',
    result: PageOf(CreditNote),
    handler: (params, { services }) => services.creditNotes.list(params),
  }),
  credit_note_get: adminAction({
    params: Type.Object({ id: Id }),
    permission: 'invoice.view',
    summary: 'One credit note with its lines',
    result: CreditNote,
    handler: ({ id }, { services }) => services.creditNotes.get(id),
  }),
  credit_note_pdf: adminAction({
    params: Type.Object({ id: Id }),
    permission: 'invoice.view',
    summary: 'The credit note as application/pdf',
    result: FileDownload('application/pdf'),
    handler: ({ id }, { services }) => pdfOf(services.creditNotes, id),
  }),
  credit_note_create: adminAction({
    params: Type.Object({
      invoice_id: Id,
      reason: Type.String({ minLength: 1, maxLength: 500 }),
      lines: Type.Optional(
        Type.Array(Type.Object({ item: Type.Integer({ minimum: 0, maximum: 10_000 }), amount: Type.Optional(Amount) }), { minItems: 1, maxItems: 500 }),
      ),
      amount: Type.Optional(Amount),
      key: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Your idempotency key: the same key again answers the same note' })),
    }),
    permission: 'invoice.manage',
    summary:
      "Credits a paid invoice to the client's balance: `lines` (net amounts per line by index; an amount left out credits all that is left of the line), or a gross `amount`, or everything left. Never more than is left per line and in all (422). Money back to the payer is admin/invoice/refund, which makes its own credit note",
    result: Type.Integer({ description: 'The credit note id' }),
    handler: async ({ invoice_id, reason, lines, amount, key }, { services, identity }) => {
      const precision = precisionOf(await services.invoices.currencyOf(invoice_id));
      return services.creditNotes.create({
        invoiceId: invoice_id,
        reason,
        lines: lines === undefined ? null : lines.map((line, index) => ({ item: line.item, amount: line.amount === undefined ? null : parseMoney(line.amount, `lines[${index}].amount`, precision) })),
        amount: amount === undefined ? null : parseMoney(amount, 'amount', precision),
        staffId: identity.staff.id,
        key: key ?? null,
      });
    },
  }),
};

export const creditNoteClientActions = {
  credit_note_get_list: clientAction({
    params: Type.Object({ invoice_id: Type.Optional(Id), ...ListParams }),
    summary: "The caller's credit notes, newest first",
    result: PageOf(CreditNote),
    handler: (params, { services, identity }) => services.creditNotes.list(params, identity.client.id),
  }),
  credit_note_get: clientAction({
    params: Type.Object({ id: Id }),
    summary: 'One own credit note',
    result: CreditNote,
    handler: ({ id }, { services, identity }) => services.creditNotes.get(id, identity.client.id),
  }),
  credit_note_pdf: clientAction({
    params: Type.Object({ id: Id }),
    summary: 'An own credit note as application/pdf',
    result: FileDownload('application/pdf'),
    handler: ({ id }, { services, identity }) => pdfOf(services.creditNotes, id, identity.client.id),
  }),
};
