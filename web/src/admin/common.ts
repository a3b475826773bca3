// Admin panel helpers: its shared state, a data table and the list-page skeleton.
import { html } from 'htm/preact';
import type { ComponentChildren, VNode } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { call, readCookie } from '../lib/api.ts';
import { Link } from '../lib/router.ts';
import { createStore } from '../lib/store.ts';
import type { StaffRecord } from '../lib/types.ts';

/** The logged-in staff member (null = logged out, undefined = not known yet). */
export const staff = createStore<StaffRecord | null | undefined>(undefined);
export const loginReason = createStore<string | null>(null);

export async function refreshStaff(): Promise<StaffRecord> {
  const record = await call('admin/profile/get');
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

/** What a list row knows of its client: the id, and the e-mail and name when the list carries them. */
export interface ClientRef {
  id: number | null;
  email?: string | null | undefined;
  name?: string | null | undefined;
}

// Lists that carry only a client id (transactions) read the client once per page load; the promise is shared by
// every row naming the same client.
const clientCache = new Map<number, Promise<{ email: string; name: string } | null>>();

function loadClient(id: number): Promise<{ email: string; name: string } | null> {
  let found = clientCache.get(id);
  if (found === undefined) {
    found = call('admin/client/get', { id }).then(
      (client) => ({ email: client.email, name: [client.first_name, client.last_name].filter((part) => part).join(' ') }),
      // A deleted client, or staff without client.view: the row falls back to the id.
      () => null,
    );
    clientCache.set(id, found);
  }
  return found;
}

/** A client as people know them: the name linked to the client's page, the e-mail under it. */
export function ClientCell({ client }: { client: ClientRef }): VNode {
  const [known, setKnown] = useState<{ email: string; name: string } | null>(null);
  const id = client.id;
  const given = client.email !== undefined && client.email !== null;
  useEffect(() => {
    let live = true;
    if (!given && id !== null) void loadClient(id).then((found) => live && setKnown(found));
    return () => {
      live = false;
    };
  }, [id, given]);
  if (id === null) return html`<span>—</span>`;
  const email = given ? client.email : known?.email;
  const name = (given ? client.name : known?.name) || email;
  return html`<span class="client-cell"><${Link} href=${`/admin/clients/${id}`}>${name ?? `Client #${id}`}<//>${email && email !== name ? html`<small>${email}</small>` : null}</span>`;
}

/**
 * "Download CSV": a form posting the list's filters and the session's CSRF token to the export route, so the
 * browser saves the streamed file itself (nothing held in the page) and the token never appears in a URL.
 */
export function ExportButton({ kind, filters }: { kind: 'clients' | 'orders' | 'invoices' | 'transactions' | 'activity'; filters: Record<string, string | number | undefined | null> }): VNode {
  const fields = filled(filters);
  return html`<form class="inline-export" method="post" action=${`/api/admin/export/${kind}.csv`} aria-label=${`Export ${kind}`}>
    <input type="hidden" name="CSRFToken" value=${readCookie('csrf_token')} />
    ${Object.entries(fields).map(([name, value]) => html`<input type="hidden" name=${name} value=${String(value)} />`)}
    <button type="submit">Download CSV</button>
  </form>`;
}
