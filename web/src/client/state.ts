// The client area's shared state: who is logged in (null = guest, undefined = not known yet) and the cart badge.
import { call } from '../lib/api.ts';
import { createStore } from '../lib/store.ts';
import type { Cart, ClientRecord } from '../lib/types.ts';

export const account = createStore<ClientRecord | null | undefined>(undefined);
export const cartSummary = createStore<{ count: number; currency: string | null }>({ count: 0, currency: null });
/** A message for the login page, e.g. why the user was sent there. */
export const loginReason = createStore<string | null>(null);

/** `client/...` when logged in, else `guest/...`: the cart actions exist under both roles. */
export function cartPath(action: string): string {
  return `${account.get() ? 'client' : 'guest'}/cart/${action}`;
}

export async function refreshCart(): Promise<Cart> {
  const cart = await call<Cart>(cartPath('get'));
  cartSummary.set({ count: cart.items.reduce((sum, item) => sum + item.quantity, 0), currency: cart.currency });
  return cart;
}

export async function refreshAccount(): Promise<ClientRecord> {
  const record = await call<ClientRecord>('client/profile/get');
  account.set(record);
  return record;
}
