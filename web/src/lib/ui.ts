// Shared building blocks: loading and action state, error messages next to what caused them, busy buttons, form
// fields with labels, pagination, status badges and the usage chart.
import { html } from 'htm/preact';
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { describeError, fieldOf, type Page } from './api.ts';
import { formatNumber, statusLabel } from './format.ts';

let idCounter = 0;
export function useId(prefix = 'f'): string {
  const ref = useRef<string | null>(null);
  if (ref.current === null) {
    idCounter += 1;
    ref.current = `${prefix}${idCounter}`;
  }
  return ref.current;
}

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => void;
}

/** Runs `load` on mount and whenever `deps` change; keeps the last data while reloading. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean }>({ data: undefined, error: null, loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setState((previous) => ({ ...previous, loading: true }));
    load().then(
      (data) => live && setState({ data, error: null, loading: false }),
      (error: unknown) => live && setState((previous) => ({ data: previous.data, error, loading: false })),
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((value) => value + 1), []);
  return { ...state, reload };
}

export interface Action {
  busy: boolean;
  error: unknown;
  /** Runs `work`, tracking busy state; a failure is kept in `error` (and `undefined` returned). */
  run: <T>(work: () => Promise<T>) => Promise<T | undefined>;
  clear: () => void;
}

export function useAction(): Action {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const run = useCallback(async <T,>(work: () => Promise<T>): Promise<T | undefined> => {
    setBusy(true);
    setError(null);
    try {
      return await work();
    } catch (caught) {
      setError(caught);
      return undefined;
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, run, clear: () => setError(null) };
}

/** An error as a readable message; `role="alert"` so screen readers announce it at once. */
export function ErrorMessage({ error, id }: { error: unknown; id?: string }) {
  if (error === null || error === undefined) return null;
  return html`<p class="error" role="alert" id=${id}>${describeError(error)}</p>`;
}

/** The form's error unless it belongs to one of its fields (then the field shows it). */
export function FormError({ error, fields = [] }: { error: unknown; fields?: string[] }) {
  const field = fieldOf(error);
  if (field !== null && fields.includes(field)) return null;
  return html`<${ErrorMessage} error=${error} />`;
}

export function Notice({ children }: { children: ComponentChildren }) {
  if (children === null || children === undefined || children === '') return null;
  return html`<p class="notice" role="status">${children}</p>`;
}

export function Loading({ label = 'Loading…' }: { label?: string }) {
  return html`<p class="loading" role="status" aria-busy="true">${label}</p>`;
}

/** A real button that shows progress: disabled, aria-busy and "Working…" while `busy`. */
export function Button({
  busy = false,
  disabled = false,
  type = 'button',
  variant,
  onClick,
  children,
  label,
}: {
  busy?: boolean;
  disabled?: boolean;
  type?: 'button' | 'submit';
  variant?: 'primary' | 'danger' | 'link';
  onClick?: () => void;
  children: ComponentChildren;
  label?: string;
}) {
  return html`<button
    type=${type}
    class=${variant ?? ''}
    disabled=${busy || disabled}
    aria-busy=${busy ? 'true' : 'false'}
    aria-label=${label}
    onClick=${onClick}
  >
    ${busy ? 'Working…' : children}
  </button>`;
}

type FieldValue = string | number | boolean;

/** A labelled input; shows the form's error under it when the error names this field. */
export function Field({
  label,
  name,
  value,
  onInput,
  type = 'text',
  error,
  required = false,
  autocomplete,
  hint,
  options,
  min,
  max,
  step,
  inputmode,
  rows,
}: {
  label: string;
  name: string;
  value: FieldValue | null | undefined;
  onInput: (value: string) => void;
  type?: string;
  error?: unknown;
  required?: boolean;
  autocomplete?: string;
  hint?: string;
  options?: readonly (readonly [string, string])[];
  min?: number;
  max?: number;
  step?: string;
  inputmode?: string;
  rows?: number;
}) {
  const id = useId('field-');
  const mine = error !== undefined && fieldOf(error) === name;
  const described = [hint !== undefined ? `${id}-hint` : null, mine ? `${id}-error` : null].filter((x) => x !== null).join(' ') || undefined;
  const common = {
    id,
    name,
    required,
    'aria-invalid': mine ? 'true' : undefined,
    'aria-describedby': described,
  };
  const text = value === null || value === undefined ? '' : String(value);
  const handler = (event: Event): void => onInput((event.currentTarget as HTMLInputElement).value);
  let control;
  if (options !== undefined) {
    control = html`<select ...${common} value=${text} onChange=${handler}>
      ${options.map(([optionValue, optionLabel]) => html`<option value=${optionValue} selected=${optionValue === text}>${optionLabel}</option>`)}
    </select>`;
  } else if (type === 'textarea') {
    control = html`<textarea ...${common} rows=${rows ?? 3} value=${text} onInput=${handler}></textarea>`;
  } else {
    control = html`<input
      ...${common}
      type=${type}
      value=${text}
      onInput=${handler}
      autocomplete=${autocomplete}
      min=${min}
      max=${max}
      step=${step}
      inputmode=${inputmode}
    />`;
  }
  return html`<div class="field">
    <label for=${id}>${label}</label>
    ${control}
    ${hint !== undefined ? html`<small id=${`${id}-hint`} class="hint">${hint}</small>` : null}
    ${mine ? html`<${ErrorMessage} error=${error} id=${`${id}-error`} />` : null}
  </div>`;
}

export function Checkbox({ label, checked, onChange, name }: { label: string; checked: boolean; onChange: (checked: boolean) => void; name?: string }) {
  const id = useId('check-');
  return html`<div class="field checkbox">
    <input id=${id} name=${name} type="checkbox" checked=${checked} onChange=${(event: Event) => onChange((event.currentTarget as HTMLInputElement).checked)} />
    <label for=${id}>${label}</label>
  </div>`;
}

/** Previous/next pagination for a list page. */
export function Pager({ page, onPage, label = 'Pages' }: { page: Page<unknown> | undefined; onPage: (page: number) => void; label?: string }) {
  // One page needs no pager: "Page 1 of 1" only makes people look for more.
  if (page === undefined || page.pages <= 1) return null;
  const pages = page.pages;
  return html`<nav class="pager" aria-label=${label}>
    <button type="button" disabled=${page.page <= 1} onClick=${() => onPage(page.page - 1)}>‹ Previous</button>
    ${page.total_capped === true
      ? html`<span>Page ${page.page} of ${pages} or more · at least ${formatNumber(page.total)}</span>`
      : html`<span>Page ${Math.min(page.page, pages)} of ${pages} · ${formatNumber(page.total)} in total</span>`}
    <button type="button" disabled=${page.page >= pages} onClick=${() => onPage(page.page + 1)}>Next ›</button>
  </nav>`;
}

export function Badge({ status }: { status: string | null | undefined }) {
  return html`<span class=${`badge badge-${status ?? 'none'}`}>${statusLabel(status)}</span>`;
}

/** A confirmation step shown in place: the question, a confirm and a cancel button (focus moves to it). */
export function Confirm({
  question,
  confirmLabel,
  onConfirm,
  onCancel,
  busy,
}: {
  question: string;
  confirmLabel: string;
  onConfirm: () => void;
  onCancel: () => void;
  busy: boolean;
}) {
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    ref.current?.querySelector<HTMLButtonElement>('button')?.focus();
  }, []);
  return html`<div class="confirm" role="group" aria-label="Confirm" ref=${ref}>
    <p>${question}</p>
    <${Button} variant="danger" busy=${busy} onClick=${onConfirm}>${confirmLabel}<//>
    <button type="button" onClick=${onCancel} disabled=${busy}>Cancel</button>
  </div>`;
}

export interface UsageDay {
  date: string;
  count: number;
}

/**
 * Daily usage as an inline SVG bar chart, every day of the range shown (zero days included), with a text summary
 * and a table for screen readers; when `limit` is given, a meter of the period's total against it.
 */
export function UsageChart({ days, total, limit, title, from, to }: { days: UsageDay[]; total: number; limit?: number | null; title: string; from?: string; to?: string }) {
  const series = fillDays(days, from, to);
  // Days with uses, for the table; none gets a sentence instead of an empty table.
  const busy = series.filter((day) => day.count > 0);
  const max = Math.max(1, ...series.map((day) => day.count));
  const width = 600;
  const height = 160;
  const barGap = 2;
  const barWidth = series.length === 0 ? 0 : width / series.length;
  const summary =
    limit !== undefined && limit !== null
      ? `${formatNumber(total)} of ${formatNumber(limit)} used this period (${limit > 0 ? Math.round((total / limit) * 100) : 100}%)`
      : `${formatNumber(total)} ${total === 1 ? 'use' : 'uses'} this period${limit === null ? ' (no monthly limit)' : ''}`;
  const label = `${title}: ${summary}; busiest day ${formatNumber(max === 1 && total === 0 ? 0 : max)}.`;
  return html`<figure class="chart">
    <figcaption>${title}: <strong>${summary}</strong></figcaption>
    ${limit !== undefined && limit !== null
      ? html`<div class="meter" role="meter" aria-valuemin="0" aria-valuemax=${limit} aria-valuenow=${total} aria-label="Used of the monthly limit">
          <div class=${`meter-fill${total >= limit ? ' over' : ''}`} style=${{ width: `${Math.min(100, limit > 0 ? (total / limit) * 100 : 100)}%` }}></div>
        </div>`
      : null}
    <div class="chart-scale" aria-hidden="true">${formatNumber(total === 0 ? 0 : max)} a day at most</div>
    <svg viewBox=${`0 0 ${width} ${height}`} preserveAspectRatio="none" role="img" aria-label=${label} class="bars">
      ${series.map((day, index) => {
        const barHeight = (day.count / max) * (height - 4);
        return html`<rect x=${index * barWidth + barGap / 2} y=${height - barHeight} width=${Math.max(1, barWidth - barGap)} height=${barHeight} class="bar">
          <title>${day.date}: ${formatNumber(day.count)}</title>
        </rect>`;
      })}
      <line x1="0" y1=${height - 0.5} x2=${width} y2=${height - 0.5} class="axis" />
    </svg>
    ${series.length > 0
      ? html`<div class="chart-axis" aria-hidden="true"><span>${series[0]!.date}</span><span>${series[series.length - 1]!.date}</span></div>`
      : null}
    <details>
      <summary>Daily figures</summary>
      ${busy.length === 0
        ? html`<p class="hint" data-testid="no-daily-figures">No uses in this period yet.</p>`
        : html`<table>
            <thead><tr><th scope="col">Day</th><th scope="col">Uses</th></tr></thead>
            <tbody>
              ${busy.map((day) => html`<tr><td>${day.date}</td><td>${formatNumber(day.count)}</td></tr>`)}
            </tbody>
          </table>`}
    </details>
  </figure>`;
}

const DAY_MS = 86_400_000;

/** Every date from `from` to `to` (or the days' own range) with the counts filled in. */
function fillDays(days: UsageDay[], from?: string, to?: string): UsageDay[] {
  const sorted = days.toSorted((a, b) => a.date.localeCompare(b.date));
  const start = (from ?? sorted[0]?.date)?.slice(0, 10);
  const end = (to ?? sorted[sorted.length - 1]?.date)?.slice(0, 10);
  if (start === undefined || end === undefined) return sorted;
  const counts = new Map(sorted.map((day) => [day.date.slice(0, 10), day.count]));
  const out: UsageDay[] = [];
  const first = Date.parse(`${start}T00:00:00Z`);
  const last = Math.min(Date.parse(`${end}T00:00:00Z`), first + 400 * DAY_MS);
  for (let time = first; time <= last; time += DAY_MS) {
    const date = new Date(time).toISOString().slice(0, 10);
    out.push({ date, count: counts.get(date) ?? 0 });
  }
  return out;
}

/** Copies `text`; falls back to selecting it when the clipboard is not available. */
export async function copyText(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    return false;
  }
}

/** Politely announces a message to screen readers through the page's live region. */
export function announce(message: string): void {
  const region = document.getElementById('announcer');
  if (region === null) return;
  region.textContent = '';
  setTimeout(() => {
    region.textContent = message;
  }, 50);
}

export function DefinitionList({ items }: { items: readonly (readonly [string, ComponentChildren])[] }) {
  return html`<dl class="facts">
    ${items.map(([term, value]) => html`<div><dt>${term}</dt><dd>${value}</dd></div>`)}
  </dl>`;
}
