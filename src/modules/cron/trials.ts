// The scheduler's free-trial jobs (issue 24 item 7), run by cron/service.ts before the renewal jobs. Each order is
// handled in its own transaction and re-read there, and every step is a compare-and-set on the order's trial state,
// so a run repeated, two schedulers at once, or a run after downtime (a trial that ended while the server was down
// is picked up by the next run: the lists are "ended at or before now") change each trial once.
//
// - Three days before the end: `order.trial_will_end` (webhook) and the reminder mail, once.
// - At the end, a trial canceled by its client (or by staff) costs nothing: its config goes back to the plan's and
//   the period-end cancellation stops the keys. Otherwise the first period is invoiced as a renewal: with a card
//   off-session charges may use, the outbox charges it (payment/charges.ts) and the order stays active for
//   TRIAL_CHARGE_GRACE_MS while the charge is out; without one the order is suspended with TRIAL_ENDED_REASON (its
//   keys answer TRIAL_ENDED) until the invoice is paid, which renews and unsuspends it (invoice/order-tasks.ts).
// - A charge still unpaid after the grace: the order is suspended the same way; the dunning retries go on.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { ApiError, errors } from '../../platform/errors.ts';
import { inTransaction } from '../../platform/transaction.ts';
import { timeOf } from '../../lib/time.ts';
import { TRIAL_ENDED_REASON } from '../../lib/trial.ts';
import type { InvoiceService } from '../invoice/service.ts';
import type { OrderRow, OrderService } from '../order/service.ts';
import type { OrderTrials } from '../order/trials.ts';
import type { PaymentService } from '../payment/service.ts';

/** How long an order stays active after its trial while the first charge is out (it normally takes seconds). */
export const TRIAL_CHARGE_GRACE_MS = 3_600_000;

export interface TrialJobsDeps {
  db: Kysely<Database>;
  orders: Pick<OrderService, 'requireRow' | 'transition'>;
  trials: Pick<OrderTrials, 'remindersDue' | 'endedIn' | 'remind' | 'end' | 'settle' | 'moveEnd'>;
  invoices: Pick<InvoiceService, 'renewalFor'>;
  payments: Pick<PaymentService, 'chargeableMethod'>;
  log?: (message: string, error: unknown) => void;
}

export interface TrialReport {
  reminded: number;
  ended: number;
  failed: number;
}

export function createTrialJobs({ db, orders, trials, invoices, payments, log }: TrialJobsDeps) {
  async function each(ids: number[], report: TrialReport, work: (trx: Kysely<Database>, row: OrderRow) => Promise<boolean>): Promise<number> {
    let done = 0;
    for (const id of ids) {
      try {
        if (await inTransaction(db, async (trx) => work(trx, await orders.requireRow(trx, id)))) done += 1;
      } catch (error) {
        // Someone changed the order meanwhile: the next run looks again.
        if (error instanceof ApiError && (error.status === 409 || error.status === 404)) continue;
        report.failed += 1;
        log?.(`free-trial job failed for order ${id}`, error);
      }
    }
    return done;
  }

  const ended = (row: OrderRow, now: Date) => row.trial_ends_at !== null && timeOf(row.trial_ends_at) <= now.getTime();

  async function endTrial(trx: Kysely<Database>, row: OrderRow, now: Date): Promise<boolean> {
    if (row.trial_state !== 'running' || !ended(row, now)) return false;
    // Canceled during the trial, or a free plan (it renews itself): nothing to invoice.
    if (row.status === 'canceled' || row.cancel_at_period_end === 1 || row.price === 0) return trials.end(trx, row, 'ended', now);
    const card = row.status === 'active' && (await payments.chargeableMethod(trx, row.client_id)) !== null;
    // The state's compare-and-set first: of two runs at once, only the one that moved it issues the invoice.
    if (!(await trials.end(trx, row, card ? 'charging' : 'ended', now))) return false;
    const current = await orders.requireRow(trx, row.id);
    await invoices.renewalFor(trx, current, now);
    // An order staff suspended during the trial stays suspended, with staff's reason.
    if (!card && current.status === 'active') await orders.transition(trx, row.id, 'suspend', { reason: TRIAL_ENDED_REASON, now });
    return true;
  }

  async function settleCharge(trx: Kysely<Database>, row: OrderRow, now: Date): Promise<boolean> {
    if (row.trial_state !== 'charging') return false;
    if (!(await trials.settle(trx, row, now))) return false;
    // Paid: the renewal moved the expiry on. Still at the trial's end: the charge failed or waits for the customer.
    const unpaid = row.status === 'active' && row.expires_at !== null && timeOf(row.expires_at) <= now.getTime();
    if (unpaid) await orders.transition(trx, row.id, 'suspend', { reason: TRIAL_ENDED_REASON, now });
    return true;
  }

  const DAY_MS = 86_400_000;

  return {
    /**
     * admin/order/trial_end: the running trial of order `id` ends now, as the scheduler would end it (the first
     * invoice issued and charged to a saved card, or the order suspended with TRIAL_ENDED), in one transaction.
     * 409 when the order is not on a running trial; 404 when there is no such order.
     */
    async endNow(id: number, now = new Date()): Promise<void> {
      await inTransaction(db, async (trx) => {
        await trials.moveEnd(trx, await orders.requireRow(trx, id), now, now);
        if (!(await endTrial(trx, await orders.requireRow(trx, id), now))) throw errors.conflict('The order is not on a free trial');
      });
    },

    /** admin/order/trial_extend: the running trial of order `id` ends `days` days later (409 when not on trial). */
    async extend(id: number, days: number, now = new Date()): Promise<string> {
      return inTransaction(db, async (trx) => {
        const row = await orders.requireRow(trx, id);
        if (row.trial_state !== 'running' || row.trial_ends_at === null) throw errors.conflict('The order is not on a free trial');
        await trials.moveEnd(trx, row, new Date(timeOf(row.trial_ends_at) + days * DAY_MS), now);
        return (await orders.requireRow(trx, id)).trial_ends_at!;
      });
    },

    async run(now: Date): Promise<TrialReport> {
      const report: TrialReport = { reminded: 0, ended: 0, failed: 0 };
      report.reminded += await each(await trials.remindersDue(now), report, async (trx, row) => {
        if (row.trial_state !== 'running' || row.status !== 'active' || row.cancel_at_period_end === 1 || ended(row, now)) return false;
        return trials.remind(trx, row, now);
      });
      report.ended += await each(await trials.endedIn('running', now), report, (trx, row) => endTrial(trx, row, now));
      await each(await trials.endedIn('charging', new Date(now.getTime() - TRIAL_CHARGE_GRACE_MS)), report, (trx, row) => settleCharge(trx, row, now));
      return report;
    },
  };
}

export type TrialJobs = ReturnType<typeof createTrialJobs>;
