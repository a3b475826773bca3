// Auto-recharge (issue 24 item 3): a client chooses a threshold and an amount; when a debit takes the balance below the
// threshold (a crossing, counted in the debit's transaction by watches.ts) their saved card is charged the amount
// off-session. Two outbox items carry it, each written in the transaction of the step before, so a crash anywhere
// loses nothing and repeats nothing:
//   1. `auto_recharge` (one per crossing: its dedupe key names the account and the crossing's number) issues a top-up
//      invoice for the amount and queues its card charge, in one transaction, guarded by the recharge row's
//      compare-and-set (`pending` → `invoiced`);
//   2. `card_charge` (payment/charges.ts, one per invoice) charges the card with an idempotency key per invoice and
//      attempt — a sender killed after Stripe charged reuses the attempt and its key, so Stripe answers the first
//      charge again — and pays the invoice through its compare-and-set, whose `invoice.paid` credits the wallet once.
// A declined card follows the dunning schedule of renewals (`dunning_retry_days`) and mails the client the pay link
// (`invoice_payment_failed`). Turning auto-recharge off cancels the unpaid invoices of its crossings (a queued charge
// then finds nothing to charge) and stops crossings not yet invoiced.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { ApiError, errors } from '../../platform/errors.ts';
import { inTransaction } from '../../platform/transaction.ts';
import { moneyFor } from '../../lib/money.ts';
import type { Selling } from '../currency/selling.ts';
import { checkFundsLimits } from './funds-limits.ts';
import { isoSeconds } from '../../lib/time.ts';
import type { InvoiceService } from '../invoice/service.ts';
import type { OutboxService } from '../outbox/service.ts';
import type { ChargeService } from '../payment/charges.ts';
import type { PaymentService } from '../payment/service.ts';
import { balanceOf, lockAccount, type Account } from './ledger.ts';
import { depositLine } from './top-up-line.ts';
import { ensureWatch, RECHARGE_KIND, watchOf, type Crossings } from './watches.ts';

/** Retries of step 1 (issuing the invoice); the card's own retries follow the dunning schedule. */
const ISSUE_RETRY_MS = [60_000, 300_000, 1_800_000, 7_200_000];

export interface AutoRechargeSettings {
  enabled: boolean;
  threshold: string | null;
  amount: string | null;
  currency: string;
  /** Whether the client has a saved card auto-recharge could charge now. */
  has_card: boolean;
}

export interface AutoRechargeInput {
  enabled: boolean;
  /** Minor units; null keeps what is stored. */
  threshold: number | null;
  amount: number | null;
}

export interface AutoRechargeDeps {
  db: Kysely<Database>;
  /** The wallet recharged is the client's currency's. */
  selling: Pick<Selling, 'forClient'>;
  outbox: Pick<OutboxService, 'registerKind'>;
  invoices: Pick<InvoiceService, 'create' | 'cancelInTransaction'>;
  charges: Pick<ChargeService, 'scheduleTopUp'>;
  payments: Pick<PaymentService, 'chargeableMethod'>;
  crossings: Pick<Crossings, 'recharge'>;
  /** funds_min_amount / funds_max_amount: an auto-recharge amount is a top-up like any other. */
  settings: { fundsMin(): string | null; fundsMax(): string | null };
}

export function createAutoRecharge({ db, selling, outbox, invoices, charges, payments, crossings, settings }: AutoRechargeDeps) {
  const accountOf = async (clientId: number): Promise<Account> => ({ clientId, currency: (await selling.forClient(db, clientId)).code });

  /** Stops what the account's crossings still have pending: not yet invoiced → stopped; unpaid invoices → canceled. */
  async function stopPending(trx: Kysely<Database>, account: Account, now: Date): Promise<void> {
    await trx
      .updateTable('credit_recharges')
      .set({ status: 'stopped', updated_at: isoSeconds(now) })
      .where('client_id', '=', account.clientId)
      .where('currency', '=', account.currency)
      .where('status', '=', 'pending')
      .execute();
    const invoiced = await trx
      .selectFrom('credit_recharges as r')
      .innerJoin('invoices as i', 'i.id', 'r.invoice_id')
      .select('i.id')
      .where('r.client_id', '=', account.clientId)
      .where('r.currency', '=', account.currency)
      .where('r.status', '=', 'invoiced')
      .where('i.status', '=', 'unpaid')
      .execute();
    for (const { id } of invoiced) {
      try {
        await invoices.cancelInTransaction(trx, id, now);
      } catch (error) {
        // Paid meanwhile (its charge went through first): that top-up stands.
        if (!(error instanceof ApiError && error.status === 409)) throw error;
      }
    }
  }

  /** Step 1 of a crossing: issue the top-up invoice and queue its card charge, once. */
  async function issue(rechargeId: number, now: Date): Promise<void> {
    await inTransaction(db, async (trx) => {
      const row = await trx.selectFrom('credit_recharges').selectAll().where('id', '=', rechargeId).executeTakeFirst();
      if (row?.status !== 'pending') return;
      const account = { clientId: row.client_id, currency: row.currency };
      const watch = await watchOf(trx, account);
      const card = await payments.chargeableMethod(trx, row.client_id, false);
      if (watch?.recharge_enabled !== 1 || card === null) {
        // Turned off, or no card left to charge since the crossing: nothing is issued.
        await trx.updateTable('credit_recharges').set({ status: 'stopped', updated_at: isoSeconds(now) }).where('id', '=', row.id).where('status', '=', 'pending').execute();
        return;
      }
      const invoice = await invoices.create(trx, row.client_id, [depositLine(moneyFor(row.currency), row.amount, `Auto-recharge of the account balance`)], { now, taxed: false });
      // The compare-and-set: a second delivery of this item (a sender whose lease ran out) rolls back here.
      const claimed = await trx
        .updateTable('credit_recharges')
        .set({ status: 'invoiced', invoice_id: invoice.id, updated_at: isoSeconds(now) })
        .where('id', '=', row.id)
        .where('status', '=', 'pending')
        .executeTakeFirst();
      if (Number(claimed.numUpdatedRows) !== 1) throw errors.conflict(`Auto-recharge ${row.id} was issued by another sender`);
      await charges.scheduleTopUp(trx, invoice.id);
    });
  }

  outbox.registerKind(RECHARGE_KIND, {
    retryDelaysMs: ISSUE_RETRY_MS,
    async deliver(payload) {
      const { rechargeId } = payload as { rechargeId: number };
      await issue(rechargeId, new Date());
    },
  });

  /** client/credit/auto_recharge_get */
  async function get(clientId: number): Promise<AutoRechargeSettings> {
    const account = await accountOf(clientId);
    const watch = await watchOf(db, account);
    const card = await payments.chargeableMethod(db, clientId, false);
    const money = moneyFor(account.currency);
    const format = (value: number | null | undefined) => (value === null || value === undefined ? null : money.format(value));
    return { enabled: watch?.recharge_enabled === 1, threshold: format(watch?.recharge_threshold), amount: format(watch?.recharge_amount), currency: account.currency, has_card: card !== null };
  }

  return {
    get,

    /**
     * client/credit/auto_recharge_set: turning it on needs a threshold and an amount (kept from before when not
     * given) and a saved card (409 without one). Turned on while the balance is already below the threshold counts as
     * a crossing: the card is charged at once. Turning it off stops what its crossings still have pending.
     */
    async set(clientId: number, input: AutoRechargeInput, now = new Date()): Promise<AutoRechargeSettings> {
      if (input.threshold !== null && input.threshold <= 0) throw errors.invalid('threshold', 'must be more than 0');
      if (input.amount !== null && input.amount <= 0) throw errors.invalid('amount', 'must be more than 0');
      if (input.amount !== null) checkFundsLimits(input.amount, await selling.forClient(db, clientId), settings);
      if (input.enabled && (await payments.chargeableMethod(db, clientId, false)) === null) {
        throw errors.conflict('Auto-recharge charges your saved card: pay an invoice by card first to save one');
      }
      const account = await accountOf(clientId);
      await inTransaction(db, async (trx) => {
        await lockAccount(trx, account, now);
        const before = await ensureWatch(trx, account, now);
        const threshold = input.threshold ?? before.recharge_threshold;
        const amount = input.amount ?? before.recharge_amount;
        if (input.enabled && threshold === null) throw errors.invalid('threshold', 'is required to turn auto-recharge on');
        if (input.enabled && amount === null) throw errors.invalid('amount', 'is required to turn auto-recharge on');
        await trx
          .updateTable('credit_watches')
          .set({ recharge_enabled: input.enabled ? 1 : 0, recharge_threshold: threshold, recharge_amount: amount, updated_at: isoSeconds(now) })
          .where('client_id', '=', clientId)
          .where('currency', '=', account.currency)
          .execute();
        if (!input.enabled) {
          await stopPending(trx, account, now);
          return;
        }
        if (before.recharge_enabled !== 1 && (await balanceOf(trx, account)) < threshold!) await crossings.recharge(trx, account, amount!, now);
      });
      return get(clientId);
    },
  };
}

export type AutoRecharge = ReturnType<typeof createAutoRecharge>;
