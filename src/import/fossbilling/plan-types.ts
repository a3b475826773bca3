// What the import means to do, worked out before anything is written: one entry per FOSSBilling record with the
// Tollgate values it becomes, whether that creates, updates or leaves a Tollgate record, and the problems found.
// The dry run prints this; the real run applies it in one transaction (apply.ts).

/** The kinds the mapping table (migration 031) remembers. */
export type Kind = 'staff_group' | 'staff' | 'client' | 'tax' | 'product' | 'order' | 'apikey' | 'invoice' | 'transaction' | 'balance';
export const KINDS: readonly Kind[] = ['staff_group', 'staff', 'client', 'tax', 'product', 'order', 'apikey', 'invoice', 'transaction', 'balance'];

export type Action = 'create' | 'update' | 'unchanged';

/**
 * One problem with one record and what the import does about it: `skipped` (not imported, nor anything that needs
 * it), `fixed` (imported with the documented correction), `not imported` (Tollgate has no place for it yet).
 */
export interface Problem {
  kind: string;
  fbId: number | null;
  outcome: 'skipped' | 'fixed' | 'not imported';
  message: string;
}

export interface Planned<V> {
  fbId: number;
  action: Action;
  /** The mapped Tollgate id (update, unchanged); null for a record to create. */
  tollgateId: number | null;
  /** Keyed hash of `values`: what the mapping table stores to tell a changed record from an unchanged one. */
  fingerprint: string;
  values: V;
}

export interface StaffGroupValues { name: string }
export interface StaffValues { email: string; name: string; status: 'active' | 'inactive'; groupFbId: number | null; apiToken: string | null; created_at: string; updated_at: string }
export interface ClientValues {
  email: string; password_hash: string | null; first_name: string; last_name: string | null; company: string | null; phone: string | null;
  address_1: string | null; address_2: string | null; city: string | null; state: string | null; postcode: string | null; country: string | null;
  currency: string | null; status: 'active' | 'suspended' | 'canceled'; tax_exempt: number; vat_number: string | null; email_verified_at: string | null;
  apiToken: string | null; created_at: string; updated_at: string;
}
export interface TaxValues { name: string; rate: number; country: string | null; state: string | null }
export interface ProductValues {
  title: string; slug: string; description: string | null; type: string; status: 'enabled' | 'disabled'; hidden: number;
  setup: 'after_order' | 'after_payment' | 'manual'; pricing: string; config: string; created_at: string; updated_at: string;
}
export type OrderStatus = 'pending_setup' | 'failed_setup' | 'active' | 'suspended' | 'canceled';
export interface OrderValues {
  clientFbId: number; productFbId: number; title: string; type: string; period: string | null; quantity: number; price: number; currency: string;
  status: OrderStatus; reason: string | null; notes: string | null; config: string; expires_at: string | null; activated_at: string | null;
  suspended_at: string | null; canceled_at: string | null; created_at: string; updated_at: string;
}
export interface KeyValues { orderFbId: number; clientFbId: number; key: string; options: string; config: string; created_at: string; updated_at: string }
export interface ItemValues {
  orderFbId: number | null; task: 'activate' | 'renew'; title: string; period: string | null; quantity: number; price: number; total: number; executed: number;
}
export type InvoiceStatus = 'unpaid' | 'paid' | 'canceled' | 'refunded';
export interface InvoiceValues {
  clientFbId: number; hash: string | null; status: InvoiceStatus; currency: string; number: string | null; subtotal: number; tax: number; total: number;
  tax_name: string | null; tax_rate: number; due_at: string | null; paid_at: string | null; created_at: string; updated_at: string;
  seller: string; buyer: string; items: ItemValues[];
}
export interface TransactionValues {
  invoiceFbId: number; clientFbId: number; gateway: string | null; transaction_id: string | null; amount: number; currency: string;
  type: 'payment' | 'refund'; status: 'processed' | 'failed' | 'refunded' | 'error'; message: string | null; created_at: string;
}

/** A client's FOSSBilling balance (the sum of its client_balance rows), in minor units; keyed by the client's id. */
export interface BalanceValues {
  clientFbId: number;
  amount: number;
}

export interface Plan {
  version: string;
  currency: string;
  staffGroups: Array<Planned<StaffGroupValues>>;
  staff: Array<Planned<StaffValues>>;
  clients: Array<Planned<ClientValues>>;
  taxes: Array<Planned<TaxValues>>;
  products: Array<Planned<ProductValues>>;
  orders: Array<Planned<OrderValues>>;
  keys: Array<Planned<KeyValues>>;
  invoices: Array<Planned<InvoiceValues>>;
  transactions: Array<Planned<TransactionValues>>;
  /** Client balances, written to the credit ledger (apply.ts): one entry the first time, the difference after. */
  balances: Array<Planned<BalanceValues>>;
  /** Counted, not imported: client groups (Tollgate has none), other currencies. */
  clientGroups: number;
  balanceTotal: { clients: number; total: string };
  problems: Problem[];
  /** The highest invoice number imported per prefix form, to move Tollgate's counter past it. */
  highestNumber: number | null;
}

/** What is already in Tollgate: the mapping rows and the values an imported record must not collide with. */
export interface TollgateState {
  mapped: Map<Kind, Map<number, { tollgateId: number; fingerprint: string }>>;
  /** Lower-cased e-mail → id, for clients and for staff. */
  clientEmails: Map<string, number>;
  staffEmails: Map<string, number>;
  productSlugs: Map<string, number>;
  invoiceNumbers: Map<string, number>;
  invoiceHashes: Map<string, number>;
  keyHashes: Map<string, number>;
  currency: string;
  precision: number;
  invoicePrefix: string;
}

/** Turns values into a plan entry against the mapping: create, update (fingerprint changed) or unchanged. */
export function planned<V>(state: TollgateState, kind: Kind, fbId: number, values: V, fingerprintOf: (json: string) => string): Planned<V> {
  const fingerprint = fingerprintOf(JSON.stringify(values));
  const mapped = state.mapped.get(kind)?.get(fbId);
  if (mapped === undefined) return { fbId, action: 'create', tollgateId: null, fingerprint, values };
  return { fbId, action: mapped.fingerprint === fingerprint ? 'unchanged' : 'update', tollgateId: mapped.tollgateId, fingerprint, values };
}

/** The Tollgate id a FOSSBilling record is mapped to already (for conflict checks that must not see the record itself). */
export function mappedId(state: TollgateState, kind: Kind, fbId: number): number | undefined {
  return state.mapped.get(kind)?.get(fbId)?.tollgateId;
}
