// Shared set-up for the selling tests: products through the admin API, signed-up clients with a browser session.
import { expect } from 'vitest';
import { Browser, type TestApp } from './app.ts';

export interface ProductOptions {
  title?: string;
  type?: string;
  pricing?: Record<string, unknown>;
  setup?: 'after_order' | 'after_payment' | 'manual';
  status?: 'enabled' | 'disabled';
  config?: Record<string, unknown>;
}

export const MONTHLY = { type: 'recurrent', recurrent: { '1M': { price: '10.00', setup: '0', enabled: true } } };

/** Creates, prices and (by default) enables a product through the admin API. */
export async function makeProduct(t: TestApp, options: ProductOptions = {}): Promise<number> {
  const prepared = await t.admin('product/prepare', { title: options.title ?? 'Plan', type: options.type ?? 'custom' });
  expect(prepared.body.error).toBeNull();
  const id = prepared.result as number;
  const updated = await t.admin('product/update', {
    id,
    status: options.status ?? 'enabled',
    pricing: options.pricing ?? MONTHLY,
    ...(options.setup !== undefined && { setup: options.setup }),
    ...(options.config !== undefined && { config: options.config }),
  });
  expect(updated.body.error).toBeNull();
  return id;
}

let signups = 0;

/** Signs a new client up through guest/client/create in `browser` (which may already hold a guest cart). */
export async function signUp(t: TestApp, browser = new Browser()): Promise<{ id: number; browser: Browser; email: string; password: string }> {
  signups += 1;
  const email = `buyer${signups}-${Math.random().toString(36).slice(2, 8)}@example.com`;
  const password = 'Buyer-Passw0rd';
  const reply = await t.call('/api/guest/client/create', { email, first_name: 'Buyer', password, password_confirm: password }, { browser });
  expect(reply.body.error).toBeNull();
  return { id: reply.result as number, browser, email, password };
}

/** A client call with an API token. */
export function asClient(t: TestApp, token: string, path: string, params: Record<string, unknown> = {}) {
  return t.call(`/api/client/${path}`, params, { basic: ['client', token] });
}

/** A client call in a browser session (CSRF header sent). */
export function inBrowser(t: TestApp, browser: Browser, path: string, params: Record<string, unknown> = {}) {
  return t.call(`/api/client/${path}`, params, { browser, csrf: true });
}

/** Asserts the error envelope: `expectError(reply, code, status = code)`. */
export { expectError } from './assertions.ts';

let staffCounter = 0;

/**
 * An admin API token of a staff member in a new group holding exactly `permissions`, both made through the admin API
 * (admin/staff/group_create, admin/staff/create) as an operator would.
 */
export async function staffWith(t: TestApp, permissions: string[]): Promise<string> {
  staffCounter += 1;
  const group = await t.admin('staff/group_create', { name: `Selling test ${staffCounter}`, permissions });
  expect(group.body.error).toBeNull();
  const created = await t.admin('staff/create', {
    email: `staff${staffCounter}-${Math.random().toString(36).slice(2, 8)}@example.com`,
    password: 'Staff-Passw0rd',
    name: 'Staff',
    admin_group_id: group.result,
  });
  expect(created.body.error).toBeNull();
  return (await t.services.staff.profile(created.result as number)).api_token;
}

export function asStaff(t: TestApp, token: string, path: string, params: Record<string, unknown> = {}) {
  return t.call(`/api/admin/${path}`, params, { basic: ['admin', token] });
}

/** Every field of an order record, as admin/order/get and client/order/get return it (CONTRACT §6, §8). */
export const ORDER_FIELDS = [
  'id',
  'client_id',
  'product_id',
  'title',
  'type',
  'period',
  'quantity',
  'price',
  'currency',
  'status',
  'reason',
  'expires_at',
  'activated_at',
  'suspended_at',
  'canceled_at',
  'unpaid_invoice_id',
  'cancel_at_period_end',
  'next_product_id',
  'next_period',
  'usage_terms',
  // Issue 24: free trials.
  'trial_ends_at',
  'on_trial',
  'trial_awaiting_card',
  'created_at',
  'updated_at',
];
