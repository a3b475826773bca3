// Scheduled jobs (CONTRACT §6 scheduled jobs): renewal invoices ahead of expiry, suspension at expiry, cancellation
// after a long suspension, and clean-up of abandoned guest carts. Every job takes `now`, works order by order in its
// own transaction and is idempotent: running it twice in a row changes nothing the second time. The modules that own
// the orders and invoices pick the candidates, by text (stored times have one fixed width, lib/time.ts); each order is
// then re-checked here as a moment, so no order is suspended, canceled or invoiced because of how a date is written.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { ApiError } from '../../platform/errors.ts';
import { isoSeconds, timeOf } from '../../lib/time.ts';
import type { CartService } from '../cart/service.ts';
import type { InvoiceService } from '../invoice/service.ts';
import type { RenewalsDue } from '../invoice/renewals-due.ts';
import type { DueOrders } from '../order/due-orders.ts';
import type { OrderService } from '../order/service.ts';
import { inTransaction } from '../../platform/transaction.ts';
import { periodicTask } from '../../lib/periodic.ts';

export const NON_PAYMENT = 'Non-payment';
export const CANCELED_AT_PERIOD_END = 'Canceled by the client at the end of the period';

export interface CronReport {
  renewal_invoices: number;
  renewed_free: number;
  suspended: number;
  canceled: number;
  carts_purged: number;
  /** Payment reminders queued (invoice_reminder mails). */
  invoice_reminders: number;
  /** Overage invoices issued for usage periods that closed (CONTRACT §12). */
  usage_invoices: number;
  /** Unpaid plan-change invoices voided at the end of the period they were priced for (issue 20, M2). */
  plan_changes_voided: number;
  /** Grants past their expiry whose unused credit was expired (issue 24). */
  credits_expired: number;
  /** Free-trial reminders sent (order.trial_will_end), and trials ended (issue 24 item 7). */
  trial_reminders: number;
  trials_ended: number;
  /** Orders a job could not change (logged); the next run tries again. */
  failed: number;
  /** Audit log entries past the retention deleted (issue 25). */
  audit_entries_pruned: number;
}

/** The audit log as the jobs use it (activity/system-entries.ts): the system's entries, and the retention pruning. */
export interface SchedulerAudit {
  /** Records a change made by a job, with `trx`: the transaction of the change. */
  system(trx: Kysely<Database>, change: { action: string; orderId: number; from: string; to: string; reason: string }): Promise<void>;
  /** Deletes the entries past the retention setting; returns how many. */
  prune(now: Date): Promise<number>;
}

export interface CronServiceDeps {
  db: Kysely<Database>;
  orders: Pick<OrderService, 'requireRow' | 'transition'>;
  /** The orders each job looks at, as the order module picks them (order/due-orders.ts). */
  dueOrders: Pick<DueOrders, 'freeRenewalsDue' | 'canceledAtPeriodEndDue' | 'expiredActive' | 'suspendedBefore'>;
  invoices: Pick<InvoiceService, 'renewalFor' | 'voidLapsedPlanChanges'>;
  /** The orders without an unpaid renewal, as the invoice module picks them (invoice/renewals-due.ts). */
  renewalsDue: Pick<RenewalsDue, 'ordersAwaitingRenewalInvoice'>;
  carts: Pick<CartService, 'purgeAbandoned'>;
  invoiceDaysBeforeExpiry: number;
  cancelSuspendedAfterDays: number;
  /** Queues the day's payment reminders (the e-mail notices). */
  reminders?: { queueInvoiceReminders(now: Date): Promise<number> };
  /** Closes the usage periods that ended and bills their overage (serviceapikey/usage/overage.ts). */
  usage?: { closePeriods(now: Date): Promise<{ invoices: number; failed: number }> };
  /** Deletes usage events past their idempotency window and what closed periods no longer need (usage/pruning.ts). */
  usagePruning?: { prune(now: Date): Promise<unknown> };
  /** Expires what is left of grants past their expiry (credit/service.ts). */
  credits?: { expireDue(now: Date): Promise<{ expired: number; failed: number }> };
  /** Reminds and ends free trials (cron/trials.ts). */
  trials?: { run(now: Date): Promise<{ reminded: number; ended: number; failed: number }> };
  audit?: SchedulerAudit;
  log?: (message: string, error: unknown) => void;
}

const DAY_MS = 86_400_000;

export function createCronService({ db, orders, dueOrders, invoices, renewalsDue, carts, invoiceDaysBeforeExpiry, cancelSuspendedAfterDays, reminders, usage, usagePruning, credits, trials, audit, log }: CronServiceDeps) {
  /** Runs `work` for one order in its own transaction; a conflict (someone changed it meanwhile) is skipped. */
  async function each(ids: number[], report: CronReport, work: (trx: Kysely<Database>, id: number) => Promise<boolean>): Promise<number> {
    let done = 0;
    for (const id of ids) {
      try {
        if (await inTransaction(db, (trx) => work(trx, id))) done += 1;
      } catch (error) {
        if (error instanceof ApiError && (error.status === 409 || error.status === 404)) continue;
        report.failed += 1;
        log?.(`scheduled job failed for order ${id}`, error);
      }
    }
    return done;
  }

  return {
    /** Issues renewal invoices for paid recurrent orders expiring within the notice period that have none. */
    async issueRenewalInvoices(now: Date, report: CronReport): Promise<void> {
      const horizonMs = now.getTime() + invoiceDaysBeforeExpiry * DAY_MS;
      const horizon = isoSeconds(new Date(horizonMs));
      const ids = await renewalsDue.ordersAwaitingRenewalInvoice(horizon);
      report.renewal_invoices += await each(
        ids,
        report,
        async (trx, id) => {
          const order = await orders.requireRow(trx, id);
          if (order.status !== 'active' || order.cancel_at_period_end === 1 || order.expires_at === null || timeOf(order.expires_at) > horizonMs) return false;
          // A running trial's first invoice is issued at its end, by the trial job, not ahead like a renewal.
          if (order.trial_state === 'running') return false;
          return (await invoices.renewalFor(trx, order, now)).created;
        },
      );
    },

    /** Free recurrent orders renew themselves at expiry: there is nothing to pay. */
    async renewFreeOrders(now: Date, report: CronReport): Promise<void> {
      const nowText = isoSeconds(now);
      const ids = await dueOrders.freeRenewalsDue(nowText);
      report.renewed_free += await each(
        ids,
        report,
        async (trx, id) => {
          const order = await orders.requireRow(trx, id);
          if (order.status !== 'active' || order.expires_at === null || timeOf(order.expires_at) > now.getTime()) return false;
          await orders.transition(trx, id, 'renew', { now });
          return true;
        },
      );
    },

    /** Cancels the orders their clients canceled at period end, once the period is over (CONTRACT §8). */
    async cancelAtPeriodEnd(now: Date, report: CronReport): Promise<void> {
      const nowText = isoSeconds(now);
      const ids = await dueOrders.canceledAtPeriodEndDue(nowText);
      report.canceled += await each(
        ids,
        report,
        async (trx, id) => {
          const order = await orders.requireRow(trx, id);
          if (order.status !== 'active' || order.cancel_at_period_end !== 1 || order.expires_at === null || order.expires_at > nowText) return false;
          await orders.transition(trx, id, 'cancel', { reason: CANCELED_AT_PERIOD_END, now });
          await audit?.system(trx, { action: 'system/order/cancel', orderId: id, from: order.status, to: 'canceled', reason: CANCELED_AT_PERIOD_END });
          return true;
        },
      );
    },

    /** Suspends active orders past their expiry. */
    async suspendExpired(now: Date, report: CronReport): Promise<void> {
      const nowText = isoSeconds(now);
      const ids = await dueOrders.expiredActive(nowText);
      report.suspended += await each(
        ids,
        report,
        async (trx, id) => {
          const order = await orders.requireRow(trx, id);
          if (order.status !== 'active' || order.expires_at === null || timeOf(order.expires_at) > now.getTime()) return false;
          // A trial's end is the trial job's: it suspends with its own reason, after the first charge had its chance.
          if (order.trial_state === 'running' || order.trial_state === 'charging') return false;
          await orders.transition(trx, id, 'suspend', { reason: NON_PAYMENT, now });
          await audit?.system(trx, { action: 'system/order/suspend', orderId: id, from: order.status, to: 'suspended', reason: NON_PAYMENT });
          return true;
        },
      );
    },

    /** Cancels orders suspended for more than the grace period. */
    async cancelLongSuspended(now: Date, report: CronReport): Promise<void> {
      const cutoffMs = now.getTime() - cancelSuspendedAfterDays * DAY_MS;
      const cutoff = isoSeconds(new Date(cutoffMs));
      const ids = await dueOrders.suspendedBefore(cutoff);
      report.canceled += await each(
        ids,
        report,
        async (trx, id) => {
          const order = await orders.requireRow(trx, id);
          if (order.status !== 'suspended' || order.suspended_at === null || timeOf(order.suspended_at) >= cutoffMs) return false;
          const reason = `Suspended for more than ${cancelSuspendedAfterDays} days`;
          await orders.transition(trx, id, 'cancel', { reason, now });
          await audit?.system(trx, { action: 'system/order/cancel', orderId: id, from: order.status, to: 'canceled', reason });
          return true;
        },
      );
    },

    /** Deletes guest carts whose session has ended. */
    async purgeGuestCarts(report: CronReport): Promise<void> {
      report.carts_purged += await carts.purgeAbandoned();
    },

    /** Every job, in order. */
    async run(now: Date = new Date()): Promise<CronReport> {
      const report: CronReport = {
        renewal_invoices: 0,
        renewed_free: 0,
        suspended: 0,
        canceled: 0,
        carts_purged: 0,
        invoice_reminders: 0,
        usage_invoices: 0,
        plan_changes_voided: 0,
        credits_expired: 0,
        trial_reminders: 0,
        trials_ended: 0,
        failed: 0,
        audit_entries_pruned: 0,
      };
      // Usage periods first: a billing period ends at the expiry the renewal jobs below act on.
      if (usage !== undefined) {
        const closed = await usage.closePeriods(now);
        report.usage_invoices += closed.invoices;
        report.failed += closed.failed;
      }
      // After the close, so the distinct values of the periods it just closed go too. Housekeeping: a failure is
      // logged and counted, never the end of this run.
      try {
        await usagePruning?.prune(now);
      } catch (error) {
        report.failed += 1;
        log?.('pruning usage events failed', error);
      }
      // Expired credit first, so a renewal invoice issued below is never paid with it.
      if (credits !== undefined) {
        const expired = await credits.expireDue(now);
        report.credits_expired += expired.expired;
        report.failed += expired.failed;
      }
      await this.renewFreeOrders(now, report);
      // A lapsed plan change first, so the order's renewal can be issued in the same run. A failure is logged and
      // counted like the other jobs' (the next run tries again), never the end of this run.
      try {
        report.plan_changes_voided += await invoices.voidLapsedPlanChanges(now);
      } catch (error) {
        report.failed += 1;
        log?.('voiding lapsed plan changes failed', error);
      }
      // Trials before renewals: a trial that ended has its first invoice issued here, once.
      if (trials !== undefined) {
        const trialRun = await trials.run(now);
        report.trial_reminders += trialRun.reminded;
        report.trials_ended += trialRun.ended;
        report.failed += trialRun.failed;
      }
      await this.issueRenewalInvoices(now, report);
      await this.cancelAtPeriodEnd(now, report);
      await this.suspendExpired(now, report);
      await this.cancelLongSuspended(now, report);
      await this.purgeGuestCarts(report);
      if (reminders !== undefined) report.invoice_reminders += await reminders.queueInvoiceReminders(now);
      try {
        report.audit_entries_pruned += (await audit?.prune(now)) ?? 0;
      } catch (error) {
        report.failed += 1;
        log?.('pruning the audit log failed', error);
      }
      await recordRun(db, new Date());
      return report;
    },

    /** admin/cron/info: when the jobs last ran to the end (FOSSBilling's `last_cron_exec`), null before the first run. */
    async info(): Promise<{ last_cron_exec: string | null }> {
      const row = await db.selectFrom('cron_status').select('last_run_at').where('id', '=', 1).executeTakeFirst();
      return { last_cron_exec: row?.last_run_at ?? null };
    },
  };
}

/**
 * Notes that a run finished. Two processes finishing at once (the scheduler and `npm run cron`) both upsert; the
 * later moment wins whatever order the writes land in (stored times have one fixed width, so text order is time order).
 */
async function recordRun(db: Kysely<Database>, finishedAt: Date): Promise<void> {
  const at = isoSeconds(finishedAt);
  await db
    .insertInto('cron_status')
    .values({ id: 1, last_run_at: at })
    .onConflict((oc) => oc.column('id').doUpdateSet({ last_run_at: at }).where('cron_status.last_run_at', '<', at))
    .execute();
}

export type CronService = ReturnType<typeof createCronService>;

/**
 * The in-process scheduler: runs the jobs every `intervalMs` (never two runs at once) on a timer that does not keep
 * the process alive. Returns the starter to push into `services.startTasks`.
 */
export function cronStarter(
  cron: Pick<CronService, 'run'>,
  onClose: (task: () => Promise<void>) => void,
  log: (message: string, error: unknown) => void,
  intervalMs = 60_000,
): () => void {
  return periodicTask({ run: () => cron.run(new Date()), onClose, onError: (error) => log('scheduled jobs failed', error), intervalMs });
}

/** Writes a scheduler failure to stderr as one JSON line (the server's log format). */
export function logSchedulerError(message: string, error: unknown): void {
  const detail = error instanceof Error ? { error: error.message, stack: error.stack } : { error: String(error) };
  process.stderr.write(`${JSON.stringify({ level: 50, time: Date.now(), msg: message, ...detail })}\n`);
}
