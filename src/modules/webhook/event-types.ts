// The event types a webhook endpoint can subscribe to (CONTRACT §11). Without imports, so the admin panel can use the
// list too; events.ts checks that each one is a service event.
export const WEBHOOK_EVENT_TYPES = [
  'client.created',
  'order.created',
  'order.activated',
  'order.renewed',
  'order.suspended',
  'order.unsuspended',
  'order.canceled',
  'order.trial_will_end',
  'invoice.created',
  'invoice.paid',
  'invoice.payment_failed',
  'invoice.refunded',
  'credit_note.created',
  'apikey.issued',
  'apikey.reset',
  'apikey.disabled',
  'apikey.enabled',
  'apikey.updated',
  'usage.threshold_reached',
  'wallet.low_balance',
  'wallet.depleted',
] as const;

/** The type of the deliveries `send_test` makes; not subscribable. */
export const TEST_EVENT = 'webhook.test';
