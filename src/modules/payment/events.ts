// Events of payments, emitted by the payment module inside the transaction of the change they report. The name keeps
// the `invoice.` prefix of the contract's webhook event list (CONTRACT §9): it is about an invoice's payment.

/** An off-session charge of the invoice failed (declined, needs authentication, provider unreachable): charges.ts. */
export interface PaymentFailedEvent {
  invoiceId: number;
  clientId: number;
  /** Safe to show the client (the provider's decline reason or a fixed sentence). */
  message: string;
}

/**
 * A card was saved for the client (by a payment with auto-pay on, or by "Add a card", setup-mode Checkout), the first
 * time this card is saved: a free trial waiting for a card (order/trials.ts) starts on it.
 */
export interface MethodSavedEvent {
  clientId: number;
  methodId: number;
  /** The provider's fingerprint of the card number; null when the provider gave none. */
  fingerprint: string | null;
}

declare module '../../platform/events.ts' {
  interface TollgateEvents {
    'invoice.payment_failed': PaymentFailedEvent;
    'payment_method.saved': MethodSavedEvent;
  }
}
