// "Used / included, projected extra charge" (CONTRACT §12): this period's use of an API key plan as a person reads
// it, from the `usage` of order/service (the client area's keys page and the admin order and key pages).
// Past its included calls an overage plan is not "used up" (issue 21 item 4): it says how many calls went beyond the
// included ones and what they will cost, in neutral colour. Only a hard limit reached, or a plan without overage
// whose quota is reached, is "used up" — which is also when get_info's `remaining` reaches 0.
import { html } from 'htm/preact';
import type { KeyUsage as UsageSummary } from './types.ts';
import { formatNumber } from './format.ts';

export type { UsageSummary };

function periodText(usage: UsageSummary): string {
  const day = (text: string) => text.slice(0, 10);
  return `${day(usage.period_start)} to ${usage.period_start.length > 10 ? day(new Date(Date.parse(usage.period_end) - 1000).toISOString()) : day(usage.period_end)}`;
}

const withCurrency = (amount: string, currency: string | null | undefined): string => (currency ? `${amount} ${currency}` : amount);

export type UsageState = { kind: 'within' } | { kind: 'beyond'; text: string } | { kind: 'used_up'; text: string };

/** Where this period's use stands: within the plan, billed beyond the included calls, or stopped. */
export function usageState(usage: UsageSummary, currency?: string | null): UsageState {
  if (usage.hard_limit !== null && usage.used >= usage.hard_limit) {
    return { kind: 'used_up', text: `The hard limit of ${formatNumber(usage.hard_limit)} calls this period is used up: checks are refused until the next period.` };
  }
  if (usage.overage_amount !== null) {
    if (usage.overage_units === 0) return { kind: 'within' };
    return {
      kind: 'beyond',
      text: `${formatNumber(usage.overage_units)} calls beyond the included ${formatNumber(usage.included ?? 0)}, projected extra charge ${withCurrency(usage.overage_amount, currency)}.`,
    };
  }
  // No overage: the quota (the plan's included calls, else the monthlyLimit parameter) is where the plan stops.
  const quota = usage.included ?? usage.limit;
  if (quota !== null && usage.used >= quota) return { kind: 'used_up', text: `The ${formatNumber(quota)} calls included this period are used up.` };
  return { kind: 'within' };
}

/** The state as a line: neutral for calls billed beyond the included ones, an error only when used up. */
export function UsageState({ usage, currency }: { usage: UsageSummary | null | undefined; currency?: string | null }) {
  if (usage === null || usage === undefined) return null;
  const state = usageState(usage, currency);
  if (state.kind === 'within') return null;
  return html`<p class=${state.kind === 'used_up' ? 'error' : 'usage-beyond'} role="status" data-testid="usage-state" data-state=${state.kind}>${state.text}</p>`;
}

export function UsageLine({ usage, currency }: { usage: UsageSummary | null | undefined; currency?: string | null }) {
  if (usage === null || usage === undefined) return null;
  const included = usage.included === null ? 'unlimited' : `${formatNumber(usage.included)} included`;
  const extra =
    usage.overage_amount === null
      ? null
      : html`, projected extra charge <strong data-testid="usage-extra">${withCurrency(usage.overage_amount, currency)}</strong>${usage.overage_units > 0 ? ` for ${formatNumber(usage.overage_units)} calls over` : ''}`;
  return html`<p class="usage-line" data-testid="usage-line">
      <strong>${formatNumber(usage.used)}</strong> used / ${included}${extra}${usage.hard_limit !== null ? `; stops at ${formatNumber(usage.hard_limit)}` : ''}
      <span class="hint"> (${periodText(usage)})</span>
    </p>
    <${UsageState} usage=${usage} currency=${currency} />`;
}
