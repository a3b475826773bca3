// The plan's own meters (issue 23 item 4) on the client key page and the admin key page, beside the calls chart: for
// each meter "used / included" this period on a bar with the included units and the hard limit marked, the projected
// charge of the units beyond the included ones, and its days as bars drawn like UsageChart's (ui.ts). The figures are
// also text (the line under the caption) and a table (the daily figures), so a screen reader reads what the eye sees.
// A plan without meters draws nothing: `meters` is empty.
import { html } from 'htm/preact';
import { formatMoney, formatNumber } from './format.ts';
import type { Usage } from './types.ts';
import { useId } from './ui.ts';

export type MeterUsage = Usage['meters'][number];

const AGGREGATION_WORDS: Record<MeterUsage['aggregation'], string> = {
  count: 'events counted',
  sum: 'summed',
  max: 'greatest value',
  unique_count: 'distinct values',
  latest: 'latest value',
};

/** What a day's bar means, per aggregation (the API gives each day's part; see docs/metering.md). */
const DAY_WORDS: Record<MeterUsage['aggregation'], string> = {
  count: 'that day',
  sum: 'that day',
  max: 'greatest that day',
  unique_count: 'first seen that day',
  latest: 'last reported that day',
};

/** "1,550 used / 1,000 included; 550 over, projected charge 5.50 USD; stops at 5,000". */
export function meterLine(meter: MeterUsage, currency?: string | null): string {
  const parts = [`${formatNumber(meter.used)} used / ${meter.included === null ? 'unlimited' : `${formatNumber(meter.included)} included`}`];
  if (meter.overage_amount !== null) {
    parts.push(`${meter.overage_units > 0 ? `${formatNumber(meter.overage_units)} over, ` : ''}projected charge ${formatMoney(meter.overage_amount, currency)}`);
  }
  if (meter.hard_limit !== null) parts.push(`stops at ${formatNumber(meter.hard_limit)}`);
  return parts.join('; ');
}

/** Used against the included units on one scale with the hard limit, each mark placed where it falls. */
function MeterBar({ meter }: { meter: MeterUsage }) {
  const { used, included, hard_limit: hardLimit } = meter;
  if (included === null && hardLimit === null) return null;
  const scale = Math.max(1, used, included ?? 0, hardLimit ?? 0);
  const at = (value: number): string => `${Math.min(100, (value / scale) * 100)}%`;
  const stopped = hardLimit !== null && used >= hardLimit;
  return html`<div class="meter meter-marked" role="meter" aria-valuemin="0" aria-valuemax=${scale} aria-valuenow=${used} aria-label=${`${meter.name} used this period`}>
    <div class=${`meter-fill${stopped ? ' over' : included !== null && used > included ? ' beyond' : ''}`} style=${{ width: at(used) }}></div>
    ${included !== null ? html`<span class="meter-mark included" style=${{ left: at(included) }} title=${`Included: ${formatNumber(included)}`}></span>` : null}
    ${hardLimit !== null ? html`<span class="meter-mark hard-limit" data-testid="hard-limit-mark" style=${{ left: at(hardLimit) }} title=${`Hard limit: ${formatNumber(hardLimit)}`}></span>` : null}
  </div>
  <div class="chart-scale" aria-hidden="true">
    Marks: ${included !== null ? html`<span class="legend-included">included ${formatNumber(included)}</span>` : null}${included !== null && hardLimit !== null ? ' · ' : null}${hardLimit !== null ? html`<span class="legend-hard-limit">hard limit ${formatNumber(hardLimit)}</span>` : null}
  </div>`;
}

/** One meter's figure: caption, line, bar, the days as bars, and the daily table. */
export function MeterChart({ meter, currency }: { meter: MeterUsage; currency?: string | null }) {
  const width = 600;
  const height = 120;
  const barGap = 2;
  const series = meter.series;
  // The table lists the days something was measured: a reported value on a latest meter (0 seats is a report), else
  // a day above 0.
  const measured = series.filter((day) => (meter.aggregation === 'latest' ? day.quantity !== null : day.quantity !== 0));
  const max = Math.max(1, ...series.map((day) => day.quantity ?? 0));
  const barWidth = series.length === 0 ? 0 : width / series.length;
  const line = meterLine(meter, currency);
  return html`<figure class="chart meter-chart" data-testid=${`meter-${meter.code}`}>
    <figcaption><strong>${meter.name}</strong> <span class="hint">(${meter.unit}, ${AGGREGATION_WORDS[meter.aggregation]})</span></figcaption>
    <p class="usage-line" data-testid="meter-line">${line}</p>
    <${MeterBar} meter=${meter} />
    <svg viewBox=${`0 0 ${width} ${height}`} preserveAspectRatio="none" role="img" aria-label=${`${meter.name} per day: ${line}.`} class="bars">
      ${series.map((day, index) => {
        if (day.quantity === null) return null;
        const barHeight = (day.quantity / max) * (height - 4);
        return html`<rect x=${index * barWidth + barGap / 2} y=${height - barHeight} width=${Math.max(1, barWidth - barGap)} height=${barHeight} class="bar">
          <title>${day.day}: ${formatNumber(day.quantity)}</title>
        </rect>`;
      })}
      <line x1="0" y1=${height - 0.5} x2=${width} y2=${height - 0.5} class="axis" />
    </svg>
    ${series.length > 0 ? html`<div class="chart-axis" aria-hidden="true"><span>${series[0]!.day}</span><span>${series[series.length - 1]!.day}</span></div>` : null}
    <details>
      <summary>Daily figures: ${meter.name}</summary>
      ${measured.length === 0
        ? html`<p class="hint" data-testid="no-meter-figures">Nothing measured in these days yet.</p>`
        : html`<table data-testid="meter-days">
            <caption class="sr-only">${meter.name} per day (${meter.unit}, ${DAY_WORDS[meter.aggregation]})</caption>
            <thead><tr><th scope="col">Day</th><th scope="col">${meter.name} (${meter.unit})</th></tr></thead>
            <tbody>
              ${measured.map((day) => html`<tr><td>${day.day}</td><td>${formatNumber(day.quantity)}</td></tr>`)}
            </tbody>
          </table>`}
    </details>
  </figure>`;
}

/** Every meter of the plan, or nothing when it has none. */
export function MeterCharts({ meters, currency }: { meters: readonly MeterUsage[] | undefined; currency?: string | null }) {
  const headingId = useId('meters');
  if (meters === undefined || meters.length === 0) return null;
  return html`<section class="meter-charts" data-testid="meter-charts" aria-labelledby=${headingId}>
    <h3 id=${headingId}>Meters this period</h3>
    ${meters.map((meter) => html`<${MeterChart} key=${meter.code} meter=${meter} currency=${currency} />`)}
  </section>`;
}
