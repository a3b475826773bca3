// Events of payments, emitted by the payment module inside the transaction of the change they report. The name keeps
// the `invoice.` prefix of the contract's webhook event list (CONTRACT §9): it is about an invoice's payment.

/** An off-session charge of the invoice failed (declined, needs authentication, provider unreachable): charges.ts. */
export interface PaymentFailedEvent {
  invoiceId: number;
  clientId: number;
  /** Safe to show the client (the provider's decline reason or a fixed sentence). */
  message: string;
}

declare module '../../platform/events.ts' {
  interface TollgateEvents {
    'invoice.payment_failed': PaymentFailedEvent;
  }
}
