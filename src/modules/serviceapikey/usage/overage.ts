// The close of usage periods (CONTRACT §12, issue 23 item 5), run by the scheduled jobs: for each order and usage
// period that has ended, every meter of the plan is priced — the built-in `calls` (the period's uses over the
// included ones) and each of the plan's own meters (its period quantity: the sum, count or distinct values, or for
// `max` and `latest` the period's value) — and billed on one invoice of its own, one line per meter with an amount
// (charged like a renewal: auto-pay with a saved card when on). Exactly once per order, meter and period: the close is
// a row in `usage_closes` with a unique (order, period start), inserted with the meters' figures (`usage_close_meters`,
// unique per close and meter) in the transaction that issues the invoice — ten concurrent runs, or a run after a crash,
// find it and do nothing; a run after downtime closes every period that ended meanwhile. A period closes
// CLOSE_GRACE_MS after its end, so the counts every process flushes at least once a second have reached the database.
// Uses counted after the close (a process that was cut off longer) are not billed; ingested events of a closed period
// are refused (PERIOD_CLOSED, usage/service.ts).
//
// A plan change in the middle of a period: the whole period is billed at the plan in force when the period closes (the
// keys' usage options, meters included, are replaced by the new plan's in the change's transaction).
import type { Kysely } from 'kysely';
import type { Database } from '../../../db/schema.ts';
import type { DialectName } from '../../../db/database.ts';
import { inTransaction } from '../../../platform/transaction.ts';
import { moneyFor, type Money } from '../../../lib/money.ts';
import type { Selling } from '../../currency/selling.ts';
import { isoSeconds } from '../../../lib/time.ts';
import { parseObject } from '../../../lib/json.ts';
import type { InvoiceService } from '../../invoice/service.ts';
import { periodQuantities } from '../../usage/quantities.ts';
import { billIn, callsMeter, invoiceLines, type BilledMeter, type PricedMeter } from './close-lines.ts';
import { duePeriods } from './close-due.ts';
import { orderPeriodUses } from './period-usage.ts';
import { planOf, usageOptionsOf } from './usage-plan.ts';

export { usageLineTitle } from './close-lines.ts';

/** How long after its end a period is closed: longer than a flush interval (1 s) and a slow flush. */
export const CLOSE_GRACE_MS = 10_000;
const BATCH = 200;

export interface UsageCloserDeps {
  db: Kysely<Database>;
  /** On PostgreSQL the close takes the order's row FOR UPDATE, against an ingestion in flight. */
  dialect: DialectName;
  invoices: Pick<InvoiceService, 'issueUsageInvoice'>;
  money: Pick<Money, 'precision' | 'format'>;
  /** The order's currency: meters price in the default currency; an order in another is billed converted (issue 26). */
  selling: Pick<Selling, 'describe'>;
  /** Writes this process's counts first. */
  flushUsage: () => Promise<void>;
  /** Prepaid plans (issue 24): draws the period's usage from the balance before the close records it (prepaid-draw.ts). */
  drawPrepaid?: (orderId: number, periodStart: string) => Promise<void>;
  log?: (message: string, error: unknown) => void;
}

/** A meter of a past close as staff and the client read it (amounts formatted). */
export interface ClosedMeter {
  code: string;
  name: string;
  unit: string;
  aggregation: string;
  used: number;
  included: number | null;
  overage_units: number;
  amount: string;
}

/** A past close: the `calls` meter's figures (as before meters), the invoice's total, and the plan's other meters. */
export interface ClosedPeriod {
  period_start: string;
  period_end: string;
  used: number;
  included: number | null;
  overage_units: number;
  /** What `calls` billed. */
  amount: string;
  /** What the close billed in all (the sum of its invoice lines, before tax). */
  total: string;
  invoice_id: number | null;
  meters: ClosedMeter[];
}

const num = (value: number | string): number => Number(value);
const maybe = (value: number | string | null): number | null => (value === null ? null : Number(value));

export function createUsageCloser({ db, dialect, invoices, money: fallback, selling, flushUsage, drawPrepaid, log }: UsageCloserDeps) {
  /** Closes one order's period: `closed` when this call recorded the close, `invoiced` when it issued an invoice. */
  async function closeOne(orderId: number, periodStart: string, periodEnd: string, now: Date): Promise<{ closed: boolean; invoiced: boolean }> {
    const nothing = { closed: false, invoiced: false };
    return inTransaction(db, async (trx) => {
      // The order's row first: ingestion holds it FOR KEY SHARE while it stores events (usage/order-plans.ts), so a
      // batch in flight commits before the quantities below are read, and a batch after this close finds the period
      // closed. SQLite runs one write transaction at a time, which gives the same order.
      const selectOrder = trx.selectFrom('orders').select(['id', 'client_id', 'title', 'currency']).where('id', '=', orderId);
      const order = await (dialect === 'postgres' ? selectOrder.forUpdate() : selectOrder).executeTakeFirst();
      if (order === undefined) return nothing;
      // Closed by another run (or before a crash): nothing to price.
      const done = await trx.selectFrom('usage_closes').select('id').where('order_id', '=', orderId).where('period_start', '=', periodStart).executeTakeFirst();
      if (done !== undefined) return nothing;
      // The plan in force at the close: the order's keys share it (the first key's options), meters included.
      const key = await trx.selectFrom('api_keys').select(['options', 'config']).where('order_id', '=', orderId).orderBy('id').executeTakeFirst();
      if (key === undefined) return nothing;
      const options = usageOptionsOf(parseObject(key.options));
      const plan = planOf(options, parseObject(key.config));
      const meters = options.meters ?? [];

      // A prepaid plan drew its usage from the balance as it was measured: its meters' figures are recorded, unpriced
      // (amount 0), and no overage invoice is issued; the plan's recurring price is invoiced by renewals as before.
      const prepaid = options.prepaid === true;
      const sale = await selling.describe(trx, order.currency);
      const bill = (meter: PricedMeter, used: number): BilledMeter => {
        const billed = billIn(meter, used, sale);
        return prepaid ? { ...billed, amount: 0 } : billed;
      };
      const calls = bill(callsMeter(plan), await orderPeriodUses(trx, orderId, periodStart));
      const quantities = await periodQuantities(trx, orderId, periodStart, meters);
      const billed: BilledMeter[] = meters.map((meter) => bill(meter, quantities.get(meter.code) ?? 0));

      const closed = await trx
        .insertInto('usage_closes')
        .values({
          order_id: orderId,
          client_id: order.client_id,
          period_start: periodStart,
          period_end: periodEnd,
          used: calls.used,
          included: calls.included,
          overage_units: calls.overage_units,
          amount: calls.amount,
          invoice_id: null,
          created_at: isoSeconds(now),
        })
        .onConflict((oc) => oc.columns(['order_id', 'period_start']).doNothing())
        .returning('id')
        .executeTakeFirst();
      // Closed by another run meanwhile (SQLite, or a close not holding the order): nothing more to do.
      if (closed === undefined) return nothing;
      if (billed.length > 0) {
        await trx
          .insertInto('usage_close_meters')
          .values(
            billed.map((meter, position) => ({
              close_id: closed.id,
              position,
              meter: meter.code,
              name: meter.name,
              unit: meter.unit,
              aggregation: meter.aggregation,
              used: meter.used,
              included: meter.included,
              overage_units: meter.overage_units,
              amount: meter.amount,
            })),
          )
          .execute();
      }
      const lines = invoiceLines(order.title, periodStart, periodEnd, calls, billed);
      if (lines.length === 0) return { closed: true, invoiced: false };
      const invoiceId = await invoices.issueUsageInvoice(trx, { orderId, clientId: order.client_id, lines }, now);
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
        const due = await duePeriods(db, cutoff, BATCH + skipped.size);
        const todo = due.filter((row) => !skipped.has(`${row.order_id} ${row.period_start}`));
        if (todo.length === 0) break;
        for (const row of todo) {
          try {
            // A prepaid order's last uses are drawn first (a no-op for other plans); its own transaction, before the close's.
            if (drawPrepaid !== undefined) await drawPrepaid(row.order_id, row.period_start);
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

    /** An order's closed periods, newest first, each with its meters' figures (staff and the client area). */
    async closesOf(orderId: number): Promise<ClosedPeriod[]> {
      const rows = await db.selectFrom('usage_closes').selectAll().where('order_id', '=', orderId).orderBy('period_start', 'desc').limit(24).execute();
      // Amounts were billed in the order's currency.
      const order = await db.selectFrom('orders').select('currency').where('id', '=', orderId).executeTakeFirst();
      const money = order === undefined ? fallback : moneyFor(order.currency);
      const meterRows =
        rows.length === 0
          ? []
          : await db
              .selectFrom('usage_close_meters')
              .selectAll()
              .where('close_id', 'in', rows.map((row) => row.id))
              .orderBy('close_id')
              .orderBy('position')
              .execute();
      return rows.map((row) => {
        const own = meterRows.filter((meter) => meter.close_id === row.id);
        const total = own.reduce((sum, meter) => sum + num(meter.amount), num(row.amount));
        return {
          period_start: row.period_start,
          period_end: row.period_end,
          used: num(row.used),
          included: maybe(row.included),
          overage_units: num(row.overage_units),
          amount: money.format(num(row.amount)),
          total: money.format(total),
          invoice_id: row.invoice_id,
          meters: own.map((meter) => ({
            code: meter.meter,
            name: meter.name,
            unit: meter.unit,
            aggregation: meter.aggregation,
            used: num(meter.used),
            included: maybe(meter.included),
            overage_units: num(meter.overage_units),
            amount: money.format(num(meter.amount)),
          })),
        };
      });
    },
  };
}

export type UsageCloser = ReturnType<typeof createUsageCloser>;
