// Tables of billing (migration 006): settings, taxes, coupons and their uses, the coupon on a cart; and the columns
// it adds to clients, invoices and orders. Kysely merges these column sets with the ones in core.ts and selling.ts
// through the intersection in schema.ts, so existing inserts need none of them (they all have defaults or are null).
import type { Generated } from 'kysely';

export interface SettingTable {
  name: string;
  value: string;
  updated_at: string;
}

export interface TaxTable {
  id: Generated<number>;
  name: string;
  /** Thousandths of a percent: 20% = 20000. */
  rate: number;
  /** ISO 3166-1 alpha-2, or null for the rule that applies everywhere. */
  country: string | null;
  state: string | null;
  created_at: string;
  updated_at: string;
}

export type PromoType = 'percentage' | 'absolute';

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

export interface PromoUseTable {
  id: Generated<number>;
  promo_id: number;
  client_id: number;
  invoice_id: number | null;
  created_at: string;
}

export interface CartPromoTable {
  id: Generated<number>;
  client_id: number | null;
  session_hash: string | null;
  promo_id: number;
  created_at: string;
}

export interface ClientBillingColumns {
  tax_exempt: Generated<number>;
  vat_number: string | null;
}

export interface InvoiceBillingColumns {
  /** `<prefix><n>`, given when the invoice becomes paid; null before (a proforma). */
  number: string | null;
  /** JSON snapshots taken when the invoice was issued. */
  seller: string | null;
  buyer: string | null;
  tax_name: string | null;
  /** Thousandths of a percent. */
  tax_rate: Generated<number>;
  tax: Generated<number>;
  discount: Generated<number>;
  promo_code: string | null;
}

export interface OrderBillingColumns {
  /** A recurring coupon that also discounts this order's renewals. */
  promo_id: number | null;
  /** 0/1: the client canceled; the order stays active until expires_at, then the scheduler cancels it. */
  cancel_at_period_end: Generated<number>;
  /** A downgrade waiting for the next renewal: the plan, period and unit price it will renew on. */
  next_product_id: number | null;
  next_period: string | null;
  next_price: number | null;
}

export interface InvoiceItemBillingColumns {
  /** For a 'change' item: the plan the order moves to when the invoice is paid; for a 'renew' item: the plan renewed. */
  product_id: number | null;
  /** Migration 017. For a 'change' item: the unused part of the current period taken off the new plan's price. */
  credit: Generated<number>;
  /** For a 'change' item: the end of the period its credit was computed for (the invoice lapses then). */
  priced_until: string | null;
  /** For an executed 'renew' or 'change' item: the order's expiry it bought. */
  covers_until: string | null;
}

export interface BillingTables {
  settings: SettingTable;
  taxes: TaxTable;
  promos: PromoTable;
  promo_uses: PromoUseTable;
  cart_promos: CartPromoTable;
  clients: ClientBillingColumns;
  invoices: InvoiceBillingColumns;
  invoice_items: InvoiceItemBillingColumns;
  orders: OrderBillingColumns;
}
