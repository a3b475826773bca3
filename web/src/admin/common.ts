// Admin panel helpers: its shared state, a data table and the list-page skeleton.
import { html } from 'htm/preact';
import type { ComponentChildren, VNode } from 'preact';
import { call } from '../lib/api.ts';
import { createStore } from '../lib/store.ts';
import type { StaffRecord } from '../lib/types.ts';

/** The logged-in staff member (null = logged out, undefined = not known yet). */
export const staff = createStore<StaffRecord | null | undefined>(undefined);
export const loginReason = createStore<string | null>(null);

export async function refreshStaff(): Promise<StaffRecord> {
  const record = await call<StaffRecord>('admin/profile/get');
  staff.set(record);
  return record;
}

export type Column<T> = readonly [label: string, render: (row: T) => ComponentChildren, className?: string];

export function DataTable<T>({ caption, columns, rows, busy = false }: { caption: string; columns: readonly Column<T>[]; rows: readonly T[]; busy?: boolean }): VNode {
  return html`<div class="table-wrap" aria-busy=${busy ? 'true' : 'false'}>
    <table>
      <caption class="sr-only">${caption}</caption>
      <thead><tr>${columns.map(([label, , className]) => html`<th scope="col" class=${className}>${label}</th>`)}</tr></thead>
      <tbody>
        ${rows.length === 0
          ? html`<tr><td colspan=${columns.length}>Nothing to show.</td></tr>`
          : rows.map((row) => html`<tr>${columns.map(([, render, className]) => html`<td class=${className}>${render(row)}</td>`)}</tr>`)}
      </tbody>
    </table>
  </div>`;
}

/** Keeps only the parameters that were filled in. */
export function filled(params: Record<string, string | number | undefined | null>): Record<string, string | number> {
  const out: Record<string, string | number> = {};
  for (const [name, value] of Object.entries(params)) if (value !== undefined && value !== null && value !== '') out[name] = value;
  return out;
}
