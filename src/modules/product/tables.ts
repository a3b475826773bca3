// Tables of the product module: products, coupons (promos) and their uses. Only this module writes them.
// Money is integer minor units of the instance currency; JSON is text; times are ISO strings.
import type { Generated } from 'kysely';

export type ProductStatus = 'enabled' | 'disabled';
export type SetupMode = 'after_order' | 'after_payment' | 'manual';

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

export type PromoType = 'percentage' | 'absolute';

/** Migration 006: a coupon. */
export interface PromoTable {
  id: Generated<number>;
  code: string;
  type: PromoType;
  /** percentage: thousandths of a percent; absolute: minor units. */
  value: number;
  /** JSON array of product ids, or null for every product. */
  products: string | null;
  /** JSON array of period codes, or null for every period. */
  periods: string | null;
  max_uses: number | null;
  used: Generated<number>;
  once_per_client: Generated<number>;
  recurring: Generated<number>;
  active: Generated<number>;
  start_at: string | null;
  end_at: string | null;
  created_at: string;
  updated_at: string;
}

/** Migration 006: one use of a coupon by a client. */
export interface PromoUseTable {
  id: Generated<number>;
  promo_id: number;
  client_id: number;
  invoice_id: number | null;
  created_at: string;
}

export interface ProductTables {
  products: ProductTable;
  promos: PromoTable;
  promo_uses: PromoUseTable;
}
