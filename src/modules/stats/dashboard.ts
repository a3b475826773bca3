// admin/stats/dashboard: every figure of the admin home for a range, with the same figures for the range before it.
// Each figure is one or a few grouped SQL sums (revenue.ts, recurring-orders.ts, customers.ts, projected-overage.ts),
// run concurrently; money is per currency in minor units here and formatted by the service.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { isoSeconds } from '../../lib/time.ts';
import { churnedCustomers, failedPayments, newCustomers, type FailedPayments } from './customers.ts';
import { renewalWindowEnd } from './order-lists.ts';
import { projectedOverage, type OverageProjection } from './projected-overage.ts';
import { twelveMonthsTo, type StatsRange } from './range.ts';
import { recurringAt, recurringNowAndScheduled, renewalsDue, scheduledCancellations, type RecurringAmount } from './recurring-orders.ts';
import { lineRevenueIn, revenueIn, topCustomersIn, type CustomerRevenue, type LineRevenue, type RevenueRow } from './revenue.ts';
import { TOP_CUSTOMERS } from './money-lists.ts';
import type { StatsSelling } from './list-types.ts';

export interface PeriodFigures {
  revenue: RevenueRow[];
  lines: LineRevenue[];
  new_customers: number;
  churned_customers: number;
  failed_payments: FailedPayments;
}

export interface DashboardFigures {
  range: StatsRange;
  now: string;
  /** MRR at the end of the range (now, when it ends today) and at its start. */
  recurring: { current: RecurringAmount[]; previous: RecurringAmount[] };
  current: PeriodFigures;
  previous: PeriodFigures;
  months: string[];
  by_month: RevenueRow[];
  cancellations_scheduled: RecurringAmount[];
  renewals_due: { until: string; amounts: RecurringAmount[] };
  projected_overage: OverageProjection[];
  top_customers: CustomerRevenue[];
}

async function periodFigures(db: Kysely<Database>, start: string, end: string, bounds: StatsRange['current']): Promise<PeriodFigures> {
  const [revenue, lines, joined, churned, failed] = await Promise.all([
    revenueIn(db, start, end, false),
    lineRevenueIn(db, start, end),
    newCustomers(db, bounds),
    churnedCustomers(db, bounds),
    failedPayments(db, bounds),
  ]);
  return { revenue, lines, new_customers: joined, churned_customers: churned, failed_payments: failed };
}

export async function dashboardFigures(db: Kysely<Database>, selling: StatsSelling, range: StatsRange, now: Date): Promise<DashboardFigures> {
  const nowIso = isoSeconds(now);
  const endsToday = range.current.end > nowIso;
  const months = twelveMonthsTo(range.current.to);
  const monthsStart = `${months[0]!}-01T00:00:00Z`;
  // Ending today, MRR is the active orders' (and the scheduled cancellations come from the same read); a range that
  // ended earlier takes the orders running at its end, by their dates.
  const nowAndScheduled = endsToday ? recurringNowAndScheduled(db) : null;
  const [recurringCurrent, recurringPrevious, current, previous, byMonth, cancellations, renewals, overage, top] = await Promise.all([
    nowAndScheduled === null ? recurringAt(db, range.current.end) : nowAndScheduled.then((found) => found.active),
    recurringAt(db, range.current.start),
    periodFigures(db, range.current.start, range.current.end, range.current),
    periodFigures(db, range.previous.start, range.previous.end, range.previous),
    revenueIn(db, monthsStart, range.current.end, true),
    nowAndScheduled === null ? scheduledCancellations(db) : nowAndScheduled.then((found) => found.scheduled),
    renewalsDue(db, nowIso, renewalWindowEnd(nowIso)),
    projectedOverage(db, selling, nowIso),
    topCustomersIn(db, range.current.start, range.current.end, TOP_CUSTOMERS),
  ]);
  return {
    range,
    now: nowIso,
    recurring: { current: recurringCurrent, previous: recurringPrevious },
    current,
    previous,
    months,
    by_month: byMonth,
    cancellations_scheduled: cancellations,
    renewals_due: { until: renewalWindowEnd(nowIso), amounts: renewals },
    projected_overage: overage,
    top_customers: top,
  };
}
