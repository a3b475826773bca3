// Events of invoices, emitted by the invoice module (service.ts, payments.ts, renewals.ts) inside the transaction of
// the change they report.
// credit_note.created is declared beside its emitter; importing this file declares it too.
import './credit-notes/events.ts';
export interface InvoiceEvent {
  invoiceId: number;
  clientId: number;
  /** Minor units. */
  total: number;
}

declare module '../../platform/events.ts' {
  interface TollgateEvents {
    'invoice.created': InvoiceEvent;
    'invoice.paid': InvoiceEvent & { transactionId: number };
    'invoice.canceled': InvoiceEvent;
    /**
     * `amount`: what this refund gave back, minor units (a partial refund leaves the invoice paid). `toBalance`: the
     * refund is of the part the client's balance paid, and goes back to the balance.
     */
    'invoice.refunded': { invoiceId: number; clientId: number; amount: number; toBalance?: boolean };
    /**
     * A payment that was never applied (a card payment of a voided, canceled, stale or already paid invoice) was given
     * back to the payer (payment/late-refunds.ts asks the provider, invoice/payments.ts records it). `amount` in minor
     * units.
     */
    /**
     * The part of an unpaid invoice the balance had paid (`credit_applied`) no longer counts: the invoice was canceled,
     * or a payment of its whole total arrived. The balance gets `amount` (minor units) back (credit/invoice-credits.ts).
     */
    'invoice.credit_released': { invoiceId: number; clientId: number; amount: number; currency: string };
    'invoice.payment_refunded': { invoiceId: number; clientId: number; amount: number; currency: string };
  }
}
