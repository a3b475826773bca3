// Staff: the audit log (admin/activity/log_get_list, docs/audit-log.md) — who changed what, from which address, and
// each field before → after; filtered by who, what, target and range, paged, and downloadable as CSV.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { call } from '../lib/api.ts';
import { formatDateTime } from '../lib/format.ts';
import { useLocation } from '../lib/router.ts';
import { Button, Field, FormError, Loading, Pager, useLoad } from '../lib/ui.ts';
import type { components } from '../lib/api-schema.ts';
import { ExportButton, filled } from './common.ts';

type Entry = components['schemas']['ActivityEntry'];
type Change = Entry['changes'][number];

const KINDS = [
  ['', 'Anyone'],
  ['staff', 'Staff (browser)'],
  ['api_token', 'API token'],
  ['verifier', 'Verifier token'],
  ['system', 'System (scheduler)'],
  ['guest', 'Refused login'],
] as const;

const TARGETS = [
  ['', 'Any target'],
  ['client', 'Client'],
  ['product', 'Product'],
  ['order', 'Order'],
  ['invoice', 'Invoice'],
  ['api_key', 'API key'],
  ['setting', 'Settings'],
  ['staff', 'Staff member'],
  ['staff_group', 'Staff group'],
  ['verifier', 'Verifier'],
  ['promo', 'Coupon'],
  ['tax', 'Tax'],
  ['credit_pack', 'Credit pack'],
  ['webhook', 'Webhook'],
  ['currency', 'Currency'],
  ['email_template', 'Mail template'],
] as const;

const ACTOR_LABEL: Record<Entry['actor_type'], string> = {
  staff: 'browser',
  api_token: 'API token',
  verifier: 'verifier',
  system: 'scheduler',
  guest: 'refused login',
};

/** A value as one short line: JSON for objects, an em dash for none, cut so one field never fills the screen. */
function shown(value: unknown): string {
  if (value === null || value === undefined || value === '') return '—';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > 120 ? `${text.slice(0, 119)}…` : text;
}

function ChangeLine({ change }: { change: Change }) {
  if ('changed' in change) return html`<li><code>${change.field}</code>: <em>changed</em> <span class="sr-only">(a secret: its value is never logged)</span></li>`;
  return html`<li><code>${change.field}</code>: <span class="before">${shown(change.from)}</span> <span aria-label="changed to">→</span> <span class="after">${shown(change.to)}</span></li>`;
}

/** The first few fields, the rest folded: a new client's every column must not make one row a screen tall. */
const SHOWN_FIELDS = 4;

function Changes({ changes }: { changes: readonly Change[] }) {
  if (changes.length === 0) return '—';
  const lines = (list: readonly Change[]) => html`<ul class="changes">${list.map((change) => html`<${ChangeLine} change=${change} />`)}</ul>`;
  if (changes.length <= SHOWN_FIELDS + 1) return lines(changes);
  return html`${lines(changes.slice(0, SHOWN_FIELDS))}
    <details><summary>${changes.length - SHOWN_FIELDS} more fields</summary>${lines(changes.slice(SHOWN_FIELDS))}</details>`;
}

function Who({ entry }: { entry: Entry }) {
  const name = entry.staff?.name ?? entry.staff?.email ?? (entry.actor_type === 'system' ? 'System' : 'Unknown');
  return html`<span class="client-cell">${name}<small>${ACTOR_LABEL[entry.actor_type]}</small></span>`;
}

function EntriesTable({ rows, busy }: { rows: readonly Entry[]; busy: boolean }) {
  // Focusable and named: on a phone the table scrolls sideways, and keyboard users must be able to scroll it too.
  return html`<div class="table-wrap" tabindex="0" role="region" aria-label="Activity entries" aria-busy=${busy ? 'true' : 'false'} data-testid="activity-table">
    <table class="activity-log">
      <caption class="sr-only">Activity: who changed what, newest first</caption>
      <thead><tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">Address</th><th scope="col">Action</th><th scope="col">Target</th><th scope="col">Changes</th></tr></thead>
      <tbody>
        ${rows.map(
          (entry) => html`<tr class=${entry.priority < 6 ? 'warning' : ''}>
            <td data-label="When">${formatDateTime(entry.created_at)}</td>
            <td data-label="Who"><${Who} entry=${entry} /></td>
            <td data-label="Address">${entry.ip ?? '—'}</td>
            <td data-label="Action"><code>${entry.action}</code>${entry.priority < 6 ? html`<small> ${entry.message}</small>` : null}</td>
            <td data-label="Target">${entry.target_type === null ? '—' : entry.target_id === null ? entry.target_type : `${entry.target_type} #${entry.target_id}`}</td>
            <td data-label="Changes"><${Changes} changes=${entry.changes} /></td>
          </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}

export function ActivityPage() {
  const { query } = useLocation();
  const initial = {
    admin_id: query.get('admin_id') ?? '',
    actor_type: query.get('actor_type') ?? '',
    action: query.get('action') ?? '',
    target_type: query.get('target_type') ?? '',
    target_id: query.get('target_id') ?? '',
    date_from: query.get('date_from') ?? '',
    date_to: query.get('date_to') ?? '',
    search: query.get('search') ?? '',
  };
  const [filters, setFilters] = useState(initial);
  const [applied, setApplied] = useState(initial);
  const [page, setPage] = useState(1);
  // Staff to pick from; a member without staff.manage sees only "Anyone" and can still filter by the other fields.
  const people = useLoad(() => call('admin/staff/get_list', { per_page: 500 }).catch(() => null), []);
  const list = useLoad(() => call('admin/activity/log_get_list', { ...filled(applied), page, per_page: 25 }), [applied, page]);
  const submit = (event: Event): void => {
    event.preventDefault();
    setPage(1);
    setApplied(filters);
  };
  const set = (name: keyof typeof filters) => (value: string) => setFilters({ ...filters, [name]: value });
  const staffOptions: Array<readonly [string, string]> = [['', 'Anyone'], ...(people.data?.list ?? []).map((member) => [String(member.id), member.name || member.email] as const)];
  return html`<h1>Activity</h1>
    <p>Every change made by staff, API tokens and the scheduler, and every staff login. Secrets show only that they changed.</p>
    <form class="card row" role="search" aria-label="Filter activity" onSubmit=${submit}>
      <${Field} label="Staff member" name="admin_id" value=${filters.admin_id} onInput=${set('admin_id')} options=${staffOptions} error=${list.error} />
      <${Field} label="Made by" name="actor_type" value=${filters.actor_type} onInput=${set('actor_type')} options=${KINDS} error=${list.error} />
      <${Field} label="Action" name="action" value=${filters.action} onInput=${set('action')} hint="e.g. admin/product/update, or admin/product/ for all" error=${list.error} />
      <${Field} label="Target" name="target_type" value=${filters.target_type} onInput=${set('target_type')} options=${TARGETS} error=${list.error} />
      <${Field} label="Target id" name="target_id" value=${filters.target_id} onInput=${set('target_id')} error=${list.error} />
      <${Field} label="From" name="date_from" type="date" value=${filters.date_from} onInput=${set('date_from')} error=${list.error} />
      <${Field} label="To" name="date_to" type="date" value=${filters.date_to} onInput=${set('date_to')} error=${list.error} />
      <${Field} label="Search" name="search" value=${filters.search} onInput=${set('search')} error=${list.error} />
      <${Button} type="submit" busy=${list.loading}>Filter<//>
    </form>
    <${FormError} error=${list.error} fields=${Object.keys(initial)} />
    <div class="actions"><${ExportButton} kind="activity" filters=${applied} /></div>
    ${list.data
      ? list.data.list.length === 0
        ? html`<p>No activity matches.</p>`
        : html`<${EntriesTable} rows=${list.data.list} busy=${list.loading} />`
      : list.loading
        ? html`<${Loading} />`
        : null}
    <${Pager} page=${list.data} onPage=${setPage} label="Activity pages" />`;
}
