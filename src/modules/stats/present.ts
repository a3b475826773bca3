// The dashboard's figures as the API answers them: money as decimal strings in each currency's precision, each
// figure beside its value for the range before, every currency seen in either range listed in both; and every money
// figure again as one total in the default currency (`in_default_currency`, converted as convert.ts says, which
// `conversion` tells the reader).
import type { DefaultCurrency } from './convert.ts';
import type { DashboardFigures } from './dashboard.ts';
import { amountOf } from './list-types.ts';
import type { RecurringAmount } from './recurring-orders.ts';
import type { Revenue, RevenueRow } from './revenue.ts';

/** Every currency in the lists, sorted. */
function currenciesOf(...lists: ReadonlyArray<ReadonlyArray<{ currency: string }>>): string[] {
  return [...new Set(lists.flatMap((list) => list.map((row) => row.currency)))].toSorted();
}

/** `{currency, amount, previous}` for a figure read from two ranges. */
function compared<T extends { currency: string }>(current: readonly T[], previous: readonly T[], value: (row: T) => number) {
  return currenciesOf(current, previous).map((currency) => {
    const now = current.find((row) => row.currency === currency);
    const before = previous.find((row) => row.currency === currency);
    return { currency, amount: amountOf(now === undefined ? 0 : value(now), currency), previous: amountOf(before === undefined ? 0 : value(before), currency) };
  });
}

const amounts = (rows: readonly RecurringAmount[]) => rows.map((row) => ({ currency: row.currency, amount: amountOf(row.amount, row.currency), mrr: amountOf(row.mrr, row.currency) }));
const count = (rows: ReadonlyArray<{ orders: number }>) => rows.reduce((sum, row) => sum + row.orders, 0);

function revenueRow(row: RevenueRow) {
  const { currency } = row;
  return { currency, paid: amountOf(row.paid, currency), refunds: amountOf(row.refunds, currency), credit_notes: amountOf(row.credit_notes, currency), net: amountOf(row.net, currency) };
}

/** The 12 months × every currency with revenue in them (zeros where a month had none), oldest first. */
function monthly(months: readonly string[], rows: readonly RevenueRow[]) {
  const currencies = currenciesOf(rows);
  return months.flatMap((month) =>
    currencies.map((currency) => {
      const row = rows.find((r) => r.month === month && r.currency === currency) ?? { month, currency, paid: 0, refunds: 0, credit_notes: 0, net: 0 };
      return { month, ...revenueRow(row) };
    }),
  );
}

/** What the totals are and how they were converted: said in the answer, shown under the figures. */
export const conversionNote = (code: string): string =>
  `Totals in ${code}: invoiced amounts (revenue, refunds, credit notes, usage, top-ups, failed payments, top customers) converted at the rate stored on each invoice; MRR, ARR, renewals and scheduled cancellations at today's rates; projected overage at the plans' prices in ${code}.`;

/** The range's revenue total in the default currency (zeros when nothing moved). */
function revenueTotal(revenue: Revenue, code: string) {
  return revenue.total[0] ?? { month: '', currency: code, paid: 0, refunds: 0, credit_notes: 0, net: 0 };
}

/** The money figures as totals in the default currency. */
function inDefaultCurrency(figures: DashboardFigures, into: DefaultCurrency) {
  const { code } = into;
  const money = (minor: number): string => amountOf(minor, code);
  const todays = (rows: readonly RecurringAmount[], value: (row: RecurringAmount) => number): number => rows.reduce((sum, row) => sum + into.atTodaysRate(value(row), row.currency), 0);
  const { current, previous, recurring } = figures;
  const now = revenueTotal(current.revenue, code);
  const before = revenueTotal(previous.revenue, code);
  return {
    currency: code,
    mrr: { amount: money(todays(recurring.current, (row) => row.mrr)), previous: money(todays(recurring.previous, (row) => row.mrr)) },
    arr: { amount: money(todays(recurring.current, (row) => row.arr)), previous: money(todays(recurring.previous, (row) => row.arr)) },
    net_revenue: { paid: money(now.paid), refunds: money(now.refunds), credit_notes: money(now.credit_notes), net: money(now.net), previous_net: money(before.net) },
    revenue_by_month: figures.months.map((month) => {
      const row = figures.by_month.total.find((r) => r.month === month) ?? { paid: 0, refunds: 0, credit_notes: 0, net: 0 };
      return { month, paid: money(row.paid), refunds: money(row.refunds), credit_notes: money(row.credit_notes), net: money(row.net) };
    }),
    usage_revenue: { amount: money(current.revenue.lines_total.usage), previous: money(previous.revenue.lines_total.usage) },
    top_ups: { amount: money(current.revenue.lines_total.top_ups), previous: money(previous.revenue.lines_total.top_ups) },
    failed_payments: { failed: money(current.failed_payments.total.failed), recovered: money(current.failed_payments.total.recovered) },
    cancellations_scheduled: { mrr: money(todays(figures.cancellations_scheduled, (row) => row.mrr)) },
    renewals_due: { amount: money(todays(figures.renewals_due.amounts, (row) => row.amount)) },
    projected_overage: { amount: money(figures.projected_overage.reduce((sum, row) => sum + row.default_amount, 0)) },
  };
}

export function presentDashboard(figures: DashboardFigures, clients: ReadonlyMap<number, { email: string; name: string }>) {
  const { range, current, previous, recurring } = figures;
  return {
    from: range.current.from,
    to: range.current.to,
    previous_from: range.previous.from,
    previous_to: range.previous.to,
    generated_at: figures.now,
    default_currency: figures.currency.code,
    conversion: conversionNote(figures.currency.code),
    mrr: compared(recurring.current, recurring.previous, (row) => row.mrr).map((row) => ({ ...row, orders: recurring.current.find((r) => r.currency === row.currency)?.orders ?? 0 })),
    arr: compared(recurring.current, recurring.previous, (row) => row.arr),
    net_revenue: currenciesOf(current.revenue.rows, previous.revenue.rows).map((currency) => {
      const now = current.revenue.rows.find((row) => row.currency === currency) ?? { month: '', currency, paid: 0, refunds: 0, credit_notes: 0, net: 0 };
      const before = previous.revenue.rows.find((row) => row.currency === currency);
      return { ...revenueRow(now), previous_net: amountOf(before?.net ?? 0, currency) };
    }),
    revenue_by_month: monthly(figures.months, figures.by_month.rows),
    usage_revenue: compared(current.revenue.lines, previous.revenue.lines, (row) => row.usage),
    top_ups: compared(current.revenue.lines, previous.revenue.lines, (row) => row.top_ups),
    new_customers: { count: current.new_customers, previous: previous.new_customers },
    churned_customers: { count: current.churned_customers, previous: previous.churned_customers },
    failed_payments: {
      count: current.failed_payments.failed,
      recovered: current.failed_payments.recovered,
      previous_count: previous.failed_payments.failed,
      previous_recovered: previous.failed_payments.recovered,
      amounts: current.failed_payments.amounts.map((row) => ({ currency: row.currency, failed: amountOf(row.failed, row.currency), recovered: amountOf(row.recovered, row.currency) })),
    },
    cancellations_scheduled: { count: count(figures.cancellations_scheduled), amounts: amounts(figures.cancellations_scheduled) },
    renewals_due: { until: figures.renewals_due.until, count: count(figures.renewals_due.amounts), amounts: amounts(figures.renewals_due.amounts) },
    projected_overage: {
      orders: count(figures.projected_overage),
      amounts: figures.projected_overage.map((row) => ({ currency: row.currency, amount: amountOf(row.amount, row.currency) })),
    },
    top_customers: figures.top_customers.map((row) => {
      const client = clients.get(row.client_id);
      return {
        client_id: row.client_id,
        email: client?.email ?? null,
        name: client?.name ?? null,
        currency: row.currency,
        amount: amountOf(row.amount, row.currency),
        default_amount: amountOf(row.default_amount, figures.currency.code),
      };
    }),
    in_default_currency: inDefaultCurrency(figures, figures.currency),
  };
}

export type DashboardAnswer = ReturnType<typeof presentDashboard>;
