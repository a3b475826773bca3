// Shapes of the API's results (CONTRACT §6–7) as the pages use them. Records the server defines are imported from
// it (type-only, erased at build time), so the pages and the API cannot drift apart.
export type { CartItemView as CartItem, CartView as Cart, CheckoutResult } from '../../../src/modules/cart/service.ts';
export type { ClientRecord } from '../../../src/modules/client/service.ts';
export type { InvoiceItemRecord as InvoiceItem, InvoiceRecord as Invoice } from '../../../src/modules/invoice/service.ts';
export type { OrderRecord as Order } from '../../../src/modules/order/service.ts';
export type { KeyInfo, KeyRecord as ApiKey, UsageReport as Usage } from '../../../src/modules/serviceapikey/service.ts';
export type { AdminGroupRecord as AdminGroup, StaffRecord } from '../../../src/modules/staff/service.ts';
export type { TaxRecord } from '../../../src/modules/invoice/taxes.ts';
export type { PromoRecord } from '../../../src/modules/product/promos.ts';

export interface LoginResult {
  id: number;
  email: string;
  name: string;
  role: 'client' | 'admin';
}

export interface PeriodPrice {
  price: string;
  setup: string;
  enabled: boolean | number;
}

export interface Pricing {
  type: 'free' | 'once' | 'recurrent';
  once?: { price: string; setup: string } | null;
  recurrent?: Record<string, PeriodPrice> | null;
}

export interface Product {
  id: number;
  title: string;
  slug: string | null;
  description: string | null;
  type: string;
  status?: string;
  hidden?: boolean | number;
  setup?: string;
  currency?: string | null;
  pricing: Pricing | null;
  config: Record<string, unknown> | null;
  created_at?: string;
  updated_at?: string;
}

export interface Gateway {
  id: number;
  code: string;
  title: string;
  instructions: string | null;
}

/** `true`/1 → true. */
export function truthy(value: unknown): boolean {
  return value === true || value === 1 || value === '1' || value === 'true';
}

/** First and last day (YYYY-MM-DD) of the current UTC month: the default usage period. */
export function currentPeriod(now = new Date()): { from: string; to: string } {
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 0));
  return { from: start.toISOString().slice(0, 10), to: end.toISOString().slice(0, 10) };
}
