// API keys: the apikey orders with their switch and number of keys, and one order's keys: switch validity, each key
// with its name (reset with an optional grace period, delete, add one), custom parameters, usage (CONTRACT §12).
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { call } from '../lib/api.ts';
import { formatDateTime, parseValue, REASON_LABELS, valueToText } from '../lib/format.ts';
import { Link, useLocation } from '../lib/router.ts';
import { announce, Badge, Button, Confirm, DefinitionList, ErrorMessage, Field, FormError, Loading, Notice, Pager, UsageChart, useAction, useLoad } from '../lib/ui.ts';
import { currentPeriod, truthy, type ApiKey, type StaffOrderListItem } from '../lib/types.ts';
import type { ListItem } from '../lib/actions.ts';

type KeyByUse = ListItem<'admin/serviceapikey/get_list'>;
import { DataTable, filled } from './common.ts';
import { UsageLine } from '../lib/usage-summary.ts';
import { MeterCharts } from '../lib/meter-charts.ts';
import { OutcomeChart } from '../lib/outcome-chart.ts';

function monthlyLimit(config: Record<string, unknown> | null | undefined): number | null {
  const value = config?.monthlyLimit;
  const number = typeof value === 'string' ? Number(value) : value;
  return typeof number === 'number' && Number.isFinite(number) ? number : null;
}

/** The latest use of any of the order's keys (the key analytics' last use: any answer, with its address). */
function LastUse({ orderId }: { orderId: number }) {
  const keys = useLoad(() => call('admin/serviceapikey/get_list', { order_id: orderId, sort: 'last_used', per_page: 1 }), [orderId]);
  if (keys.error) return html`<${ErrorMessage} error=${keys.error} />`;
  if (keys.data === undefined) return html`<span aria-busy="true">…</span>`;
  return html`<span data-testid="last-use">${lastUseText(keys.data.list[0])}</span>`;
}

function lastUseText(key: KeyByUse | undefined): string {
  if (key?.last_used_at == null) return 'Never';
  return `${formatDateTime(key.last_used_at)}${key.last_used_ip === null ? '' : ` from ${key.last_used_ip}`}`;
}

function KeySwitch({ orderId }: { orderId: number }) {
  const key = useLoad(() => call('admin/serviceapikey/get', { order_id: orderId }), [orderId]);
  if (key.error) return html`<${ErrorMessage} error=${key.error} />`;
  if (key.data === undefined) return html`<span aria-busy="true">…</span>`;
  const count = key.data.keys.length;
  return html`<${Badge} status=${truthy(key.data.valid) ? 'enabled' : 'disabled'} /> <span data-testid="key-count">${count} key${count === 1 ? '' : 's'}</span>`;
}

/** "Keep the old key working for …" choices of a reset, in seconds. */
const GRACE_CHOICES: ReadonlyArray<readonly [string, string]> = [
  ['0', 'No: stop it at once'],
  ['3600', '1 hour'],
  ['86400', '1 day'],
  ['604800', '7 days'],
];

function OrderKeyRow({ apiKey, canDelete, onChanged }: { apiKey: ApiKey; canDelete: boolean; onChanged: (message: string) => void }) {
  const [mode, setMode] = useState<'idle' | 'reset' | 'delete'>('idle');
  const [grace, setGrace] = useState('0');
  const action = useAction();
  const cancel = (): void => {
    setMode('idle');
    action.clear();
  };
  const doReset = (): void => {
    void action.run(async () => {
      await call('admin/serviceapikey/reset', { id: apiKey.id, grace_seconds: Number(grace) });
      setMode('idle');
      onChanged(grace === '0' ? 'A new key was issued; the old one stopped working.' : 'A new key was issued; the old one keeps working for the time chosen.');
    });
  };
  const doDelete = (): void => {
    void action.run(async () => {
      await call('admin/serviceapikey/delete', { id: apiKey.id });
      onChanged('The key was deleted; it stopped working.');
    });
  };
  return html`<tr data-testid=${`admin-key-row-${apiKey.id}`}>
    <td>${apiKey.name ?? html`<span class="hint">Key #${apiKey.id}</span>`}</td>
    <td><code data-testid="admin-api-key">${apiKey.api_key}</code></td>
    <td>${formatDateTime(apiKey.created_at)}</td>
    <td>${apiKey.rotating_until === null ? '—' : html`The key it replaced works until ${formatDateTime(apiKey.rotating_until)}`}</td>
    <td>
      ${mode === 'idle'
        ? html`<div class="actions">
            <button type="button" class="danger" onClick=${() => setMode('reset')}>Reset…</button>
            ${canDelete ? html`<button type="button" class="danger" onClick=${() => setMode('delete')}>Delete…</button>` : null}
          </div>`
        : null}
      ${mode === 'reset'
        ? html`<${Field} label="Keep the old key working for" name="grace_seconds" value=${grace} onInput=${setGrace} options=${GRACE_CHOICES} />
            <${Confirm} question="Issue a new key? The client sees it in the client area." confirmLabel="Reset the key" busy=${action.busy} onCancel=${cancel} onConfirm=${doReset} />`
        : null}
      ${mode === 'delete'
        ? html`<${Confirm} question="Delete this key? It stops working at once; its uses stay counted." confirmLabel="Delete the key" busy=${action.busy} onCancel=${cancel} onConfirm=${doDelete} />`
        : null}
      <${ErrorMessage} error=${action.error} />
    </td>
  </tr>`;
}

export function KeysPage() {
  const { query } = useLocation();
  const [status, setStatus] = useState(query.get('status') ?? '');
  const [search, setSearch] = useState(query.get('search') ?? '');
  const [sort, setSort] = useState(query.get('sort') === 'last_used' ? 'last_used' : 'order');
  const [applied, setApplied] = useState({ status, search, sort });
  const [page, setPage] = useState(1);
  const byUse = applied.sort === 'last_used';
  // `search` is the orders list's: the client's e-mail or name (and the plan's title). Sorted by last use, the list
  // is of keys (admin/serviceapikey/get_list), filtered by the order's status.
  const orders = useLoad(
    () => (byUse ? Promise.resolve(undefined) : call('admin/order/get_list', { ...filled({ status: applied.status, search: applied.search.trim() }), type: 'apikey', page, per_page: 20 })),
    [applied.status, applied.search, byUse, page],
  );
  const keys = useLoad(
    () => (byUse ? call('admin/serviceapikey/get_list', { ...filled({ status: applied.status }), sort: 'last_used', page, per_page: 20 }) : Promise.resolve(undefined)),
    [applied.status, byUse, page],
  );
  return html`<h1>API keys</h1>
    <form
      class="card row"
      role="search"
      aria-label="Filter keys"
      onSubmit=${(event: Event) => {
        event.preventDefault();
        setPage(1);
        setApplied({ status, search, sort });
      }}
    >
      <${Field} label="Client" name="search" type="search" value=${search} onInput=${setSearch} hint=${sort === 'last_used' ? 'Applies when sorted by newest order' : 'E-mail or name'} />
      <${Field}
        label="Order status"
        name="status"
        value=${status}
        onInput=${setStatus}
        options=${[['', 'Any status'], ['active', 'Active'], ['suspended', 'Suspended'], ['canceled', 'Canceled'], ['pending_setup', 'Pending setup']]}
        error=${orders.error}
      />
      <${Field} label="Sort by" name="sort" value=${sort} onInput=${setSort} options=${[['order', 'Newest order'], ['last_used', 'Last use']]} />
      <${Button} type="submit" busy=${orders.loading || keys.loading}>Filter<//>
    </form>
    <${FormError} error=${orders.error ?? keys.error} fields=${['status', 'search']} />
    ${keys.data
      ? html`<${DataTable}
          caption="API keys by last use"
          busy=${keys.loading}
          rows=${keys.data.list}
          columns=${[
            ['Key', (key: KeyByUse) => html`<${Link} href=${`/admin/keys/${key.order_id}`}>${key.name ?? `Key ${key.id}`} of order #${key.order_id}<//>`],
            ['Plan', (key: KeyByUse) => key.order_title],
            ['Client', (key: KeyByUse) => html`<${Link} href=${`/admin/clients/${key.client_id}`}>${key.client_name || key.client_email}<//>`],
            ['Order status', (key: KeyByUse) => html`<${Badge} status=${key.order_status} />`],
            ['Last use', (key: KeyByUse) => lastUseText(key)],
          ]}
        />
        <${Pager} page=${keys.data} onPage=${setPage} label="Key pages" />`
      : null}
    ${orders.data
      ? html`<${DataTable}
          caption="API key orders"
          busy=${orders.loading}
          rows=${orders.data.list}
          columns=${[
            ['Order', (order: StaffOrderListItem) => html`<${Link} href=${`/admin/keys/${order.id}`}>Key of order #${order.id}<//>`],
            ['Plan', (order: StaffOrderListItem) => order.title],
            ['Client', (order: StaffOrderListItem) => html`<${Link} href=${`/admin/clients/${order.client_id}`}>${order.client_name || order.client_email || `#${order.client_id}`}<//>`],
            ['Order status', (order: StaffOrderListItem) => html`<${Badge} status=${order.status} />`],
            ['Switch and keys', (order: StaffOrderListItem) => (order.status === 'pending_setup' ? '—' : html`<${KeySwitch} orderId=${order.id} />`)],
            ['Last use', (order: StaffOrderListItem) => (order.status === 'pending_setup' ? '—' : html`<${LastUse} orderId=${order.id} />`)],
          ]}
        />`
      : orders.loading
        ? html`<${Loading} />`
        : null}
    <${Pager} page=${orders.data} onPage=${setPage} label="Key pages" />`;
}

function CustomParams({ apiKey, onSaved }: { apiKey: ApiKey; onSaved: () => void }) {
  const [text, setText] = useState('');
  const [saved, setSaved] = useState<string | null>(null);
  const action = useAction();
  useEffect(() => {
    setText(
      Object.entries(apiKey.config ?? {})
        .map(([name, value]) => `${name}=${valueToText(value)}`)
        .join('\n'),
    );
  }, [apiKey.updated_at]);
  const submit = (event: Event): void => {
    event.preventDefault();
    setSaved(null);
    void action.run(async () => {
      const config: Record<string, unknown> = {};
      for (const line of text.split('\n')) {
        const eq = line.indexOf('=');
        if (line.trim() === '') continue;
        if (eq <= 0) throw new Error(`Each line must be name=value: "${line}"`);
        config[line.slice(0, eq).trim()] = parseValue(line.slice(eq + 1));
      }
      await call('admin/serviceapikey/update', { order_id: apiKey.order_id, config });
      setSaved('Saved.');
      onSaved();
    });
  };
  return html`<form class="card" onSubmit=${submit} aria-labelledby="key-params">
    <h2 id="key-params">This key's custom parameters</h2>
    <${Field} label="Parameters, one name=value per line" name="config" type="textarea" rows=${5} value=${text} onInput=${setText} error=${action.error} hint="Values that parse as JSON keep their type (1000, true); others are text. Replaces the key's parameters; the product is not changed." />
    <${FormError} error=${action.error} fields=${['config']} />
    <${Notice}>${saved}<//>
    <${Button} type="submit" variant="primary" busy=${action.busy}>Save parameters<//>
  </form>`;
}

export function KeyPage({ id }: { id: number }) {
  const apiKey = useLoad(() => call('admin/serviceapikey/get', { order_id: id }), [id]);
  const order = useLoad(() => call('admin/order/get', { id }), [id]);
  const usage = useLoad(() => call('admin/serviceapikey/usage', { order_id: id }), [id]);
  // This period's use against the plan (used / included, calls beyond them, projected charge) and the key allowance.
  const service = useLoad(() => call('admin/order/service', { id }), [id]);
  const [message, setMessage] = useState<string | null>(null);
  const toggle = useAction();
  const add = useAction();
  const data = apiKey.data;
  const valid = data !== undefined && truthy(data.valid);
  const period = currentPeriod();
  const switchValidity = (): void => {
    setMessage(null);
    void toggle.run(async () => {
      await call('admin/serviceapikey/update', { order_id: id, valid: !valid });
      setMessage(valid ? 'The key is switched off: it no longer validates.' : 'The key is switched on.');
      announce(valid ? 'Key switched off' : 'Key switched on');
      apiKey.reload();
    });
  };
  const keysChanged = (text: string): void => {
    setMessage(text);
    announce(text);
    apiKey.reload();
    usage.reload();
    service.reload();
  };
  const addKey = (): void => {
    setMessage(null);
    void add.run(async () => {
      await call('admin/serviceapikey/create', { order_id: id });
      keysChanged('A key was added to the order.');
    });
  };
  return html`<h1>API keys of order #${id}</h1>
    <p><${Link} href="/admin/keys">All keys<//> · <${Link} href=${`/admin/orders/${id}`}>The order<//></p>
    <${ErrorMessage} error=${apiKey.error} />
    ${data === undefined && apiKey.loading ? html`<${Loading} />` : null}
    ${data !== undefined
      ? html`<section class="card" aria-labelledby="key-summary">
            <h2 id="key-summary">${order.data?.title ?? 'Key'}</h2>
            <${DefinitionList}
              items=${[
                ['Switch', html`<span data-testid="admin-key-switch"><${Badge} status=${valid ? 'enabled' : 'disabled'} /> ${valid ? 'On' : 'Off'}</span>`],
                ['Validates now', html`<span data-testid="admin-key-reason">${REASON_LABELS[data.reason ?? ''] ?? data.reason ?? '—'}</span>`],
                ['Order status', order.data ? html`<${Badge} status=${order.data.status} />` : '…'],
                ['Expires', order.data ? formatDateTime(order.data.expires_at) : '…'],
                ['Client', html`<${Link} href=${`/admin/clients/${data.client_id ?? order.data?.client_id ?? ''}`}>#${data.client_id ?? order.data?.client_id}<//>`],
                ['Issued', formatDateTime(data.created_at)],
                ['Changed', formatDateTime(data.updated_at)],
              ]}
            />
            <div class="actions">
              <${Button} variant=${valid ? 'danger' : 'primary'} busy=${toggle.busy} onClick=${switchValidity}>${valid ? 'Switch the key off' : 'Switch the key on'}<//>
            </div>
            <${ErrorMessage} error=${toggle.error} />
            <${Notice}>${message}<//>
          </section>
          <section class="card" aria-labelledby="order-keys">
            <h2 id="order-keys">Keys of this order (${data.keys.length})</h2>
            <table>
              <caption class="sr-only">Keys of order #${id}</caption>
              <thead><tr><th scope="col">Name</th><th scope="col">Key</th><th scope="col">Issued</th><th scope="col">Rotation</th><th scope="col">Actions</th></tr></thead>
              <tbody>
                ${data.keys.map((key) => html`<${OrderKeyRow} key=${key.id} apiKey=${key} canDelete=${data.keys.length > 1} onChanged=${keysChanged} />`)}
              </tbody>
            </table>
            ${(service.data?.max_keys ?? 1) > 1
              ? html`<div class="actions"><${Button} busy=${add.busy} onClick=${addKey}>Add a key<//></div>`
              : html`<p class="hint" data-testid="one-key-plan">This plan holds one key: reset it to replace it.</p>`}
            <p class="hint">An order holds as many keys as its plan's max_keys allows; its keys share the switch, the parameters, the quota and the rate limit.</p>
            <${ErrorMessage} error=${add.error} />
          </section>
          <section class="card" aria-labelledby="key-usage">
            <h2 id="key-usage">Usage this period</h2>
            <${UsageLine} usage=${service.data?.usage} currency=${service.data?.currency ?? order.data?.currency} />
            <${ErrorMessage} error=${usage.error} />
            ${usage.data
              ? html`<${UsageChart} title="Checks" days=${usage.data.days} total=${usage.data.total} limit=${monthlyLimit(data.config)} from=${period.from} to=${period.to} />
                  <${MeterCharts} meters=${usage.data.meters} currency=${service.data?.currency ?? order.data?.currency} />`
              : usage.loading
                ? html`<${Loading} />`
                : null}
          </section>
          <section class="card" aria-label="Key analytics">
            <${OutcomeChart} load=${(range: '24h' | '30d' | '12m') => call('admin/serviceapikey/analytics', { order_id: id, range })} />
          </section>
          <${CustomParams} apiKey=${data} onSaved=${apiKey.reload} />`
      : null}`;
}
