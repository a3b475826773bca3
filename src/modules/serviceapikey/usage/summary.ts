// get_info's `usage` (CONTRACT §7.1, §12): the period's bounds, the uses, the limit and what remains, the included
// uses and the projected overage at today's count. Shared by the check's answer and the staff and client reads.
import type { Money } from '../../../lib/money.ts';
import { overageMinor, overageUnits } from '../../../lib/usage-pricing.ts';
import type { UsageSummary } from '../types.ts';
import { periodDays, type UsagePeriod } from './usage-period.ts';
import type { UsagePlan } from './usage-plan.ts';

export type PlanSummary = Omit<UsageSummary, 'limit' | 'remaining' | 'limited_by' | 'meters'>;

/** The plan's meters' figures and the one whose hard limit stops the keys (issue 23). */
export type MeteredSummary = Pick<UsageSummary, 'limited_by' | 'meters'>;

/** A plan without meters, under no limit. */
export const NO_METERS: MeteredSummary = { limited_by: null, meters: [] };

/** The period's bounds and the plan's figures for `used` uses (the projected overage at today's count). */
export function summaryOf(money: Pick<Money, 'format' | 'precision'>, plan: UsagePlan, period: UsagePeriod, used: number): PlanSummary {
  const units = plan.overage === null ? 0 : overageUnits(used, plan.included);
  const days = periodDays(period);
  return {
    period_start: period.calendar ? days.from : period.start,
    period_end: period.calendar ? days.to : period.end,
    used,
    included: plan.included,
    overage_units: units,
    overage_amount: plan.overage === null ? null : money.format(overageMinor(plan.overage, units, money.precision)),
    hard_limit: plan.hardLimit,
  };
}

/**
 * §7.1's `limit` and `remaining`; an overage plan's `remaining` is to its hard limit, or null (docs/usage-and-billing.md);
 * then the meters' figures (`metered`).
 */
export function withLimit(summary: PlanSummary, limit: number | null, metered: MeteredSummary): UsageSummary {
  const { period_start, period_end, used, ...plan } = summary,
    stop = plan.overage_amount === null ? limit : plan.hard_limit;
  return { period_start, period_end, used, limit, remaining: stop === null ? null : Math.max(0, stop - used), ...plan, limited_by: metered.limited_by, meters: metered.meters };
}
