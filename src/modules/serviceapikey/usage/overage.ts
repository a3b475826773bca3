// The close of usage periods (CONTRACT §12), run by the scheduled jobs: for each order and usage period that has
// ended, the period's uses over the included ones are priced and billed on an invoice of their own (charged like a
// renewal: auto-pay with a saved card when on). Exactly once per order and period: the close is a row in
// `usage_closes` with a unique (order, period start), inserted in the transaction that issues the invoice — ten
// concurrent runs, or a run after a crash, find it and do nothing; a run after downtime closes every period that
// ended meanwhile. A period closes CLOSE_GRACE_MS after its end, so the counts every process flushes at least once a
// second have reached the database. Uses counted after the close (a process that was cut off longer) are not billed.
//
// A plan change in the middle of a period: the whole period's overage is billed at the plan in force when the
// period closes (the key's usage options are replaced by the new plan's in the change's transaction).
import type { Kysely } from 'kysely';
import type { Database } from '../../../db/schema.ts';
import { inTransaction } from '../../../platform/transaction.ts';
import type { Money } from '../../../lib/money.ts';
import { isoSeconds } from '../../../lib/time.ts';
import { overageMinor, overageUnits } from '../../../lib/usage-pricing.ts';
import type { InvoiceService } from '../../invoice/service.ts';
import { orderPeriodUses } from './period-usage.ts';
import { planOf, usageOptionsOf } from './usage-plan.ts';
import { parseObject } from '../../../lib/json.ts';

/** How long after its end a period is closed: longer than a flush interval (1 s) and a slow flush. */
export const CLOSE_GRACE_MS = 10_000;
const BATCH = 200;

export interface UsageCloserDeps {
  db: Kysely<Database>;
  invoices: Pick<InvoiceService, 'issueUsageInvoice'>;
  money: Pick<Money, 'precision' | 'format'>;
  /** Writes this process's counts first. */
  flushUsage: () => Promise<void>;
  log?: (message: string, error: unknown) => void;
}

const count = (n: number): string => n.toLocaleString('en-US');

/** The invoice line's title: "Pro plan — usage 2026-11-01 to 2026-11-30: 750 calls over the 1,000 included". */
export function usageLineTitle(orderTitle: string, periodStart: string, periodEnd: string, units: number, included: number | null): string {
  const last = new Date(Date.parse(periodEnd) - 1000).toISOString().slice(0, 10);
  return `${orderTitle} — usage ${periodStart.slice(0, 10)} to ${last}: ${count(units)} calls over the ${count(included ?? 0)} included`;
}

export function createUsageCloser({ db, invoices, money, flushUsage, log }: UsageCloserDeps) {
  /** Closes one order's period: `closed` when this call recorded the close, `invoiced` when it issued an invoice. */
  async function closeOne(orderId: number, periodStart: string, periodEnd: string, now: Date): Promise<{ closed: boolean; invoiced: boolean }> {
    const nothing = { closed: false, invoiced: false };
    return inTransaction(db, async (trx) => {
      const order = await trx.selectFrom('orders').select(['id', 'client_id', 'title']).where('id', '=', orderId).executeTakeFirst();
      if (order === undefined) return nothing;
      // The plan in force at the close: the order's keys share it (the first key's options).
      const key = await trx.selectFrom('api_keys').select(['options', 'config']).where('order_id', '=', orderId).orderBy('id').executeTakeFirst();
      if (key === undefined) return nothing;
      const plan = planOf(usageOptionsOf(parseObject(key.options)), parseObject(key.config));
      const used = await orderPeriodUses(trx, orderId, periodStart);
      const units = plan.overage === null ? 0 : overageUnits(used, plan.included);
      const amount = plan.overage === null ? 0 : overageMinor(plan.overage, units, money.precision);
      const closed = await trx
        .insertInto('usage_closes')
        .values({
          order_id: orderId,
          client_id: order.client_id,
          period_start: periodStart,
          period_end: periodEnd,
          used,
          included: plan.included,
          overage_units: units,
          amount,
          invoice_id: null,
          created_at: isoSeconds(now),
        })
        .onConflict((oc) => oc.columns(['order_id', 'period_start']).doNothing())
        .returning('id')
        .executeTakeFirst();
      // Closed by another run (or this period was closed before a crash): nothing more to do.
      if (closed === undefined) return nothing;
      if (amount === 0) return { closed: true, invoiced: false };
      const invoiceId = await invoices.issueUsageInvoice(
        trx,
        { orderId, clientId: order.client_id, title: usageLineTitle(order.title, periodStart, periodEnd, units, plan.included), amount },
        now,
      );
      await trx.updateTable('usage_closes').set({ invoice_id: invoiceId }).where('id', '=', closed.id).execute();
      return { closed: true, invoiced: true };
    });
  }

  return {
    /** Closes every usage period that ended before `now` (less the grace) and is not closed; returns invoices issued. */
    async closePeriods(now: Date): Promise<{ closed: number; invoices: number; failed: number }> {
      await flushUsage();
      const cutoff = isoSeconds(new Date(now.getTime() - CLOSE_GRACE_MS));
      const report = { closed: 0, invoices: 0, failed: 0 };
      const skipped = new Set<string>();
      for (;;) {
        const due = await db
          .selectFrom('api_key_period_usage as p')
          .innerJoin('api_keys as k', 'k.id', 'p.api_key_id')
          .select(['k.order_id', 'p.period_start'])
          .select((eb) => eb.fn.max('p.period_end').as('period_end'))
          .where('p.period_end', '<=', cutoff)
          .where((eb) =>
            eb.not(
              eb.exists(
                eb
                  .selectFrom('usage_closes as c')
                  .select('c.id')
                  .whereRef('c.order_id', '=', 'k.order_id')
                  .whereRef('c.period_start', '=', 'p.period_start'),
              ),
            ),
          )
          .groupBy(['k.order_id', 'p.period_start'])
          .orderBy('k.order_id')
          .orderBy('p.period_start')
          .limit(BATCH + skipped.size)
          .execute();
        const todo = due.filter((row) => !skipped.has(`${row.order_id} ${row.period_start}`));
        if (todo.length === 0) break;
        for (const row of todo) {
          try {
            const done = await closeOne(row.order_id, row.period_start, row.period_end, now);
            if (done.invoiced) report.invoices += 1;
            if (done.closed) report.closed += 1;
            else skipped.add(`${row.order_id} ${row.period_start}`);
          } catch (error) {
            // Left for the next run; skipped in this one so one bad order cannot stop the others.
            skipped.add(`${row.order_id} ${row.period_start}`);
            report.failed += 1;
            log?.(`closing the usage period ${row.period_start} of order ${row.order_id} failed`, error);
          }
        }
        if (due.length < BATCH + skipped.size) break;
      }
      return report;
    },

    /** An order's closed periods, newest first (staff and the client area). */
    async closesOf(orderId: number): Promise<Array<{ period_start: string; period_end: string; used: number; included: number | null; overage_units: number; amount: string; invoice_id: number | null }>> {
      const rows = await db.selectFrom('usage_closes').selectAll().where('order_id', '=', orderId).orderBy('period_start', 'desc').limit(24).execute();
      return rows.map((row) => ({
        period_start: row.period_start,
        period_end: row.period_end,
        used: Number(row.used),
        included: row.included === null ? null : Number(row.included),
        overage_units: Number(row.overage_units),
        amount: money.format(Number(row.amount)),
        invoice_id: row.invoice_id,
      }));
    },
  };
}

export type UsageCloser = ReturnType<typeof createUsageCloser>;
