// cron: staff run the scheduled jobs now (the server also runs them every minute unless SCHEDULER=off), and see when
// they last ran.
import { Type } from '@sinclair/typebox';
import { actionsFor, type ModuleApi } from '../../platform/action.ts';
import { Nullable, Timestamp } from '../../platform/schemas.ts';
import type { CronService } from './service.ts';

/** The services this module's actions use. */
export interface CronNeeds {
  cron: Pick<CronService, 'run' | 'info'>;
}

const { adminAction } = actionsFor<CronNeeds>();

const Count = (description: string) => Type.Integer({ minimum: 0, description });

/** What one run did (CronReport). */
const CronReport = Type.Object(
  {
    renewal_invoices: Count('Renewal invoices issued ahead of expiry'),
    renewed_free: Count('Free orders renewed'),
    suspended: Count('Orders suspended at expiry'),
    canceled: Count('Orders canceled (at period end, or after a long suspension)'),
    carts_purged: Count('Abandoned guest cart lines deleted'),
    invoice_reminders: Count('Payment reminders queued'),
    usage_invoices: Count('Overage invoices issued for usage periods that closed'),
    plan_changes_voided: Count('Unpaid plan-change invoices voided at the end of the period they were priced for'),
    credits_expired: Count('Grants past their expiry whose unused credit was expired'),
    trial_reminders: Count('Free-trial reminders sent (order.trial_will_end), each once per order'),
    trials_ended: Count('Free trials that ended (first invoice issued, or nothing owed when canceled)'),
    failed: Count('Orders a job could not change (logged); the next run tries again'),
    audit_entries_pruned: Count('Audit log entries older than audit_retention_days deleted'),
  },
  { $id: 'CronReport' },
);

export const cronApi: ModuleApi<CronNeeds> = {
  name: 'cron',
  admin: {
    run: adminAction({
      // Not one transaction with an audit entry: the jobs commit order by order and record the changes that matter
      // as the system's own entries (docs/audit-log.md); one transaction would hold the database for the whole run.
      audit: false,
      params: Type.Object({}),
      permission: 'system.manage',
      summary: 'Runs the scheduled jobs now; returns what they did',
      result: CronReport,
      handler: (_params, { services }) => services.cron.run(new Date()),
    }),
    info: adminAction({
      params: Type.Object({}),
      permission: 'system.manage',
      summary: 'When the scheduled jobs last ran to the end (`last_cron_exec`, ISO 8601 UTC; null before the first run), as in FOSSBilling',
      result: Type.Object({ last_cron_exec: Nullable(Timestamp) }, { $id: 'CronInfo' }),
      handler: (_params, { services }) => services.cron.info(),
    }),
  },
};
