// The client's API keys: show, copy, reset (confirmed), validity with its reason, plan parameters and the usage of
// the current period against the monthly limit.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { call, type Page } from '../lib/api.ts';
import { formatDate, formatValue, humanize, REASON_LABELS } from '../lib/format.ts';
import { Link } from '../lib/router.ts';
import { announce, Badge, Button, Confirm, DefinitionList, ErrorMessage, Loading, Notice, Pager, UsageChart, copyText, useAction, useLoad } from '../lib/ui.ts';
import { currentPeriod, type ApiKey, type KeyInfo, type Order, type Usage } from '../lib/types.ts';
import { UsageLine, type UsageSummary } from '../lib/usage-summary.ts';

/** The monthly limit named by the key's custom parameters, or null. */
export function monthlyLimit(config: Record<string, unknown> | null | undefined): number | null {
  const value = config?.monthlyLimit ?? config?.monthly_limit;
  const number = typeof value === 'string' ? Number(value) : value;
  return typeof number === 'number' && Number.isFinite(number) ? number : null;
}

function maskKey(key: string): string {
  return key.replace(/[0-9A-Za-z]/g, (char, index: number) => (index < 4 ? char : '•'));
}

function KeyCard({ apiKey, onChanged }: { apiKey: ApiKey; onChanged: () => void }) {
  const orderId = apiKey.order_id;
  const order = useLoad(() => call<Order>('client/order/get', { id: orderId }), [orderId]);
  const usage = useLoad(() => call<Usage>('client/serviceapikey/usage', { order_id: orderId }), [orderId, apiKey.api_key]);
  // This period's use against the plan: used / included, projected extra charge.
  const service = useLoad(() => call<{ usage: UsageSummary | null }>('client/order/service', { id: orderId }), [orderId, apiKey.api_key]);
  const [shown, setShown] = useState(false);
  const [copied, setCopied] = useState<string | null>(null);
  const [confirming, setConfirming] = useState(false);
  const [notice, setNotice] = useState<string | null>(null);
  const [serverInfo, setServerInfo] = useState<KeyInfo | null>(null);
  const reset = useAction();
  const check = useAction();
  const key = apiKey.api_key;
  // The list already says why the key does or does not validate (reading it counts no use).
  const reason = apiKey.reason;
  const valid = reason === 'VALID';
  const limit = monthlyLimit(apiKey.config);
  const used = usage.data?.total ?? 0;
  const period = currentPeriod();
  const titleId = `key-title-${orderId}`;
  const custom = Object.entries(apiKey.config ?? {});

  const copy = async (): Promise<void> => {
    if (await copyText(key)) {
      setCopied('Copied the key to the clipboard.');
      announce('Copied the key to the clipboard.');
    } else {
      setShown(true);
      setCopied('Copying is not available here: select the key and press Ctrl+C.');
    }
  };
  const doReset = (): void => {
    void reset.run(async () => {
      await call<string>('client/serviceapikey/reset', { order_id: orderId });
      setConfirming(false);
      setShown(true);
      setServerInfo(null);
      setNotice('A new key was issued. The old key no longer works.');
      onChanged();
    });
  };
  const doCheck = (): void => {
    void check.run(async () => setServerInfo(await call<KeyInfo>('guest/serviceapikey/get_info', { key })));
  };

  return html`<article class="card" aria-labelledby=${titleId} data-testid=${`key-${orderId}`}>
    <h2 id=${titleId}>${order.data?.title ?? 'API key'} <small>(order #${orderId})</small></h2>
    <div class="key">
      <span class="sr-only">Key:</span>
      <code data-testid="api-key" aria-label=${shown ? 'API key' : 'API key, hidden'}>${shown ? key : maskKey(key)}</code>
      <button type="button" aria-pressed=${shown ? 'true' : 'false'} onClick=${() => setShown(!shown)}>${shown ? 'Hide key' : 'Show key'}</button>
      <button type="button" onClick=${() => void copy()}>Copy key</button>
    </div>
    ${copied !== null ? html`<p class="hint" role="status">${copied}</p>` : null}
    <${Notice}>${notice}<//>
    <${DefinitionList}
      items=${[
        ['Validity', html`<span data-testid="key-validity"><${Badge} status=${valid ? 'valid' : 'invalid'} /> ${valid ? 'Valid' : 'Not valid'}</span>`],
        ['Reason', html`<span data-testid="key-reason">${REASON_LABELS[reason] ?? reason}</span>`],
        ['Order status', order.data ? html`<${Badge} status=${order.data.status} />` : '…'],
        ['Expires', order.data ? formatDate(order.data.expires_at) : '…'],
        ['Issued', formatDate(apiKey.created_at)],
      ]}
    />
    <${ErrorMessage} error=${order.error} />
    ${custom.length > 0
      ? html`<h3>Plan parameters</h3>
          <ul class="features">${custom.map(([name, value]) => html`<li>${humanize(name)}: <strong>${formatValue(value)}</strong></li>`)}</ul>`
      : null}
    <h3>Usage this period</h3>
    <${UsageLine} usage=${service.data?.usage} currency=${order.data?.currency} />
    <${ErrorMessage} error=${usage.error} />
    ${usage.data === undefined && usage.loading ? html`<${Loading} label="Loading usage…" />` : null}
    ${usage.data !== undefined
      ? html`<${UsageChart} title="Checks" days=${usage.data.days} total=${used} limit=${limit} from=${period.from} to=${period.to} />
          ${limit !== null && used >= limit ? html`<p class="error" role="status">The monthly limit of this key is used up${valid ? '; the plan may refuse further checks until next month' : ''}.</p>` : null}`
      : null}
    <div class="actions">
      <${Button} busy=${check.busy} onClick=${doCheck}>Check with the server<//>
      ${!confirming ? html`<${Button} variant="danger" onClick=${() => setConfirming(true)} disabled=${reset.busy}>Reset key…<//>` : null}
    </div>
    <p class="hint">Checking with the server counts as one use of the key.</p>
    <${ErrorMessage} error=${check.error} />
    ${serverInfo !== null
      ? html`<p role="status" data-testid="server-check">
          The server says: <strong>${serverInfo.valid === 1 ? 'valid' : 'not valid'}</strong>${serverInfo.reason ? ` — ${REASON_LABELS[serverInfo.reason] ?? serverInfo.reason}` : ''}${serverInfo.usage
            ? `; ${serverInfo.usage.used} used${serverInfo.usage.limit !== null ? ` of ${serverInfo.usage.limit}` : ''} this period`
            : ''}.
        </p>`
      : null}
    ${confirming
      ? html`<${Confirm}
          question="Reset this key? The current key stops working at once, and every application using it must be given the new one."
          confirmLabel="Reset the key"
          busy=${reset.busy}
          onConfirm=${doReset}
          onCancel=${() => {
            setConfirming(false);
            reset.clear();
          }}
        />`
      : null}
    <${ErrorMessage} error=${reset.error} />
  </article>`;
}

export function KeysPage() {
  const [page, setPage] = useState(1);
  const keys = useLoad(() => call<Page<ApiKey>>('client/serviceapikey/get_list', { page, per_page: 10 }), [page]);
  return html`<h1>API keys</h1>
    <p>Send your key with each request to the service. Keep it secret; reset it if it leaks.</p>
    <${ErrorMessage} error=${keys.error} />
    ${keys.data === undefined && keys.loading ? html`<${Loading} label="Loading your keys…" />` : null}
    ${keys.data !== undefined && keys.data.list.length === 0
      ? html`<p>You have no API keys yet. A key is issued when a plan's invoice is paid. <${Link} href="/">See the plans<//> or <${Link} href="/invoices">your invoices<//>.</p>`
      : null}
    ${keys.data?.list.map((apiKey) => html`<${KeyCard} key=${apiKey.order_id} apiKey=${apiKey} onChanged=${keys.reload} />`)}
    <${Pager} page=${keys.data} onPage=${setPage} label="Key pages" />`;
}
