// Tables of the order module: orders and the history of their status. Only this module writes them.
// Money is integer minor units of the instance currency; JSON is text; times are ISO strings.
import type { Generated } from 'kysely';

export type OrderStatusColumn = 'pending_setup' | 'failed_setup' | 'active' | 'suspended' | 'canceled';

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
  /** Migration 006: a recurring coupon that also discounts this order's renewals. */
  promo_id: number | null;
  /** Migration 006: 0/1, the client canceled; the order stays active until expires_at, then the scheduler cancels it. */
  cancel_at_period_end: Generated<number>;
  /** Migration 006: a downgrade waiting for the next renewal: the plan, period and unit price it will renew on. */
  next_product_id: number | null;
  next_period: string | null;
  next_price: number | null;
  /** Migration 034: the end of the order's free trial (issue 24 item 7), or null for an order that had none. */
  trial_ends_at: string | null;
  /**
   * Migration 034: `running` until the end, `charging` while the first invoice's card charge is out, then `ended`;
   * `awaiting_card` before it starts: a trial that needs a card, checked out without one, waits for it to be saved.
   */
  trial_state: 'awaiting_card' | 'running' | 'charging' | 'ended' | null;
  /** Migration 034: 0/1, the reminder three days before the end went out. */
  trial_reminded: Generated<number>;
}

/** One trial taken: once per client and product, and once per card fingerprint and product (unique indexes). */
export interface TrialClaimTable {
  id: Generated<number>;
  order_id: number;
  client_id: number;
  product_id: number;
  card_fingerprint: string | null;
  created_at: string;
}

export interface OrderHistoryTable {
  id: Generated<number>;
  order_id: number;
  from_status: string | null;
  to_status: string;
  note: string | null;
  created_at: string;
}

export interface OrderTables {
  orders: OrderTable;
  order_history: OrderHistoryTable;
  trial_claims: TrialClaimTable;
}
