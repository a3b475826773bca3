// Key analytics (issue 25 item 6) on the admin key page, the admin order page and the client key page: the answers to
// checks over the last 24 hours, 30 days or 12 months (a range switch), one line per outcome seen, drawn with uPlot
// on a canvas. The canvas is for the eye; the same figures are text (the totals line and the legend) and a table (every
// bucket with an answer), so a screen reader reads what the eye sees.
import { html } from 'htm/preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import './outcome-chart.css';
import type { Result } from './actions.ts';
import { formatDateTime, formatNumber } from './format.ts';
import { ErrorMessage, Loading, useId, useLoad } from './ui.ts';

export type KeyAnalytics = Result<'admin/serviceapikey/analytics'>;
export type AnalyticsRange = KeyAnalytics['range'];
type Point = KeyAnalytics['series'][number];
type Outcome = Exclude<keyof Point, 'at' | 'not_found'>;

/** Each outcome's words and colour, in the order the legend and the table show them. */
const OUTCOMES: ReadonlyArray<{ key: Outcome; label: string; color: string }> = [
  { key: 'valid', label: 'Valid', color: '#1a7f37' },
  { key: 'rate_limited', label: 'Rate limited', color: '#9a6700' },
  { key: 'limit_exceeded', label: 'Limit exceeded', color: '#b42318' },
  { key: 'no_credit', label: 'No credit', color: '#c2410c' },
  { key: 'disabled', label: 'Disabled', color: '#57606a' },
  { key: 'client_inactive', label: 'Client inactive', color: '#6e40c9' },
  { key: 'not_active', label: 'Order not active', color: '#0b5cad' },
  { key: 'trial_ended', label: 'Trial ended', color: '#bf3989' },
  { key: 'expired', label: 'Expired', color: '#1b1f24' },
];

const RANGES: ReadonlyArray<{ range: AnalyticsRange; label: string }> = [
  { range: '24h', label: '24 hours' },
  { range: '30d', label: '30 days' },
  { range: '12m', label: '12 months' },
];

/** A bucket as the table names it: the day, or the day and the time (UTC). */
function bucketLabel(at: string, granularity: KeyAnalytics['granularity']): string {
  return granularity === 'day' ? at.slice(0, 10) : formatDateTime(at);
}

/** The outcomes with at least one answer in the range (valid always, so an idle key still shows its axis). */
function seenOutcomes(totals: Record<Outcome, number>) {
  return OUTCOMES.filter(({ key }) => key === 'valid' || totals[key] > 0);
}

function totalsOf(series: readonly Point[]): Record<Outcome, number> {
  const totals = Object.fromEntries(OUTCOMES.map(({ key }) => [key, 0])) as Record<Outcome, number>;
  for (const point of series) for (const { key } of OUTCOMES) totals[key] += point[key];
  return totals;
}

/** The uPlot canvas, rebuilt when the figures change and resized with its box. */
function OutcomePlot({ data, outcomes, label }: { data: KeyAnalytics; outcomes: ReturnType<typeof seenOutcomes>; label: string }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = box.current;
    if (element === null) return undefined;
    const width = (): number => Math.max(240, element.clientWidth);
    const xs = data.series.map((point) => Date.parse(point.at) / 1000);
    const plot = new uPlot(
      {
        width: width(),
        height: 220,
        // Buckets are UTC, and so are the axis's labels.
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
        legend: { show: false },
        cursor: { drag: { x: false, y: false } },
        scales: { y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
        series: [{}, ...outcomes.map(({ label: name, color }) => ({ label: name, stroke: color, width: 2, points: { show: data.series.length <= 60 } }))],
        axes: [{}, { size: 56 }],
      },
      [xs, ...outcomes.map(({ key }) => data.series.map((point) => point[key]))],
      element,
    );
    const resize = new ResizeObserver(() => plot.setSize({ width: width(), height: 220 }));
    resize.observe(element);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [data, outcomes.map(({ key }) => key).join()]);
  return html`<div class="outcome-plot" ref=${box} role="img" aria-label=${label} data-testid="outcome-plot"></div>`;
}

/** The chart with its range switch, totals, legend and table; `load` asks the server for one range. */
export function OutcomeChart({ load, title = 'Answers by outcome' }: { load: (range: AnalyticsRange) => Promise<KeyAnalytics>; title?: string }) {
  const [range, setRange] = useState<AnalyticsRange>('24h');
  const analytics = useLoad(() => load(range), [range]);
  const headingId = useId('outcomes');
  const data = analytics.data;
  const totals = data === undefined ? null : totalsOf(data.series);
  const outcomes = totals === null ? [] : seenOutcomes(totals);
  const rangeLabel = RANGES.find((entry) => entry.range === range)?.label ?? range;
  const line = totals === null ? '' : outcomes.map(({ key, label }) => `${formatNumber(totals[key])} ${label.toLowerCase()}`).join(', ');
  const rows = data === undefined ? [] : data.series.filter((point) => outcomes.some(({ key }) => point[key] > 0));
  return html`<figure class="chart outcome-chart" data-testid="key-analytics" aria-labelledby=${headingId}>
    <div class="outcomes-head">
      <figcaption id=${headingId}><strong>${title}</strong> <span class="hint">(last ${rangeLabel}, UTC)</span></figcaption>
      <div class="range-switch" role="group" aria-label="Range">
        ${RANGES.map(
          (entry) => html`<button type="button" aria-pressed=${entry.range === range ? 'true' : 'false'} onClick=${() => setRange(entry.range)}>${entry.label}</button>`,
        )}
      </div>
    </div>
    <${ErrorMessage} error=${analytics.error} />
    ${data === undefined
      ? analytics.loading
        ? html`<${Loading} label="Loading analytics…" />`
        : null
      : html`<p class="usage-line" data-testid="outcome-totals">${line}</p>
          <p class="hint" data-testid="last-used">
            Last used: ${data.last_used_at === null ? 'never' : `${formatDateTime(data.last_used_at)}${data.last_used_ip === null ? '' : ` from ${data.last_used_ip}`}`}
          </p>
          <ul class="outcome-legend" aria-hidden="true">
            ${outcomes.map(({ key, label, color }) => html`<li key=${key}><span class="swatch" style=${{ background: color }}></span>${label}</li>`)}
          </ul>
          <${OutcomePlot} data=${data} outcomes=${outcomes} label=${`${title}, last ${rangeLabel}: ${line}.`} />
          <details>
            <summary>Figures per ${data.granularity}</summary>
            ${rows.length === 0
              ? html`<p class="hint" data-testid="no-outcomes">No answers in this range.</p>`
              : html`<div class="outcome-table-wrap">
                  <table data-testid="outcome-table">
                    <caption class="sr-only">${title} per ${data.granularity}, last ${rangeLabel}</caption>
                    <thead>
                      <tr>
                        <th scope="col">${data.granularity === 'day' ? 'Day' : 'Time (UTC)'}</th>
                        ${outcomes.map(({ label }) => html`<th scope="col">${label}</th>`)}
                      </tr>
                    </thead>
                    <tbody>
                      ${rows.map(
                        (point) => html`<tr>
                          <th scope="row">${bucketLabel(point.at, data.granularity)}</th>
                          ${outcomes.map(({ key }) => html`<td>${formatNumber(point[key])}</td>`)}
                        </tr>`,
                      )}
                    </tbody>
                  </table>
                </div>`}
          </details>`}
  </figure>`;
}
