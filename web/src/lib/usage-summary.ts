// "Used / included, projected extra charge" (CONTRACT §12): this period's use of an API key plan as a person reads
// it, from the `usage` of order/service (the client area's keys page and the admin order page).
import { html } from 'htm/preact';
import type { UsageSummary } from '../../../src/modules/serviceapikey/service.ts';
import { formatNumber } from './format.ts';

export type { UsageSummary };

function periodText(usage: UsageSummary): string {
  const day = (text: string) => text.slice(0, 10);
  return `${day(usage.period_start)} to ${usage.period_start.length > 10 ? day(new Date(Date.parse(usage.period_end) - 1000).toISOString()) : day(usage.period_end)}`;
}

export function UsageLine({ usage, currency }: { usage: UsageSummary | null | undefined; currency?: string | null }) {
  if (usage === null || usage === undefined) return null;
  const included = usage.included === null ? 'unlimited' : `${formatNumber(usage.included)} included`;
  const extra =
    usage.overage_amount === null
      ? null
      : html`, projected extra charge <strong data-testid="usage-extra">${usage.overage_amount}${currency ? ` ${currency}` : ''}</strong>${usage.overage_units > 0 ? ` for ${formatNumber(usage.overage_units)} calls over` : ''}`;
  return html`<p class="usage-line" data-testid="usage-line">
    <strong>${formatNumber(usage.used)}</strong> used / ${included}${extra}${usage.hard_limit !== null ? `; stops at ${formatNumber(usage.hard_limit)}` : ''}
    <span class="hint"> (${periodText(usage)})</span>
  </p>`;
}
