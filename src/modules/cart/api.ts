// cart: the same actions for guests (cart of the guest session, started on the first add) and clients (their own
// cart; a guest cart carried in the cookie moves to the client), plus the client's checkout.
import { Type, type TObject } from '@sinclair/typebox';
import { actionsFor, type ActionDef, type CallContext, type ClientIdentity, type GuestIdentity, type ModuleApi } from '../../platform/action.ts';
import { Done } from '../../platform/schemas.ts';
import { errors } from '../../platform/errors.ts';
import type { AccountService } from '../account/service.ts';
import type { SystemService } from '../system/service.ts';
import { countryFromHeader } from '../../lib/eu-vat.ts';
import { Cart, CheckoutResult } from './results.ts';
import type { CartOwner, CartService } from './service.ts';
import type { CurrencyService } from '../currency/service.ts';
import { CurrencyResult } from '../currency/results.ts';

/** The services the cart module's actions use. */
export interface CartNeeds {
  carts: Pick<CartService, 'addItem' | 'get' | 'removeItem' | 'applyPromo' | 'removePromo' | 'reset' | 'checkout' | 'moveGuestCart' | 'currency' | 'setCurrency'>;
  /** get_currency answers the cart currency's record. */
  currencies: Pick<CurrencyService, 'get'>;
  accounts: Pick<AccountService, 'requireConfirmedEmail'>;
  /** The header carrying the buyer's IP country (setting ip_country_header), evidence for EU VAT (issue 26). */
  settings: Pick<SystemService, 'peek'>;
}

type CartCall<I extends GuestIdentity | ClientIdentity> = CallContext<I, CartNeeds>;

const { clientAction } = actionsFor<CartNeeds>();

const Id = Type.Integer({ minimum: 1, maximum: 2_147_483_647 });
const NO_PARAMS = Type.Object({});
const AddItem = Type.Object({
  id: Id,
  period: Type.Optional(Type.String({ minLength: 1, maxLength: 8 })),
  quantity: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  multiple: Type.Optional(Type.Boolean()),
});
const RemoveItem = Type.Object({ id: Id });
const SetCurrency = Type.Object({ currency: Type.String({ minLength: 1, maxLength: 3, description: 'One of the shop’s currencies (guest/currency/get_pairs)' }) });
const ApplyPromo = Type.Object({ promocode: Type.String({ minLength: 1, maxLength: 64 }) });
const APPLY_SUMMARY = 'Applies a coupon to the cart; unknown, expired, used up, not applicable or already applied → 422 naming why';

/**
 * A guest call's cart: the logged-in client's if the session is a client's, else the guest session's. Without a
 * session one is started: CONTRACT §6 sets the session cookie on the first cart call, whichever it is.
 */
async function guestOwner(call: CartCall<GuestIdentity>): Promise<CartOwner> {
  return guestCart(call, true);
}

/**
 * guest/cart/get: a read, so no CSRF token even on a client's session (seed §5.3.2 and FOSSBilling: CSRF does not
 * apply to guest calls). Another site can make the browser send the request but cannot read the answer.
 */
async function guestReader(call: CartCall<GuestIdentity>): Promise<CartOwner> {
  return guestCart(call, false);
}

async function guestCart(call: CartCall<GuestIdentity>, changes: boolean): Promise<CartOwner> {
  const session = await call.session.current();
  // A customer-portal session (issue 25) shows what its scopes open; a cart is in none of them.
  if ((session?.portal ?? null) !== null) throw errors.portalScope('the cart');
  if (session !== null && session.subject.type === 'client') {
    // Changing a logged-in client's cart through the cookie alone would let another site do it (a link, even a
    // GET): the session's CSRF token is required, as on client/cart/*.
    if (changes) call.session.requireCsrf(session);
    return { clientId: session.subject.id };
  }
  if (session !== null) return { sessionHash: session.idHash };
  const created = await call.session.start({ type: 'guest', id: null });
  return { sessionHash: created.session.idHash };
}

/** A client call's cart; a guest session cookie sent along (API token calls) hands its cart over first. */
async function clientOwner(call: CartCall<ClientIdentity>): Promise<{ clientId: number }> {
  const clientId = call.identity.client.id;
  if (call.identity.via === 'token') {
    // A token call brings no session of its own: `current()` reads the cookie sent along, if any.
    const session = await call.session.current();
    if (session !== null && session.subject.type === 'guest') await call.services.carts.moveGuestCart(session.idHash, clientId);
  }
  return { clientId };
}

/**
 * The cart actions guests and clients both have, on the cart `owner` finds for the call. `whose` names that cart in
 * the summaries ("the guest cart"); `getSummary` describes `get`, which differs by role; `reader` finds the cart `get`
 * reads (the guest's needs no CSRF token).
 */
function cartActions<I extends GuestIdentity | ClientIdentity>(
  owner: (call: CartCall<I>) => Promise<CartOwner>,
  whose: string,
  getSummary: string,
  reader: (call: CartCall<I>) => Promise<CartOwner> = owner,
) {
  const action = <P extends TObject>(def: ActionDef<P, I, CartNeeds>): ActionDef<P, I, CartNeeds> => def;
  return {
    add_item: action({
      params: AddItem,
      result: Done,
      summary: `Adds a product to ${whose} (emptied first unless \`multiple\`)`,
      async handler(params, call) {
        await call.services.carts.addItem(await owner(call), params);
        return true;
      },
    }),
    get: action({
      params: NO_PARAMS,
      summary: getSummary,
      result: Cart,
      handler: async (_params, call) => call.services.carts.get(await reader(call)),
    }),
    remove_item: action({
      params: RemoveItem,
      summary: `Removes one line (by its cart line id) from ${whose}`,
      result: Done,
      async handler({ id }, call) {
        await call.services.carts.removeItem(await owner(call), id);
        return true;
      },
    }),
    apply_promo: action({
      params: ApplyPromo,
      result: Done,
      summary: APPLY_SUMMARY,
      async handler({ promocode }, call) {
        await call.services.carts.applyPromo(await owner(call), promocode);
        return true;
      },
    }),
    remove_promo: action({
      params: NO_PARAMS,
      summary: `Removes the coupon from ${whose}`,
      result: Done,
      async handler(_params, call) {
        await call.services.carts.removePromo(await owner(call));
        return true;
      },
    }),
    set_currency: action({
      params: SetCurrency,
      result: Done,
      summary: `Shows ${whose} in another of the shop's currencies (FOSSBilling's); unknown → 422, a client whose first order fixed another → 409`,
      async handler({ currency }, call) {
        await call.services.carts.setCurrency(await owner(call), currency);
        return true;
      },
    }),
    get_currency: action({
      params: NO_PARAMS,
      result: CurrencyResult,
      summary: `The currency ${whose} is in: the one chosen, else the client's, else the default (FOSSBilling's)`,
      handler: async (_params, call) => call.services.currencies.get(await call.services.carts.currency(await reader(call))),
    }),
    reset: action({
      params: NO_PARAMS,
      summary: `Empties ${whose} and removes its coupon`,
      result: Done,
      async handler(_params, call) {
        await call.services.carts.reset(await owner(call));
        return true;
      },
    }),
  };
}

export const cartApi: ModuleApi<CartNeeds> = {
  name: 'cart',
  guest: cartActions(
    guestOwner,
    'the guest cart',
    "The guest session's cart (or the logged-in client's, with no CSRF token: a read): lines, prices, applied coupon and totals (starts a guest session when there is none)",
    guestReader,
  ),
  client: {
    ...cartActions(clientOwner, "the client's cart", "The client's cart: lines, prices, applied coupon and totals"),
    checkout: clientAction({
      params: Type.Object({ gateway_id: Type.Optional(Id) }),
      rateLimit: 'CHECKOUT',
      summary: 'Turns the cart into orders and, when something is owed, one unpaid invoice',
      result: CheckoutResult,
      async handler({ gateway_id }, call) {
        const { clientId } = await clientOwner(call);
        // An unconfirmed address may browse and fill a cart, not order (REQUIRE_EMAIL_VERIFICATION, CONTRACT §10).
        await call.services.accounts.requireConfirmedEmail(clientId);
        const header = call.services.settings.peek('ip_country_header');
        const ipCountry = header === null ? null : countryFromHeader(call.request.headers[header.toLowerCase()]);
        return call.services.carts.checkout(clientId, { gatewayId: gateway_id, ipCountry });
      },
    }),
  },
};
