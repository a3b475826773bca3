// A chart of the dashboard drawn by uPlot (≈50 kB, canvas, maintained; see docs/dashboard.md for why), beside its
// numbers as a table: the canvas is hidden from screen readers (aria-hidden) and the figure's caption and table say
// what it shows, as web/src/lib/meter-charts.ts does for the meter charts. The chart takes its container's width and
// follows it (a phone at 390 px, a laptop at 1280 px).
import { html } from 'htm/preact';
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { useId } from '../lib/ui.ts';

export interface ChartSeries {
  label: string;
  /** One value per label; numbers for drawing only (the table shows the API's exact strings). */
  values: number[];
  /** Shown in the table. */
  texts: string[];
  kind: 'bars' | 'line';
  color: string;
}

const HEIGHT = 220;

function options(width: number, labels: readonly string[], series: readonly ChartSeries[]): uPlot.Options {
  const bars = uPlot.paths.bars?.({ size: [0.6, 48] });
  return {
    width,
    height: HEIGHT,
    scales: { x: { time: false } },
    legend: { show: true, live: false },
    cursor: { show: false },
    axes: [
      { values: (_u, splits) => splits.map((split) => (Number.isInteger(split) ? (labels[split] ?? '') : '')), stroke: '#57606a', grid: { show: false } },
      { stroke: '#57606a', grid: { stroke: '#eaeef2' }, size: 60 },
    ],
    series: [
      {},
      ...series.map((one) => ({
        label: one.label,
        stroke: one.color,
        width: one.kind === 'line' ? 2 : 1,
        ...(one.kind === 'bars' ? { fill: `${one.color}cc`, ...(bars !== undefined && { paths: bars }) } : { points: { show: true, size: 5 } }),
      })),
    ],
  };
}

/** A chart of `series` over `labels` (months, days), with its caption, summary line and table. */
export function DashboardChart({ title, summary, labels, series, testId }: { title: string; summary: string; labels: readonly string[]; series: readonly ChartSeries[]; testId?: string }) {
  const holder = useRef<HTMLDivElement>(null);
  const captionId = useId('chart');
  useEffect(() => {
    const target = holder.current;
    if (target === null) return undefined;
    const data: uPlot.AlignedData = [labels.map((_label, index) => index), ...series.map((one) => one.values)];
    const plot = new uPlot(options(Math.max(240, target.clientWidth), labels, series), data, target);
    const resized = new ResizeObserver(() => plot.setSize({ width: Math.max(240, target.clientWidth), height: HEIGHT }));
    resized.observe(target);
    return () => {
      resized.disconnect();
      plot.destroy();
    };
  }, [labels, series]);
  return html`<figure class="chart dashboard-chart" aria-labelledby=${captionId} data-testid=${testId}>
    <figcaption id=${captionId}><strong>${title}</strong></figcaption>
    <p class="hint">${summary}</p>
    <div class="uplot-holder" ref=${holder} aria-hidden="true"></div>
    <details>
      <summary>Figures: ${title}</summary>
      <div class="table-wrap">
        <table>
          <caption class="sr-only">${title}</caption>
          <thead><tr><th scope="col">Period</th>${series.map((one) => html`<th scope="col" class="num">${one.label}</th>`)}</tr></thead>
          <tbody>
            ${labels.map((label, index) => html`<tr><th scope="row">${label}</th>${series.map((one) => html`<td class="num">${one.texts[index]}</td>`)}</tr>`)}
          </tbody>
        </table>
      </div>
    </details>
  </figure>`;
}
