// The currency a cart is in (issue 26 item 6; FOSSBilling's guest/cart/set_currency and get_currency): the one its
// owner chose, else the client's, else the default. A client whose currency is fixed by an earlier order cannot
// choose another one (409); the chosen currency becomes the client's at checkout. The only writer of cart_currencies.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { isoSeconds } from '../../lib/time.ts';
import type { SaleCurrency, Selling } from '../currency/selling.ts';
import { ownerColumns, type CartOwner } from './owner.ts';

export type CartCurrencies = ReturnType<typeof createCartCurrencies>;

export function createCartCurrencies(selling: Pick<Selling, 'describe' | 'forClient' | 'checkClientCurrency'>) {
  function rowOf(q: Kysely<Database>, owner: CartOwner) {
    const query = q.selectFrom('cart_currencies').select('currency');
    return 'clientId' in owner ? query.where('client_id', '=', owner.clientId) : query.where('session_hash', '=', owner.sessionHash);
  }

  function drop(q: Kysely<Database>, owner: CartOwner) {
    const query = q.deleteFrom('cart_currencies');
    return 'clientId' in owner ? query.where('client_id', '=', owner.clientId) : query.where('session_hash', '=', owner.sessionHash);
  }

  /** The cart's currency: chosen, else the client's, else the default. */
  async function of(q: Kysely<Database>, owner: CartOwner): Promise<SaleCurrency> {
    const chosen = (await rowOf(q, owner).executeTakeFirst())?.currency;
    if (chosen !== undefined) {
      // A currency chosen and deleted since (nothing else used it yet) is forgotten rather than refused.
      const found = await selling.describe(q, chosen).catch(() => null);
      if (found !== null) return found;
    }
    return 'clientId' in owner ? selling.forClient(q, owner.clientId) : selling.describe(q, null);
  }

  return {
    of,
    drop,

    /** Chooses the cart's currency: 422 when the instance lacks it, 409 when the client's is fixed to another one. */
    async choose(trx: Kysely<Database>, owner: CartOwner, code: string, now = new Date()): Promise<void> {
      const sale = await selling.describe(trx, code);
      if ('clientId' in owner) await selling.checkClientCurrency(trx, owner.clientId, sale.code);
      await drop(trx, owner).execute();
      await trx
        .insertInto('cart_currencies')
        .values({
          ...ownerColumns(owner),
          currency: sale.code,
          created_at: isoSeconds(now),
        })
        .execute();
    },

    /**
     * A guest cart moving to a client takes its currency along, unless the client's is already fixed to another one
     * (then the client's wins: it is what they can buy in).
     */
    async move(trx: Kysely<Database>, sessionHash: string, clientId: number): Promise<void> {
      const chosen = (await rowOf(trx, { sessionHash }).executeTakeFirst())?.currency;
      await drop(trx, { sessionHash }).execute();
      if (chosen === undefined) return;
      const allowed = await selling.checkClientCurrency(trx, clientId, chosen).then(
        () => true,
        () => false,
      );
      await drop(trx, { clientId }).execute();
      if (allowed) await trx.insertInto('cart_currencies').values({ client_id: clientId, session_hash: null, currency: chosen, created_at: isoSeconds(new Date()) }).execute();
    },
  };
}
