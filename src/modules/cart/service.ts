// Carts and checkout. A cart belongs to a client, or to a guest session until the guest logs in or signs up; the
// only writer of `cart_items`. Checkout turns the cart into orders and one invoice in a single transaction (the order
// module places them: order/placing.ts).
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { EventBus } from '../../platform/events.ts';
import { errors } from '../../platform/errors.ts';
import { moneyFor } from '../../lib/money.ts';
import { isoSeconds } from '../../lib/time.ts';
import type { GatewayRegistry } from '../payment/gateways.ts';
import type { TaxService } from '../invoice/taxes.ts';
import type { OrderPlacing } from '../order/placing.ts';
import type { Quote } from '../product/pricing.ts';
import { discountOf, type DiscountableLine, type PromoRow, type PromoService } from '../product/promos.ts';
import type { ProductRow, ProductService } from '../product/service.ts';
import { usageTermsOf } from '../product/usage-terms.ts';
import { inTransaction } from '../../platform/transaction.ts';

import { ownerColumns, type CartOwner } from './owner.ts';
import { createCartCurrencies } from './cart-currency.ts';
import type { SaleCurrency, Selling } from '../currency/selling.ts';
import { amountIn } from '../currency/selling.ts';
import { quoteIn } from '../product/currency-prices.ts';
import type { ClientService } from '../client/service.ts';

export type { CartOwner };

export interface CartItemView {
  id: number;
  product_id: number;
  title: string;
  type: string;
  period: string | null;
  quantity: number;
  price: string;
  setup_price: string;
  total: string;
  /** The plan's usage terms in words (included calls, overage, limits), or null for a plan that meters nothing. */
  usage_terms: string | null;
}

export interface CartView {
  items: CartItemView[];
  subtotal: string;
  /** The applied coupon's code (CONTRACT §8), or null. */
  promocode: string | null;
  /** What the coupon takes off the subtotal; taxes are added on the invoice. */
  discount: string;
  /** subtotal − discount. */
  total: string;
  currency: string;
}

export interface CheckoutResult {
  order_id: number;
  orders: number[];
  invoice_id: number | null;
  invoice_hash: string | null;
  /** A free trial waits for a card: where the client saves it; else null. */
  setup_url: string | null;
}

export const MAX_CART_ITEMS = 50;

export interface CartServiceDeps {
  db: Kysely<Database>;
  events: EventBus;
  products: Pick<ProductService, 'pricingOf' | 'typeOf' | 'configOf'>;
  /** Checkout's orders and invoice. */
  placing: Pick<OrderPlacing, 'place'>;
  gateways: Pick<GatewayRegistry, 'require'>;
  /** Which currency the cart is in, the client's currency and the rates (issue 26). */
  selling: Pick<Selling, 'describe' | 'forClient' | 'checkClientCurrency' | 'useForClient'>;
  /** Checkout makes the cart's currency the client's (until their first order it may change). */
  clients: Pick<ClientService, 'fixCurrency'>;
  promos: Pick<PromoService, 'applicable'>;
  /** Whether tax rules exist: then checkout needs the client's billing country. */
  taxes: Pick<TaxService, 'anyRule'>;
  /**
   * Saving a card without a payment (payment/service.ts): a free trial that needs a card, checked out without one,
   * waits for it, and checkout answers where to save it.
   */
  cardSetup: { available(): boolean; start(clientId: number, returnPath: string): Promise<{ redirect_url: string }> };
}

/** A coupon's absolute amount (set in the default currency) in the sale's currency; a percentage stays as it is. */
function promoIn<P extends PromoRow>(promo: P, sale: SaleCurrency): P {
  return promo.type === 'absolute' ? { ...promo, value: amountIn(promo.value, sale) } : promo;
}

export function createCartService({ db, events, products, placing, gateways, selling, clients, promos, taxes, cardSetup }: CartServiceDeps) {
  const currencies = createCartCurrencies(selling);

  /**
   * Tax applies to people who sign up themselves (issue 21 item 8): while any tax rule exists, a client who signed
   * itself up and is not tax-exempt checks out something to pay only with a billing country, so the invoice's "Bill to" and its tax are
   * right. A clear 422 names `country` and says where to set it; the cart stays as it was (the transaction rolls back).
   */
  async function requireBillingCountry(trx: Kysely<Database>, clientId: number): Promise<void> {
    if (!(await taxes.anyRule(trx))) return;
    const client = await trx.selectFrom('clients').select(['country', 'tax_exempt', 'self_signup']).where('id', '=', clientId).executeTakeFirst();
    // Accounts staff create are staff's to complete (and predate nothing here): only self sign-ups are asked.
    if (client === undefined || client.self_signup !== 1 || client.tax_exempt === 1 || (client.country ?? '').trim() !== '') return;
    throw errors.invalid('country', 'is required before checkout: set your billing country in your profile (client/profile/update), as tax depends on it');
  }

  /** A product's usage terms in words (src/lib/usage-terms.ts), from what the catalogue shows of its config. */
  const termsOf = (product: ProductRow, currency: string) => usageTermsOf(products, currency)(product);

  function promoRowOf(trx: Kysely<Database>, owner: CartOwner) {
    const query = trx.selectFrom('cart_promos');
    return 'clientId' in owner ? query.where('client_id', '=', owner.clientId) : query.where('session_hash', '=', owner.sessionHash);
  }

  /** The coupon applied to the cart, or undefined. */
  function appliedPromo(trx: Kysely<Database>, owner: CartOwner): Promise<PromoRow | undefined> {
    return promoRowOf(trx, owner).innerJoin('promos', 'promos.id', 'cart_promos.promo_id').selectAll('promos').executeTakeFirst();
  }

  function dropPromo(trx: Kysely<Database>, owner: CartOwner) {
    const query = trx.deleteFrom('cart_promos');
    return 'clientId' in owner ? query.where('client_id', '=', owner.clientId) : query.where('session_hash', '=', owner.sessionHash);
  }

  /** The cart's lines as a coupon sees them (prices as the product offers them now). */
  async function discountableLines(trx: Kysely<Database>, owner: CartOwner): Promise<DiscountableLine[]> {
    const sale = await currencies.of(trx, owner);
    const rows = await itemsOf(trx, owner).orderBy('id').execute();
    const lines: DiscountableLine[] = [];
    for (const row of rows) {
      const product = await trx.selectFrom('products').selectAll().where('id', '=', row.product_id).executeTakeFirst();
      if (product === undefined) continue;
      let q: Quote;
      try {
        q = quoteIn(products.pricingOf(product), row.period, sale);
      } catch {
        continue;
      }
      lines.push({ productId: row.product_id, period: q.period, total: lineTotal(q, row.quantity) });
    }
    return lines;
  }

  function itemsOf(trx: Kysely<Database>, owner: CartOwner) {
    const query = trx.selectFrom('cart_items').selectAll();
    return 'clientId' in owner ? query.where('client_id', '=', owner.clientId) : query.where('session_hash', '=', owner.sessionHash).where('client_id', 'is', null);
  }

  function deleteAll(trx: Kysely<Database>, owner: CartOwner) {
    const query = trx.deleteFrom('cart_items');
    return 'clientId' in owner ? query.where('client_id', '=', owner.clientId) : query.where('session_hash', '=', owner.sessionHash).where('client_id', 'is', null);
  }

  /** The product if it can be bought now (404 otherwise), and its price for `period` (422 when not offered). */
  async function sellable(trx: Kysely<Database>, productId: number, period: string | null | undefined, sale: SaleCurrency): Promise<{ product: ProductRow; quote: Quote }> {
    const product = await trx.selectFrom('products').selectAll().where('id', '=', productId).executeTakeFirst();
    if (product === undefined || product.status !== 'enabled') throw errors.notFound('Product');
    return { product, quote: quoteIn(products.pricingOf(product), period, sale) };
  }

  function lineTotal(q: Quote, quantity: number): number {
    return q.price * quantity + q.setup;
  }

  /** Moves a guest session's cart (if it has items) to a client, replacing what the client's cart held. */
  async function moveGuestCart(trx: Kysely<Database>, sessionHash: string, clientId: number): Promise<boolean> {
    const guest = await itemsOf(trx, { sessionHash }).select('id').limit(1).executeTakeFirst();
    if (guest === undefined) return false;
    await deleteAll(trx, { clientId }).execute();
    await trx.updateTable('cart_items').set({ client_id: clientId, session_hash: null }).where('session_hash', '=', sessionHash).where('client_id', 'is', null).execute();
    // The coupon goes with the cart it was applied to.
    await dropPromo(trx, { clientId }).execute();
    await trx.updateTable('cart_promos').set({ client_id: clientId, session_hash: null }).where('session_hash', '=', sessionHash).execute();
    await currencies.move(trx, sessionHash, clientId);
    return true;
  }

  events.on('client.logged_in', async ({ clientId, previousSessionId }, trx) => {
    if (previousSessionId !== null) await moveGuestCart(trx, previousSessionId, clientId);
  });

  events.on('client.deleted', async ({ clientId }, trx) => {
    await deleteAll(trx, { clientId }).execute();
    await dropPromo(trx, { clientId }).execute();
    await currencies.drop(trx, { clientId }).execute();
  });

  return {
    moveGuestCart: (sessionHash: string, clientId: number): Promise<boolean> =>
      inTransaction(db, (trx) => moveGuestCart(trx, sessionHash, clientId)),

    async hasItems(owner: CartOwner): Promise<boolean> {
      return (await itemsOf(db, owner).select('id').limit(1).executeTakeFirst()) !== undefined;
    },

    async addItem(
      owner: CartOwner,
      input: { id: number; period?: string | undefined; quantity?: number | undefined; multiple?: boolean | undefined },
      now = new Date(),
    ): Promise<void> {
      await inTransaction(db, async (trx) => {
        const { quote: q } = await sellable(trx, input.id, input.period, await currencies.of(trx, owner));
        if (input.multiple !== true) await deleteAll(trx, owner).execute();
        const count = await itemsOf(trx, owner)
          .clearSelect()
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow();
        if (count.n >= MAX_CART_ITEMS) throw errors.conflict(`A cart holds at most ${MAX_CART_ITEMS} items`);
        await trx
          .insertInto('cart_items')
          .values({
            ...ownerColumns(owner),
            product_id: input.id,
            period: q.period,
            quantity: input.quantity ?? 1,
            created_at: isoSeconds(now),
          })
          .execute();
      });
    },

    /** The code of the cart's currency (guest/cart/get_currency answers its record). */
    async currency(owner: CartOwner): Promise<string> {
      return (await currencies.of(db, owner)).code;
    },

    /** guest/cart/set_currency: 422 for a currency the instance lacks, 409 when the client's is fixed to another. */
    async setCurrency(owner: CartOwner, code: string): Promise<void> {
      await inTransaction(db, (trx) => currencies.choose(trx, owner, code));
    },

    async get(owner: CartOwner): Promise<CartView> {
      const sale = await currencies.of(db, owner);
      const money = moneyFor(sale.code);
      const rows = await itemsOf(db, owner)
        .clearSelect()
        .innerJoin('products', 'products.id', 'cart_items.product_id')
        .select([
          'cart_items.id as id',
          'cart_items.product_id as product_id',
          'cart_items.period as period',
          'cart_items.quantity as quantity',
          'products.title as title',
          'products.type as type',
          'products.pricing as pricing',
          'products.status as status',
          'products.config as config',
        ])
        .orderBy('cart_items.id')
        .execute();
      let sum = 0;
      const items: CartItemView[] = [];
      const lines: DiscountableLine[] = [];
      for (const row of rows) {
        let q: Quote;
        try {
          q = quoteIn(products.pricingOf({ pricing: row.pricing } as ProductRow), row.period, sale);
        } catch {
          // The product no longer offers this period: checkout will refuse it; show it at no price meanwhile.
          q = { period: row.period, price: 0, setup: 0 };
        }
        const total = lineTotal(q, row.quantity);
        sum += total;
        lines.push({ productId: row.product_id, period: q.period, total });
        items.push({
          id: row.id,
          product_id: row.product_id,
          title: row.title,
          type: row.type,
          period: row.period,
          quantity: row.quantity,
          price: money.format(q.price),
          setup_price: money.format(q.setup),
          total: money.format(total),
          // Only the type and config are read (the product's public config).
          // Meter prices are set in the default currency and billed converted at the close: quoted as set.
          usage_terms: termsOf({ id: row.product_id, type: row.type, config: row.config } as ProductRow, sale.defaultCode),
        });
      }
      const applied = await appliedPromo(db, owner);
      const promo = applied === undefined ? undefined : promoIn(applied, sale);
      const discount = promo === undefined ? 0 : discountOf(promo, lines);
      return {
        items,
        subtotal: money.format(sum),
        promocode: promo?.code ?? null,
        discount: money.format(discount),
        total: money.format(sum - discount),
        currency: sale.code,
      };
    },

    /**
     * Applies a coupon to the cart (replacing another one). 422 naming `promocode` when it is unknown, not usable
     * now, not for anything in the cart, already applied, or (for a client) already used by this account.
     */
    async applyPromo(owner: CartOwner, code: string, now = new Date()): Promise<void> {
      await inTransaction(db, async (trx) => {
        const lines = await discountableLines(trx, owner);
        const promo = await promos.applicable(trx, code, lines, 'clientId' in owner ? owner.clientId : null, now);
        const current = await promoRowOf(trx, owner).select('promo_id').executeTakeFirst();
        if (current?.promo_id === promo.id) throw errors.invalid('promocode', 'is already applied to this cart');
        await dropPromo(trx, owner).execute();
        await trx
          .insertInto('cart_promos')
          .values({
            ...ownerColumns(owner),
            promo_id: promo.id,
            created_at: isoSeconds(now),
          })
          .execute();
      });
    },

    async removePromo(owner: CartOwner): Promise<void> {
      await dropPromo(db, owner).execute();
    },

    async removeItem(owner: CartOwner, itemId: number): Promise<void> {
      const query = db.deleteFrom('cart_items').where('id', '=', itemId);
      const result = await ('clientId' in owner
        ? query.where('client_id', '=', owner.clientId)
        : query.where('session_hash', '=', owner.sessionHash).where('client_id', 'is', null)
      ).executeTakeFirst();
      if (Number(result.numDeletedRows) === 0) throw errors.notFound('Cart item');
    },

    /** Deletes guest cart items whose session has ended (expired or logged out); returns how many. */
    async purgeAbandoned(): Promise<number> {
      const result = await db
        .deleteFrom('cart_items')
        .where('client_id', 'is', null)
        .where((eb) => eb.not(eb.exists(eb.selectFrom('sessions').select('id_hash').whereRef('sessions.id_hash', '=', 'cart_items.session_hash'))))
        .executeTakeFirst();
      return Number(result.numDeletedRows);
    },

    async reset(owner: CartOwner): Promise<void> {
      await inTransaction(db, async (trx) => {
        await deleteAll(trx, owner).execute();
        await dropPromo(trx, owner).execute();
      });
    },

    /** The client's cart becomes orders (and one invoice when something is owed), all or nothing. */
    async checkout(clientId: number, input: { gatewayId?: number | undefined; ipCountry?: string | null } = {}, now = new Date()): Promise<CheckoutResult> {
      if (input.gatewayId !== undefined) gateways.require(input.gatewayId);
      const result = await inTransaction(db, async (trx) => {
        // Taking the items out of the cart first is the compare-and-set: of two concurrent checkouts of one cart, the
        // second waits for the first's row locks and then finds nothing to take (409), so nothing is ordered twice.
        // A failure later rolls the deletion back and the cart is intact.
        const taken = await deleteAll(trx, { clientId }).returningAll().execute();
        if (taken.length === 0) throw errors.conflict('The cart is empty');
        const items = taken.toSorted((a, b) => a.id - b.id);
        // The currencies' lock first (taken shared by useForClient): a currency deleted meanwhile is gone before the
        // cart's choice is read (and then forgotten), and none can go until this sale commits.
        await selling.useForClient(trx, clientId);
        // The cart's currency becomes the client's (409 when an earlier order fixed another one), and everything
        // below — prices, orders, the invoice — is in it, at the rate of this moment.
        await clients.fixCurrency(trx, clientId, (await currencies.of(trx, { clientId })).code);
        await currencies.drop(trx, { clientId }).execute();
        const sale = await selling.useForClient(trx, clientId);
        const lines = [];
        for (const item of items) {
          const { product, quote: q } = await sellable(trx, item.product_id, item.period, sale);
          lines.push({ product, quote: q, quantity: item.quantity });
        }
        // The coupon is checked again now (it may have expired or been used up since it was applied): a refusal
        // rolls everything back, the cart and its coupon included.
        const applied = await appliedPromo(trx, { clientId });
        const promo =
          applied === undefined
            ? undefined
            : promoIn(await promos.applicable(
                trx,
                applied.code,
                lines.map((line) => ({ productId: line.product.id, period: line.quote.period, total: lineTotal(line.quote, line.quantity) })),
                clientId,
                now,
              ), sale);
        if (applied !== undefined) await dropPromo(trx, { clientId }).execute();
        if (lines.some((line) => lineTotal(line.quote, line.quantity) > 0)) await requireBillingCountry(trx, clientId);
        const placed = await placing.place(trx, clientId, lines, { invoice: true, activate: 'auto', now, promo, trials: true, ipCountry: input.ipCountry ?? null, awaitCard: cardSetup.available() });
        const ids = placed.orders.map((order) => order.id);
        return { order_id: ids[0]!, orders: ids, invoice_id: placed.invoice?.id ?? null, invoice_hash: placed.invoice?.hash ?? null, awaiting: placed.awaitingCard.length > 0 };
      });
      const { awaiting, ...placed } = result;
      // Once the orders are committed: the page where the client saves the card their trial waits for. Stripe out of
      // reach leaves the order waiting; "Add a card" (client/payment_method/setup) starts it later.
      const setup = awaiting ? await cardSetup.start(clientId, '/orders').catch(() => null) : null;
      return { ...placed, setup_url: setup?.redirect_url ?? null };
    },

  };
}

export type CartService = ReturnType<typeof createCartService>;
