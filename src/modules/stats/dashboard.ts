// admin/stats/dashboard: every figure of the admin home for a range, with the same figures for the range before it.
// Each figure is one or a few grouped SQL sums (revenue.ts, recurring-orders.ts, customers.ts, projected-overage.ts),
// run concurrently; money is per currency in minor units here, with totals in the default currency (convert.ts), and
// formatted by the service.
import type { Kysely } from 'kysely';
import type { DialectName } from '../../db/database.ts';
import type { Database } from '../../db/schema.ts';
import { isoSeconds } from '../../lib/time.ts';
import { defaultCurrencyOf, type DefaultCurrency, type StatsSelling } from './convert.ts';
import { churnedCustomers, failedPayments, newCustomers, type FailedPayments } from './customers.ts';
import { renewalWindowEnd } from './order-lists.ts';
import { projectedOverage, type OverageProjection } from './projected-overage.ts';
import { twelveMonthsTo, type StatsRange } from './range.ts';
import { recurringAt, recurringNowAndScheduled, renewalsDue, scheduledCancellations, type RecurringAmount } from './recurring-orders.ts';
import { revenueIn, type Revenue } from './revenue.ts';
import { topCustomersIn, type CustomerRevenue } from './top-customers.ts';
import { TOP_CUSTOMERS } from './money-lists.ts';

export interface PeriodFigures {
  revenue: Revenue;
  new_customers: number;
  churned_customers: number;
  failed_payments: FailedPayments;
}

export interface DashboardFigures {
  range: StatsRange;
  /** The default currency and its conversions, as they were when the figures were read. */
  currency: DefaultCurrency;
  now: string;
  /** MRR at the end of the range (now, when it ends today) and at its start. */
  recurring: { current: RecurringAmount[]; previous: RecurringAmount[] };
  current: PeriodFigures;
  previous: PeriodFigures;
  months: string[];
  by_month: Revenue;
  cancellations_scheduled: RecurringAmount[];
  renewals_due: { until: string; amounts: RecurringAmount[] };
  projected_overage: OverageProjection[];
  top_customers: CustomerRevenue[];
}

async function periodFigures(db: Kysely<Database>, start: string, end: string, bounds: StatsRange['current'], into: DefaultCurrency): Promise<PeriodFigures> {
  const [revenue, joined, churned, failed] = await Promise.all([revenueIn(db, start, end, false, into), newCustomers(db, bounds), churnedCustomers(db, bounds), failedPayments(db, bounds, into)]);
  return { revenue, new_customers: joined, churned_customers: churned, failed_payments: failed };
}

export async function dashboardFigures(db: Kysely<Database>, dialect: DialectName, selling: StatsSelling, range: StatsRange, now: Date): Promise<DashboardFigures> {
  const into = await defaultCurrencyOf(db, selling);
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
    periodFigures(db, range.current.start, range.current.end, range.current, into),
    periodFigures(db, range.previous.start, range.previous.end, range.previous, into),
    revenueIn(db, monthsStart, range.current.end, true, into),
    nowAndScheduled === null ? scheduledCancellations(db) : nowAndScheduled.then((found) => found.scheduled),
    renewalsDue(db, nowIso, renewalWindowEnd(nowIso)),
    projectedOverage(db, selling, nowIso),
    topCustomersIn(db, dialect, range.current, TOP_CUSTOMERS, into),
  ]);
  return {
    range,
    currency: into,
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
