// cart: the same actions for guests (cart of the guest session, started on the first add) and clients (their own
// cart; a guest cart carried in the cookie moves to the client), plus the client's checkout.
import { Type } from '@sinclair/typebox';
import { clientAction, guestAction, type CallContext, type ClientIdentity, type GuestIdentity, type ModuleApi } from '../../http/action.ts';
import { requireSessionCsrf } from '../../http/auth.ts';
import { readCookies, SESSION_COOKIE } from '../../http/session-control.ts';
import { Done } from '../../http/result-schemas.ts';
import { Cart, CheckoutResult } from './results.ts';
import type { CartOwner } from './service.ts';

const Id = Type.Integer({ minimum: 1, maximum: 2_147_483_647 });
const NO_PARAMS = Type.Object({});
const AddItem = Type.Object({
  id: Id,
  period: Type.Optional(Type.String({ minLength: 1, maxLength: 8 })),
  quantity: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  multiple: Type.Optional(Type.Boolean()),
});
const RemoveItem = Type.Object({ id: Id });
const ApplyPromo = Type.Object({ promocode: Type.String({ minLength: 1, maxLength: 64 }) });
const APPLY_SUMMARY = 'Applies a coupon to the cart; unknown, expired, used up, not applicable or already applied → 422 naming why';

/**
 * A guest call's cart: the logged-in client's if the session is a client's, else the guest session's. Without a
 * session one is started: CONTRACT §6 sets the session cookie on the first cart call, whichever it is.
 */
async function guestOwner(call: CallContext<GuestIdentity>): Promise<CartOwner> {
  const session = await call.session.current();
  if (session !== null && session.subject.type === 'client') {
    // Acting on a logged-in client's cart through the cookie alone would let another site change it (a link, even a
    // GET): the session's CSRF token is required, as on client/cart/*.
    requireSessionCsrf(call.services, call.request, session);
    return { clientId: session.subject.id };
  }
  if (session !== null) return { sessionHash: session.idHash };
  const created = await call.session.start({ type: 'guest', id: null });
  return { sessionHash: created.session.idHash };
}

/** A client call's cart; a guest session cookie sent along (API token calls) hands its cart over first. */
async function clientOwner(call: CallContext<ClientIdentity>): Promise<{ clientId: number }> {
  const clientId = call.identity.client.id;
  if (call.identity.via === 'token') {
    const cookie = readCookies(call.request)[SESSION_COOKIE];
    if (cookie !== undefined && cookie !== '') {
      const session = await call.services.sessions.load(cookie);
      if (session !== null && session.subject.type === 'guest') await call.services.carts.moveGuestCart(session.idHash, clientId);
    }
  }
  return { clientId };
}

export const cartApi: ModuleApi = {
  name: 'cart',
  guest: {
    add_item: guestAction({
      params: AddItem,
      result: Done,
      summary: 'Adds a product to the guest cart (emptied first unless `multiple`)',
      async handler(params, call) {
        await call.services.carts.addItem(await guestOwner(call), params);
        return true;
      },
    }),
    get: guestAction({
      params: NO_PARAMS,
      summary: "The guest session's cart: lines, prices, applied coupon and totals (starts a guest session when there is none)",
      result: Cart,
      handler: async (_params, call) => call.services.carts.get(await guestOwner(call)),
    }),
    remove_item: guestAction({
      params: RemoveItem,
      summary: 'Removes one line (by its cart line id) from the guest cart',
      result: Done,
      async handler({ id }, call) {
        await call.services.carts.removeItem(await guestOwner(call), id);
        return true;
      },
    }),
    apply_promo: guestAction({
      params: ApplyPromo,
      result: Done,
      summary: APPLY_SUMMARY,
      async handler({ promocode }, call) {
        await call.services.carts.applyPromo(await guestOwner(call), promocode);
        return true;
      },
    }),
    remove_promo: guestAction({
      params: NO_PARAMS,
      summary: 'Removes the coupon from the guest cart',
      result: Done,
      async handler(_params, call) {
        await call.services.carts.removePromo(await guestOwner(call));
        return true;
      },
    }),
    reset: guestAction({
      params: NO_PARAMS,
      summary: 'Empties the guest cart and removes its coupon',
      result: Done,
      async handler(_params, call) {
        await call.services.carts.reset(await guestOwner(call));
        return true;
      },
    }),
  },
  client: {
    add_item: clientAction({
      params: AddItem,
      result: Done,
      summary: "Adds a product to the client's cart (emptied first unless `multiple`)",
      async handler(params, call) {
        await call.services.carts.addItem(await clientOwner(call), params);
        return true;
      },
    }),
    get: clientAction({
      params: NO_PARAMS,
      summary: "The client's cart: lines, prices, applied coupon and totals",
      result: Cart,
      handler: async (_params, call) => call.services.carts.get(await clientOwner(call)),
    }),
    remove_item: clientAction({
      params: RemoveItem,
      summary: "Removes one line (by its cart line id) from the client's cart",
      result: Done,
      async handler({ id }, call) {
        await call.services.carts.removeItem(await clientOwner(call), id);
        return true;
      },
    }),
    apply_promo: clientAction({
      params: ApplyPromo,
      result: Done,
      summary: APPLY_SUMMARY,
      async handler({ promocode }, call) {
        await call.services.carts.applyPromo(await clientOwner(call), promocode);
        return true;
      },
    }),
    remove_promo: clientAction({
      params: NO_PARAMS,
      summary: "Removes the coupon from the client's cart",
      result: Done,
      async handler(_params, call) {
        await call.services.carts.removePromo(await clientOwner(call));
        return true;
      },
    }),
    reset: clientAction({
      params: NO_PARAMS,
      summary: "Empties the client's cart and removes its coupon",
      result: Done,
      async handler(_params, call) {
        await call.services.carts.reset(await clientOwner(call));
        return true;
      },
    }),
    checkout: clientAction({
      params: Type.Object({ gateway_id: Type.Optional(Id) }),
      rateLimit: 'CHECKOUT',
      summary: 'Turns the cart into orders and, when something is owed, one unpaid invoice',
      result: CheckoutResult,
      async handler({ gateway_id }, call) {
        const { clientId } = await clientOwner(call);
        // An unconfirmed address may browse and fill a cart, not order (REQUIRE_EMAIL_VERIFICATION, CONTRACT §10).
        await call.services.accounts.requireConfirmedEmail(clientId);
        return call.services.carts.checkout(clientId, { gatewayId: gateway_id });
      },
    }),
  },
};
