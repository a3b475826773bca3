// The order module's records: the row, the transitions of its status machine, and what the service takes and
// answers. Shared by the service files of this module and by the modules that hold orders (invoices, cron).
import type { Selectable } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { OrderStatus } from '../product/product-type.ts';
import type { ProductRow } from '../product/service.ts';

export type OrderRow = Selectable<Database['orders']>;
export type Transition = 'activate' | 'renew' | 'suspend' | 'unsuspend' | 'cancel' | 'uncancel';

/** The statuses each transition may start from; anything else answers 409. */
export const ALLOWED_FROM: Readonly<Record<Transition, readonly OrderStatus[]>> = {
  activate: ['pending_setup', 'failed_setup'],
  renew: ['active', 'suspended'],
  suspend: ['active'],
  unsuspend: ['suspended'],
  cancel: ['pending_setup', 'failed_setup', 'active', 'suspended'],
  uncancel: ['canceled'],
};

export interface OrderRecord {
  id: number;
  client_id: number;
  product_id: number;
  title: string;
  type: string;
  period: string | null;
  quantity: number;
  price: string;
  currency: string;
  status: OrderStatus;
  reason: string | null;
  expires_at: string | null;
  activated_at: string | null;
  suspended_at: string | null;
  canceled_at: string | null;
  unpaid_invoice_id: number | null;
  /** CONTRACT §8 self-service: canceled by the client, the order ends at expires_at. */
  cancel_at_period_end: boolean;
  /** A downgrade waiting for the next renewal: the plan and period the order will renew on, or null. */
  next_product_id: number | null; next_period: string | null;
  /** The end of the order's free trial (issue 24 item 7), or null; kept after the trial as a record. */
  trial_ends_at: string | null;
  /** True while the free trial runs (nothing paid yet). */
  on_trial: boolean;
  /** True while the order's free trial waits for the client to save a card (the order is pending until then). */
  trial_awaiting_card: boolean;
  /** The plan's usage terms in words (src/lib/usage-terms.ts), from the order's config snapshot; null: none. */
  usage_terms: string | null;
  created_at: string;
  updated_at: string;
  /** Staff only. */
  notes?: string | null;
  /** Staff only: the client has a saved card (a trial's end charges it). */
  card_on_file?: boolean;
  /** Staff lists only: the client's e-mail and name (null if the client no longer exists). */
  client_email?: string | null;
  client_name?: string | null;
}

export interface OrderFilters {
  status?: OrderStatus | undefined;
  client_id?: number | undefined;
  product_id?: number | undefined;
  type?: string | undefined;
  /** Staff only: the client's e-mail or name, the order's title, or (digits) the order's id. */
  search?: string | undefined;
  /** Staff only: creation day range, inclusive. */
  date_from?: string | undefined;
  date_to?: string | undefined;
  page?: number | undefined;
  per_page?: number | undefined;
}

export interface NewOrder {
  clientId: number;
  product: ProductRow;
  period: string | null;
  quantity: number;
  /** Unit price per period (or once), minor units of `currency`. */
  price: number;
  /** The client's currency (issue 26): the order is priced, invoiced and renewed in it. */
  currency: string;
  /** A recurring coupon that also discounts the order's renewals. */
  promoId?: number | null;
}

export interface OrderUpdate {
  expires_at?: string | undefined;
  period?: string | undefined;
  price?: string | number | undefined;
  notes?: string | undefined;
}
