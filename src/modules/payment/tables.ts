// Tables of payments through gateways (migration 007): each client's auto-pay choice, gateway customers, saved
// payment methods, inbound provider events and off-session charge attempts. Times are ISO strings. Only this module
// writes them.
import type { Generated } from 'kysely';

export interface PaymentProfileTable {
  client_id: number;
  /** 0/1, or null when the client never chose (the instance default applies). */
  auto_pay: number | null;
  updated_at: string;
}

export interface GatewayCustomerTable {
  id: Generated<number>;
  client_id: number;
  gateway: string;
  /** The provider's customer id (`cus_…`). */
  customer_ref: string;
  created_at: string;
}

export interface PaymentMethodTable {
  id: Generated<number>;
  client_id: number;
  gateway: string;
  /** The provider's payment method id (`pm_…`). */
  method_ref: string;
  brand: string;
  last4: string;
  exp_month: number;
  exp_year: number;
  /** 0/1: the card off-session renewals charge. */
  is_default: number;
  created_at: string;
  /** Migration 034: the card's fingerprint (the same card saved by two accounts has the same one); null if unknown. */
  fingerprint: string | null;
}

export interface GatewayEventTable {
  id: Generated<number>;
  gateway: string;
  /** The provider's event id; unique per gateway, which is what makes a redelivery a no-op. */
  event_id: string;
  type: string;
  /** The verified event as received (JSON). */
  payload: string;
  received_at: string;
  /** Set in the transaction that applies the event; null means stored but not applied yet. */
  processed_at: string | null;
  attempts: Generated<number>;
  last_error: string | null;
}

export type AttemptStatus = 'processing' | 'succeeded' | 'failed' | 'requires_action' | 'canceled';

export interface PaymentAttemptTable {
  id: Generated<number>;
  invoice_id: number;
  client_id: number;
  /** 1 for the first charge, then one more per retry; part of the provider idempotency key. */
  attempt: number;
  /** `processing` while the charge is out (and after a crash mid-charge: the next try reuses its key). */
  status: AttemptStatus;
  txn_ref: string | null;
  message: string | null;
  created_at: string;
  updated_at: string;
}

export interface PaymentTables {
  payment_profiles: PaymentProfileTable;
  gateway_customers: GatewayCustomerTable;
  payment_methods: PaymentMethodTable;
  gateway_events: GatewayEventTable;
  payment_attempts: PaymentAttemptTable;
}
