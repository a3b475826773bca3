// Events of orders, emitted by the order service inside the transaction of the change they report. (Invoice events
// are declared by the invoice module, invoice/events.ts; payment events by the payment module, payment/events.ts.)
export interface OrderEvent {
  orderId: number;
  clientId: number;
  productId: number;
  /** The order's status after the change. */
  status: string;
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
    /** A free trial ends within three days (issue 24 item 7): sent once per order. */
    'order.trial_will_end': OrderEvent & { trialEndsAt: string };
    /** A free trial ended: the order runs on `config`, its plan's, from now on. */
    'order.trial_ended': OrderEvent & { config: Record<string, unknown> };
    /** The client canceled the order at period end (`canceling` true) or took that back (false). */
    'order.cancel_scheduled': OrderEvent & { canceling: boolean };
  }
}
