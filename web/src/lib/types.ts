// Shapes of the API's results (CONTRACT §6–7) as the pages use them.

export interface ClientRecord {
  id: number;
  email: string;
  first_name: string;
  last_name: string | null;
  company: string | null;
  phone: string | null;
  address_1: string | null;
  address_2: string | null;
  city: string | null;
  state: string | null;
  postcode: string | null;
  country: string | null;
  currency: string | null;
  status: string;
  created_at: string;
  updated_at: string;
}

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

export interface CartItem {
  id: number;
  product_id: number;
  title: string;
  type: string;
  period: string | null;
  quantity: number;
  price: string;
  setup_price: string;
  total: string;
}

export interface Cart {
  items: CartItem[];
  subtotal: string;
  total: string;
  currency: string | null;
}

export interface CheckoutResult {
  order_id: number;
  orders: number[];
  invoice_id: number | null;
  invoice_hash: string | null;
}

export interface Order {
  id: number;
  client_id: number;
  product_id: number;
  title: string;
  type: string;
  period: string | null;
  quantity: number;
  price: string;
  currency: string | null;
  status: string;
  reason: string | null;
  expires_at: string | null;
  activated_at: string | null;
  suspended_at: string | null;
  canceled_at: string | null;
  unpaid_invoice_id: number | null;
  notes?: string | null;
  created_at: string;
  updated_at: string;
}

export interface InvoiceItem {
  title: string;
  order_id: number | null;
  task: string;
  quantity: number;
  price: string;
  total: string;
}

export interface Invoice {
  id: number;
  hash: string;
  client_id: number;
  status: string;
  currency: string | null;
  subtotal: string;
  total: string;
  due_at: string | null;
  paid_at: string | null;
  created_at: string;
  items: InvoiceItem[];
}

export interface Gateway {
  id: number;
  code: string;
  title: string;
  instructions: string | null;
}

export interface ApiKey {
  order_id: number;
  client_id?: number;
  api_key: string;
  valid: boolean | number;
  config: Record<string, unknown> | null;
  /** Whether check would accept the key now, and why not (VALID, DISABLED, NOT_ACTIVE, EXPIRED, LIMIT_EXCEEDED). */
  reason?: string;
  created_at: string;
  updated_at: string;
}

export interface Usage {
  total: number;
  days: { date: string; count: number }[];
  from?: string;
  to?: string;
  period_start?: string;
  period_end?: string;
}

export interface KeyInfo {
  valid: number;
  config: Record<string, unknown> | null;
  reason?: string;
  usage?: { period_start: string; period_end: string; used: number; limit: number | null; remaining: number | null };
}

export interface StaffRecord {
  id: number;
  email: string;
  name: string;
  status: string;
  admin_group_id: number;
  api_token?: string;
  created_at: string;
  updated_at: string;
}

export interface AdminGroup {
  id: number;
  name: string;
  permissions: string[] | string | null;
  created_at?: string;
  updated_at?: string;
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
