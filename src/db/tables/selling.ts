// Tables of selling: products, carts, orders and their history, invoices and their items, transactions.
// Money is integer minor units of the instance currency; JSON is text; times are ISO strings.
import type { ColumnType, Generated } from 'kysely';

export type ProductStatus = 'enabled' | 'disabled';
export type SetupMode = 'after_order' | 'after_payment' | 'manual';
export type OrderStatusColumn = 'pending_setup' | 'failed_setup' | 'active' | 'suspended' | 'canceled';
export type InvoiceStatus = 'unpaid' | 'paid' | 'canceled' | 'refunded';
/** `change`: a plan upgrade (CONTRACT §8), applied when the invoice is paid. */
/** `usage`: a usage period's overage (CONTRACT §12); paying it runs nothing. */
export type InvoiceTask = 'activate' | 'renew' | 'change' | 'usage';

export interface ProductTable {
  id: Generated<number>;
  title: string;
  /** Unique, URL-safe; generated from the title when not given. */
  slug: string;
  description: string | null;
  /** The product type code (`custom`, `apikey`, …). */
  type: string;
  status: ProductStatus;
  /** 0/1: hidden products are not listed to guests but can still be ordered by id or slug. */
  hidden: number;
  setup: SetupMode;
  /** JSON: {type, once: {price, setup}, recurrent: {"<period>": {price, setup, enabled}}}, prices in minor units. */
  pricing: string;
  /** JSON object interpreted by the product type. */
  config: string;
  created_at: string;
  updated_at: string;
}

export interface CartItemTable {
  id: Generated<number>;
  /** The owning client, or null for a guest cart (then `session_hash` is set). */
  client_id: number | null;
  /** The guest session's id hash. */
  session_hash: string | null;
  product_id: number;
  period: string | null;
  quantity: number;
  created_at: string;
}

export interface OrderTable {
  id: Generated<number>;
  client_id: number;
  product_id: number;
  title: string;
  /** The product type code at order time. */
  type: string;
  period: string | null;
  quantity: number;
  /** Unit price per period (recurrent) or once, minor units. */
  price: number;
  currency: string;
  status: OrderStatusColumn;
  reason: string | null;
  notes: string | null;
  /** JSON text: snapshot of the product's config. */
  config: string;
  expires_at: string | null;
  activated_at: string | null;
  suspended_at: string | null;
  canceled_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface OrderHistoryTable {
  id: Generated<number>;
  order_id: number;
  from_status: string | null;
  to_status: string;
  note: string | null;
  created_at: string;
}

export interface InvoiceTable {
  id: Generated<number>;
  /** 32 random characters: the guest link to the invoice. */
  hash: string;
  client_id: number;
  status: InvoiceStatus;
  currency: string;
  subtotal: number;
  total: number;
  due_at: string | null;
  paid_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface InvoiceItemTable {
  id: Generated<number>;
  invoice_id: number;
  /** Null once the order was deleted. */
  order_id: number | null;
  task: InvoiceTask;
  title: string;
  period: string | null;
  quantity: number;
  /** Unit price, minor units. */
  price: number;
  /** quantity × price (+ setup for activation), minor units. */
  total: number;
  /** 0/1: the task ran. */
  executed: number;
}

export interface TransactionTable {
  id: Generated<number>;
  invoice_id: number;
  gateway_id: number | null;
  /** The gateway's reference, if any. */
  transaction_id: string | null;
  /** Minor units, positive for payments and refunds alike. */
  amount: number;
  currency: string;
  /** `payment` or `refund` (CONTRACT §9). */
  type: string;
  /** The client the invoice belongs to (added by migration 007). */
  client_id: number | null;
  /** The gateway's code (`custom`, `stripe`), null when staff recorded it without one. */
  gateway: string | null;
  /** `processed` | `failed` | `refunded` | `error`. */
  status: Generated<string>;
  /** The provider's message (decline reason, mismatch), null when there is none. */
  message: string | null;
  created_at: string;
  /**
   * On a refund of a payment that was never applied (a late payment, refunded automatically): that payment's
   * transaction id. Null on the invoice's own refunds, which are the ones an invoice's refunded total counts (025).
   */
  refund_of: ColumnType<number | null, number | null | undefined, number | null>;
}

export interface SellingTables {
  products: ProductTable;
  cart_items: CartItemTable;
  orders: OrderTable;
  order_history: OrderHistoryTable;
  invoices: InvoiceTable;
  invoice_items: InvoiceItemTable;
  transactions: TransactionTable;
}
