// Prepaid plans' side of the ledger (issue 24 item 2): usage drawn from the balance as it is measured, and the record
// of each depletion. The serviceapikey module prices the usage (usage/prepaid-draw.ts) and calls `drawUsage` with the
// priced *cumulative* amount of each meter in the period; this takes the difference from what was drawn already, under
// the account's lock, so draws computed by two processes at once, or retried after a crash, never draw twice:
// - the lock serialises the writers of one balance, and `credit_usage_draws` (one row per order, meter and period)
//   holds the high-water mark read after the lock is taken;
// - a draw whose amount is not above the mark writes nothing (a slower process priced an older quantity);
// - the `consume` entry's idempotency key names the order, meter, period and the cumulative amount.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { EventBus } from '../../platform/events.ts';
import { inTransaction } from '../../platform/transaction.ts';
import { moneyFor } from '../../lib/money.ts';
import { convertMinorBack } from '../../lib/exchange.ts';
import { amountIn, type SaleCurrency, type Selling } from '../currency/selling.ts';
import { isoSeconds } from '../../lib/time.ts';
import './events.ts';
import { balanceOf, debitWithDebt, lockAccount, type Account } from './ledger.ts';

/** One meter's priced usage in a period: the cumulative amount (minor units) its quantity costs so far. */
export interface MeterDraw {
  meter: string;
  amount: number;
}

export interface UsageDraw {
  clientId: number;
  orderId: number;
  periodStart: string;
  draws: readonly MeterDraw[];
}

/** The balance, and what each meter of the order has drawn in the period. */
export interface PrepaidView {
  balance: number;
  drawn: Map<string, number>;
}

/**
 * The wallet in its own currency (the client's): its balance in that currency's minor units, and how an amount of the
 * default currency becomes one of it at the rate of this read, rounded once as a draw is (get_info shows it so).
 */
export interface WalletBalance {
  currency: string;
  balance: number;
  toWallet: (amount: number) => number;
}

export interface PrepaidLedgerDeps {
  db: Kysely<Database>;
  events: Pick<EventBus, 'emit'>;
  /**
   * The wallet drawn is in the client's currency; plans price uses in the default currency, so each draw is converted
   * at the rate of its moment (rounded once per draw), and the balance the check holds is read back in the default.
   */
  selling: Pick<Selling, 'forClient'>;
}

export function createPrepaidLedger({ db, events, selling }: PrepaidLedgerDeps) {
  const saleOf = (clientId: number): Promise<SaleCurrency> => selling.forClient(db, clientId);
  const accountOf = (sale: SaleCurrency, clientId: number): Account => ({ clientId, currency: sale.code });
  /** A wallet balance (minor units of the client's currency) in the default currency, as the check prices uses. */
  const inDefault = (balance: number, sale: SaleCurrency): number => (sale.isDefault ? balance : convertMinorBack(balance, sale.rate, sale.minorUnit, sale.defaultMinorUnit));

  async function drawnOf(trx: Kysely<Database>, orderId: number, periodStart: string): Promise<Map<string, number>> {
    const rows = await trx.selectFrom('credit_usage_draws').select(['meter', 'drawn']).where('order_id', '=', orderId).where('period_start', '=', periodStart).execute();
    return new Map(rows.map((row) => [row.meter, row.drawn]));
  }

  return {
    /**
     * Draws each meter's priced usage beyond what it drew already in the period: one `consume` entry per meter that
     * grew, written in full even past the balance (the usage happened; ledger.ts `debitWithDebt`). Returns the view
     * after the draw.
     */
    async drawUsage(input: UsageDraw, now = new Date()): Promise<PrepaidView> {
      const sale = await saleOf(input.clientId);
      const account = accountOf(sale, input.clientId);
      return inTransaction(db, async (trx) => {
        await lockAccount(trx, account, now);
        const drawn = await drawnOf(trx, input.orderId, input.periodStart);
        const at = isoSeconds(now);
        for (const draw of input.draws) {
          const before = drawn.get(draw.meter);
          const more = draw.amount - (before ?? 0);
          if (more <= 0) continue;
          const key = `usage:${input.orderId}:${draw.meter}:${input.periodStart}:${draw.amount}`;
          const note = `Usage of order #${input.orderId}: ${draw.meter}, period from ${input.periodStart.slice(0, 10)}`;
          // `drawn` stays in the default currency (what the meters priced); the ledger line is in the wallet's.
          const amount = amountIn(more, sale);
          if (amount > 0) await debitWithDebt(trx, account, { kind: 'consume', amount, key, note }, now);
          if (before === undefined) {
            await trx
              .insertInto('credit_usage_draws')
              .values({ order_id: input.orderId, meter: draw.meter, period_start: input.periodStart, client_id: input.clientId, drawn: draw.amount, updated_at: at })
              .execute();
          } else {
            await trx.updateTable('credit_usage_draws').set({ drawn: draw.amount, updated_at: at }).where('order_id', '=', input.orderId).where('meter', '=', draw.meter).where('period_start', '=', input.periodStart).execute();
          }
          drawn.set(draw.meter, draw.amount);
        }
        return { balance: inDefault(await balanceOf(trx, account), sale), drawn };
      });
    },

    /** The client's balance and what the order's meters drew in the period (the check's view, read in the background). */
    async view(clientId: number, orderId: number, periodStart: string): Promise<PrepaidView & { wallet: WalletBalance }> {
      const drawn = await drawnOf(db, orderId, periodStart);
      const sale = await saleOf(clientId);
      const balance = await balanceOf(db, accountOf(sale, clientId));
      return { balance: inDefault(balance, sale), drawn, wallet: { currency: sale.code, balance, toWallet: (amount) => amountIn(amount, sale) } };
    },

    /**
     * A prepaid key was refused for NO_CREDIT: records the depletion (named by the account's latest credit) and emits
     * `wallet.depleted` in the same transaction — once per depletion, whichever process or call gets here first.
     * `balance` is the one the refusing check saw (the ledger's less the uses it counted and not yet drawn), in minor
     * units of the wallet's currency, which the record and the event name.
     * Returns whether this call recorded it.
     */
    async markDepleted(clientId: number, orderId: number, balance: number, now = new Date()): Promise<boolean> {
      const sale = await saleOf(clientId);
      const account = accountOf(sale, clientId);
      return inTransaction(db, async (trx) => {
        const last = await trx
          .selectFrom('credit_entries')
          .select((eb) => eb.fn.max<number | null>('id').as('id'))
          .where('client_id', '=', clientId)
          .where('currency', '=', account.currency)
          .where('amount', '>', 0)
          .executeTakeFirst();
        const row = await trx
          .insertInto('credit_depletions')
          .values({ client_id: clientId, currency: account.currency, after_entry_id: last?.id ?? 0, order_id: orderId, balance, created_at: isoSeconds(now) })
          .onConflict((oc) => oc.columns(['client_id', 'currency', 'after_entry_id']).doNothing())
          .returning('client_id')
          .executeTakeFirst();
        if (row === undefined) return false;
        await events.emit('wallet.depleted', { clientId, orderId, balance: moneyFor(sale.code).format(balance), currency: account.currency }, trx);
        return true;
      });
    },
  };
}

export type PrepaidLedger = ReturnType<typeof createPrepaidLedger>;
