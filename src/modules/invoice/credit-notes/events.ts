// The credit-note event, emitted by the invoice module (credit-notes/service.ts) in the transaction that writes the
// note. The credit module listens for `balance` notes (the client's credit); webhooks send it as `credit_note.created`.

/** Amounts in minor units; `method`: `refund` (money went back) or `balance` (credited to the client's balance). */
export interface CreditNoteEvent {
  creditNoteId: number;
  number: string;
  invoiceId: number;
  clientId: number;
  total: number;
  currency: string;
  method: 'refund' | 'balance';
}

declare module '../../../platform/events.ts' {
  interface TollgateEvents {
    'credit_note.created': CreditNoteEvent;
  }
}
