// API keys: the apikey orders with each key's switch, and one key: switch validity, reset, custom parameters, usage.
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { call, type Page } from '../lib/api.ts';
import { formatDateTime, parseValue, REASON_LABELS, valueToText } from '../lib/format.ts';
import { Link, useLocation } from '../lib/router.ts';
import { announce, Badge, Button, Confirm, DefinitionList, ErrorMessage, Field, FormError, Loading, Notice, Pager, UsageChart, useAction, useLoad } from '../lib/ui.ts';
import { currentPeriod, truthy, type ApiKey, type Order, type Usage } from '../lib/types.ts';
import { DataTable, filled } from './common.ts';

function monthlyLimit(config: Record<string, unknown> | null | undefined): number | null {
  const value = config?.monthlyLimit;
  const number = typeof value === 'string' ? Number(value) : value;
  return typeof number === 'number' && Number.isFinite(number) ? number : null;
}

function KeySwitch({ orderId }: { orderId: number }) {
  const key = useLoad(() => call<ApiKey>('admin/serviceapikey/get', { order_id: orderId }), [orderId]);
  if (key.error) return html`<${ErrorMessage} error=${key.error} />`;
  if (key.data === undefined) return html`<span aria-busy="true">…</span>`;
  return html`<${Badge} status=${truthy(key.data.valid) ? 'enabled' : 'disabled'} />`;
}

export function KeysPage() {
  const { query } = useLocation();
  const [status, setStatus] = useState(query.get('status') ?? '');
  const [applied, setApplied] = useState(status);
  const [page, setPage] = useState(1);
  const orders = useLoad(() => call<Page<Order>>('admin/order/get_list', { ...filled({ status: applied }), type: 'apikey', page, per_page: 20 }), [applied, page]);
  return html`<h1>API keys</h1>
    <form
      class="card row"
      role="search"
      aria-label="Filter keys"
      onSubmit=${(event: Event) => {
        event.preventDefault();
        setPage(1);
        setApplied(status);
      }}
    >
      <${Field}
        label="Order status"
        name="status"
        value=${status}
        onInput=${setStatus}
        options=${[['', 'Any status'], ['active', 'Active'], ['suspended', 'Suspended'], ['canceled', 'Canceled'], ['pending_setup', 'Pending setup']]}
        error=${orders.error}
      />
      <${Button} type="submit" busy=${orders.loading}>Filter<//>
    </form>
    <${FormError} error=${orders.error} fields=${['status']} />
    ${orders.data
      ? html`<${DataTable}
          caption="API key orders"
          busy=${orders.loading}
          rows=${orders.data.list}
          columns=${[
            ['Order', (order: Order) => html`<${Link} href=${`/admin/keys/${order.id}`}>Key of order #${order.id}<//>`],
            ['Plan', (order: Order) => order.title],
            ['Client', (order: Order) => html`<${Link} href=${`/admin/clients/${order.client_id}`}>#${order.client_id}<//>`],
            ['Order status', (order: Order) => html`<${Badge} status=${order.status} />`],
            ['Switch', (order: Order) => (order.status === 'pending_setup' ? '—' : html`<${KeySwitch} orderId=${order.id} />`)],
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
  const apiKey = useLoad(() => call<ApiKey>('admin/serviceapikey/get', { order_id: id }), [id]);
  const order = useLoad(() => call<Order>('admin/order/get', { id }), [id]);
  const usage = useLoad(() => call<Usage>('admin/serviceapikey/usage', { order_id: id }), [id]);
  const [confirming, setConfirming] = useState(false);
  const [message, setMessage] = useState<string | null>(null);
  const toggle = useAction();
  const reset = useAction();
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
  const doReset = (): void => {
    setMessage(null);
    void reset.run(async () => {
      await call<string>('admin/serviceapikey/reset', { order_id: id });
      setConfirming(false);
      setMessage('A new key was issued; the old one stopped working.');
      apiKey.reload();
    });
  };
  return html`<h1>API key of order #${id}</h1>
    <p><${Link} href="/admin/keys">All keys<//> · <${Link} href=${`/admin/orders/${id}`}>The order<//></p>
    <${ErrorMessage} error=${apiKey.error} />
    ${data === undefined && apiKey.loading ? html`<${Loading} />` : null}
    ${data !== undefined
      ? html`<section class="card" aria-labelledby="key-summary">
            <h2 id="key-summary">${order.data?.title ?? 'Key'}</h2>
            <div class="key"><span class="sr-only">Key:</span><code data-testid="admin-api-key">${data.api_key}</code></div>
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
              ${!confirming ? html`<button type="button" class="danger" onClick=${() => setConfirming(true)}>Reset the key…</button>` : null}
            </div>
            ${confirming
              ? html`<${Confirm}
                  question="Issue a new key? The current one stops validating at once; the client sees the new key in the client area."
                  confirmLabel="Reset the key"
                  busy=${reset.busy}
                  onCancel=${() => setConfirming(false)}
                  onConfirm=${doReset}
                />`
              : null}
            <${ErrorMessage} error=${toggle.error} />
            <${ErrorMessage} error=${reset.error} />
            <${Notice}>${message}<//>
          </section>
          <section class="card" aria-labelledby="key-usage">
            <h2 id="key-usage">Usage this month</h2>
            <${ErrorMessage} error=${usage.error} />
            ${usage.data
              ? html`<${UsageChart} title="Checks" days=${usage.data.days} total=${usage.data.total} limit=${monthlyLimit(data.config)} from=${period.from} to=${period.to} />`
              : usage.loading
                ? html`<${Loading} />`
                : null}
          </section>
          <${CustomParams} apiKey=${data} onSaved=${apiKey.reload} />`
      : null}`;
}
