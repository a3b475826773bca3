// Events of orders and invoices, emitted inside the transaction of the change they report.
export interface OrderEvent {
  orderId: number;
  clientId: number;
  productId: number;
  /** The order's status after the change. */
  status: string;
}

export interface InvoiceEvent {
  invoiceId: number;
  clientId: number;
  /** Minor units. */
  total: number;
}

declare module '../../platform/events.ts' {
  interface TollgateEvents {
    'order.created': OrderEvent;
    'order.activated': OrderEvent;
    'order.renewed': OrderEvent & { expiresAt: string | null };
    'order.suspended': OrderEvent & { reason: string | null };
    'order.unsuspended': OrderEvent;
    'order.canceled': OrderEvent & { reason: string | null };
    'order.uncanceled': OrderEvent;
    /** Emitted before the row is deleted: listeners can still read it. */
    'order.deleted': OrderEvent;
    'order.updated': OrderEvent;
    /** The order moved to another plan (an upgrade paid, or a downgrade at renewal); `config` is the new plan's. */
    'order.plan_changed': OrderEvent & { fromProductId: number; config: Record<string, unknown> };
    /** The client canceled the order at period end (`canceling` true) or took that back (false). */
    'order.cancel_scheduled': OrderEvent & { canceling: boolean };
    'invoice.created': InvoiceEvent;
    'invoice.paid': InvoiceEvent & { transactionId: number };
    'invoice.canceled': InvoiceEvent;
    /** `amount`: what this refund gave back, minor units (a partial refund leaves the invoice paid). */
    'invoice.refunded': { invoiceId: number; clientId: number; amount: number };
    /**
     * A payment that was never applied (a card payment of a voided, canceled, stale or already paid invoice) was given
     * back to the payer (invoice/late-refunds.ts). `amount` in minor units.
     */
    'invoice.payment_refunded': { invoiceId: number; clientId: number; amount: number; currency: string };
  }
}
