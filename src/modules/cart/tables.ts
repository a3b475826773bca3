// Tables of the cart module: the items in a client's or a guest's cart and the coupon applied to it. Only this
// module writes them.
import type { Generated } from 'kysely';

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

/** Migration 006: the coupon on a cart (a client's, or a guest session's). */
export interface CartPromoTable {
  id: Generated<number>;
  client_id: number | null;
  session_hash: string | null;
  promo_id: number;
  created_at: string;
}

/** Migration 048: the currency a cart's owner chose (guest/cart/set_currency); none: the client's, else the default. */
export interface CartCurrencyTable {
  id: Generated<number>;
  client_id: number | null;
  session_hash: string | null;
  currency: string;
  created_at: string;
}

export interface CartTables {
  cart_items: CartItemTable;
  cart_promos: CartPromoTable;
  cart_currencies: CartCurrencyTable;
}
