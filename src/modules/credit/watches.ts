// Crossings (issue 24 items 3 and 6): a debit that takes a balance from at or above a threshold to below it "crosses"
// it. The ledger tells this watcher of every debit and expiry inside the transaction that wrote it, under the
// account's lock (ledger.ts watchDebits), so the crossing counters in `credit_watches` are bumped in that same
// transaction: a crossing is counted once, whatever process wrote the debit, and is lost with the debit if it rolls
// back. An auto-recharge crossing writes its `credit_recharges` row and its outbox item (the dedupe key names the
// account and the crossing's number, so a crossing never queues two charges); a low-balance crossing emits
// `wallet.low_balance` (the webhook and the mail listen, in the same transaction).
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { errors } from '../../platform/errors.ts';
import type { EventBus } from '../../platform/events.ts';
import { inTransaction } from '../../platform/transaction.ts';
import { isoSeconds } from '../../lib/time.ts';
import type { OutboxService } from '../outbox/service.ts';
import { lockAccount, watchDebits, type Account } from './ledger.ts';
import './events.ts';

/** The outbox kind that turns an auto-recharge crossing into a top-up invoice and its card charge (auto-recharge.ts). */
export const RECHARGE_KIND = 'auto_recharge';

export const watchOf = (trx: Kysely<Database>, account: Account) =>
  trx.selectFrom('credit_watches').selectAll().where('client_id', '=', account.clientId).where('currency', '=', account.currency).executeTakeFirst();

/** The account's watch row, created blank on first use; the caller holds the account's lock. */
export async function ensureWatch(trx: Kysely<Database>, account: Account, now: Date) {
  await trx
    .insertInto('credit_watches')
    .values({ client_id: account.clientId, currency: account.currency, recharge_enabled: 0, recharge_threshold: null, recharge_amount: null, alert_amount: null, updated_at: isoSeconds(now) })
    .onConflict((oc) => oc.columns(['client_id', 'currency']).doNothing())
    .execute();
  return (await watchOf(trx, account))!;
}

const crossed = (threshold: number | null, before: number, after: number): boolean => threshold !== null && before >= threshold && after < threshold;

export interface WatchesDeps {
  db: Kysely<Database>;
  events: EventBus;
  outbox: Pick<OutboxService, 'enqueue'>;
}

export function watchCrossings({ db, events, outbox }: WatchesDeps) {
  /** Counts an auto-recharge crossing and queues its charge; the caller holds the account's lock. */
  async function recharge(trx: Kysely<Database>, account: Account, amount: number, now: Date): Promise<void> {
    const row = await trx
      .updateTable('credit_watches')
      .set((eb) => ({ recharge_crossings: eb('recharge_crossings', '+', 1) }))
      .where('client_id', '=', account.clientId)
      .where('currency', '=', account.currency)
      .returning('recharge_crossings')
      .executeTakeFirstOrThrow();
    const stamp = isoSeconds(now);
    const inserted = await trx
      .insertInto('credit_recharges')
      .values({ client_id: account.clientId, currency: account.currency, crossing: row.recharge_crossings, amount, status: 'pending', invoice_id: null, created_at: stamp, updated_at: stamp })
      .returning('id')
      .executeTakeFirstOrThrow();
    await outbox.enqueue(trx, { kind: RECHARGE_KIND, payload: { rechargeId: inserted.id }, dedupeKey: `${RECHARGE_KIND}:${account.clientId}:${account.currency}:${row.recharge_crossings}` });
  }

  async function alert(trx: Kysely<Database>, account: Account, threshold: number, balance: number): Promise<void> {
    await trx
      .updateTable('credit_watches')
      .set((eb) => ({ alert_crossings: eb('alert_crossings', '+', 1) }))
      .where('client_id', '=', account.clientId)
      .where('currency', '=', account.currency)
      .execute();
    await events.emit('wallet.low_balance', { clientId: account.clientId, currency: account.currency, balance, threshold }, trx);
  }

  async function onDebit(trx: Kysely<Database>, account: Account, before: number, after: number, now: Date): Promise<void> {
    const watch = await watchOf(trx, account);
    if (watch === undefined) return;
    if (watch.recharge_enabled === 1 && watch.recharge_amount !== null && crossed(watch.recharge_threshold, before, after)) await recharge(trx, account, watch.recharge_amount, now);
    if (crossed(watch.alert_amount, before, after)) await alert(trx, account, watch.alert_amount!, after);
  }

  watchDebits(db, onDebit);
  return {
    recharge,

    /** client/credit/low_balance_get: the alert amount (null: off). */
    async alertAmount(account: Account): Promise<number | null> {
      return (await watchOf(db, account))?.alert_amount ?? null;
    },

    /** client/credit/low_balance_set: null turns the alert off. It fires at the next crossing, not for a balance already below. */
    async setAlert(account: Account, amount: number | null, now = new Date()): Promise<void> {
      if (amount !== null && amount <= 0) throw errors.invalid('amount', 'must be more than 0');
      await inTransaction(db, async (trx) => {
        await lockAccount(trx, account, now);
        await ensureWatch(trx, account, now);
        await trx.updateTable('credit_watches').set({ alert_amount: amount, updated_at: isoSeconds(now) }).where('client_id', '=', account.clientId).where('currency', '=', account.currency).execute();
      });
    },
  };
}

export type Crossings = ReturnType<typeof watchCrossings>;
