// The client area's shared state: who is logged in (null = guest, undefined = not known yet) and the cart badge.
import { call, type Action } from '../lib/api.ts';
import { createStore } from '../lib/store.ts';
import type { Cart, ClientRecord } from '../lib/types.ts';

export const account = createStore<ClientRecord | null | undefined>(undefined);
export const cartSummary = createStore<{ count: number; currency: string | null }>({ count: 0, currency: null });
/** A message for the login page, e.g. why the user was sent there. */
export const loginReason = createStore<string | null>(null);

/** The cart actions both roles have (get, add_item, apply_promo…). */
type CartAction = BothRoles<Action>;
type BothRoles<A> = A extends `client/cart/${infer Name}` ? (`guest/cart/${Name}` extends Action ? Name : never) : never;

/** `client/...` when logged in, else `guest/...`: the cart actions exist under both roles. */
export function cartPath<Name extends CartAction>(action: Name): `client/cart/${Name}` | `guest/cart/${Name}` {
  return `${account.get() ? 'client' : 'guest'}/cart/${action}`;
}

export async function refreshCart(): Promise<Cart> {
  const cart = await call(cartPath('get'));
  cartSummary.set({ count: cart.items.reduce((sum, item) => sum + item.quantity, 0), currency: cart.currency });
  return cart;
}

export async function refreshAccount(): Promise<ClientRecord> {
  const record = await call('client/profile/get');
  account.set(record);
  return record;
}
