// The client's API keys, one card per order: the order's validity with its reason, plan parameters and the usage of
// the current period against the monthly limit (shared by the order's keys), and each key with its name: show, copy,
// rename, reset (confirmed, optionally keeping the old key working for a while) and delete; "Add a key" up to the
// plan's allowance (CONTRACT §12).
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { call } from '../lib/api.ts';
import { formatDate, formatDateTime, formatValue, humanize, REASON_LABELS, trialBadge } from '../lib/format.ts';
import { Link } from '../lib/router.ts';
import { announce, Badge, Button, Confirm, DefinitionList, ErrorMessage, Field, Loading, Notice, UsageChart, copyText, useAction, useLoad } from '../lib/ui.ts';
import { currentPeriod, type ApiKey, type KeyInfo } from '../lib/types.ts';
import { UsageLine } from '../lib/usage-summary.ts';
import { MeterCharts } from '../lib/meter-charts.ts';
import { OutcomeChart } from '../lib/outcome-chart.ts';
import { UsageAlerts } from './usage-alerts.ts';
import { useInPortal, usePortalAllows } from './portal-state.ts';

/** The monthly limit named by the key's custom parameters, or null. */
export function monthlyLimit(config: Record<string, unknown> | null | undefined): number | null {
  const value = config?.monthlyLimit ?? config?.monthly_limit;
  const number = typeof value === 'string' ? Number(value) : value;
  return typeof number === 'number' && Number.isFinite(number) ? number : null;
}

function maskKey(key: string): string {
  return key.replace(/[0-9A-Za-z]/g, (char, index: number) => (index < 4 ? char : '•'));
}

/** "Keep the old key working for …" choices of a reset, in seconds (0: the old key stops at once). */
const GRACE_CHOICES: ReadonlyArray<readonly [string, string]> = [
  ['0', 'No: stop it at once'],
  ['3600', '1 hour'],
  ['86400', '1 day'],
  ['604800', '7 days'],
];

function keyLabel(apiKey: ApiKey): string {
  return apiKey.name ?? `Key #${apiKey.id}`;
}

function KeyRow({ apiKey, canDelete, onChanged }: { apiKey: ApiKey; canDelete: boolean; onChanged: () => void }) {
  const [shown, setShown] = useState(false);
  const [copied, setCopied] = useState<string | null>(null);
  const [mode, setMode] = useState<'idle' | 'reset' | 'delete' | 'rename'>('idle');
  const [grace, setGrace] = useState('0');
  const [name, setName] = useState(apiKey.name ?? '');
  const [notice, setNotice] = useState<string | null>(null);
  const action = useAction();
  const key = apiKey.api_key;
  // The customer portal's `keys` scope reads and resets keys; naming and deleting stay in the client area.
  const inPortal = useInPortal();

  const copy = async (): Promise<void> => {
    if (await copyText(key)) {
      setCopied('Copied the key to the clipboard.');
      announce('Copied the key to the clipboard.');
    } else {
      setShown(true);
      setCopied('Copying is not available here: select the key and press Ctrl+C.');
    }
  };
  const cancel = (): void => {
    setMode('idle');
    action.clear();
  };
  const doReset = (): void => {
    void action.run(async () => {
      const seconds = Number(grace);
      await call('client/serviceapikey/reset', { id: apiKey.id, grace_seconds: seconds });
      setMode('idle');
      setShown(true);
      const kept = GRACE_CHOICES.find(([value]) => value === grace)?.[1];
      setNotice(seconds === 0 ? 'A new key was issued. The old key no longer works.' : `A new key was issued. The old key keeps working for ${kept}.`);
      onChanged();
    });
  };
  const doDelete = (): void => {
    void action.run(async () => {
      await call('client/serviceapikey/delete', { id: apiKey.id });
      announce('The key was deleted.');
      onChanged();
    });
  };
  const doRename = (event: Event): void => {
    event.preventDefault();
    void action.run(async () => {
      await call('client/serviceapikey/rename', { id: apiKey.id, name });
      setMode('idle');
      setNotice('The name was saved.');
      onChanged();
    });
  };

  return html`<li class="key-row" data-testid=${`key-row-${apiKey.id}`}>
    <h4>${keyLabel(apiKey)}</h4>
    <div class="key">
      <span class="sr-only">Key:</span>
      <code data-testid="api-key" aria-label=${shown ? 'API key' : 'API key, hidden'}>${shown ? key : maskKey(key)}</code>
      <button type="button" aria-pressed=${shown ? 'true' : 'false'} onClick=${() => setShown(!shown)}>${shown ? 'Hide key' : 'Show key'}</button>
      <button type="button" onClick=${() => void copy()}>Copy key</button>
    </div>
    ${copied !== null ? html`<p class="hint" role="status">${copied}</p>` : null}
    <p class="hint">Issued ${formatDate(apiKey.created_at)}.${apiKey.rotating_until !== null
        ? html` <strong data-testid="rotating-until">The key it replaced keeps working until ${formatDateTime(apiKey.rotating_until)}.</strong>`
        : null}</p>
    <${Notice}>${notice}<//>
    ${mode === 'idle'
      ? html`<div class="actions">
          ${inPortal ? null : html`<button type="button" onClick=${() => setMode('rename')}>Rename…</button>`}
          <${Button} variant="danger" onClick=${() => setMode('reset')}>Reset key…<//>
          ${canDelete && !inPortal ? html`<${Button} variant="danger" onClick=${() => setMode('delete')}>Delete key…<//>` : null}
        </div>`
      : null}
    ${mode === 'rename'
      ? html`<form class="row" onSubmit=${doRename} aria-label=${`Rename ${keyLabel(apiKey)}`}>
          <${Field} label="Name" name="name" value=${name} onInput=${setName} error=${action.error} hint="Up to 100 characters; leave empty for none." />
          <${Button} type="submit" variant="primary" busy=${action.busy}>Save name<//>
          <button type="button" onClick=${cancel}>Cancel</button>
        </form>`
      : null}
    ${mode === 'reset'
      ? html`<${Field} label="Keep the old key working for" name="grace_seconds" value=${grace} onInput=${setGrace} options=${GRACE_CHOICES} />
          <${Confirm}
            question=${grace === '0'
              ? 'Reset this key? The current key stops working at once, and every application using it must be given the new one.'
              : 'Reset this key? The current key keeps working for the time chosen above, then stops: give your applications the new one before then.'}
            confirmLabel="Reset the key"
            busy=${action.busy}
            onConfirm=${doReset}
            onCancel=${cancel}
          />`
      : null}
    ${mode === 'delete'
      ? html`<${Confirm}
          question="Delete this key? It stops working at once. Its uses still count towards the plan's usage."
          confirmLabel="Delete the key"
          busy=${action.busy}
          onConfirm=${doDelete}
          onCancel=${cancel}
        />`
      : null}
    <${ErrorMessage} error=${action.error} />
  </li>`;
}

function OrderKeys({ orderId, keys, onChanged }: { orderId: number; keys: ApiKey[]; onChanged: () => void }) {
  const order = useLoad(() => call('client/order/get', { id: orderId }), [orderId]);
  // In the customer portal, usage shows with the `usage` scope only, and keys are not added there.
  const showUsage = usePortalAllows('usage');
  const inPortal = useInPortal();
  const usage = useLoad(
    () => (showUsage ? call('client/serviceapikey/usage', { order_id: orderId }) : Promise.resolve(undefined)),
    [orderId, showUsage, keys.map((k) => k.api_key).join()],
  );
  // This period's use against the plan (the order's, over all its keys): used / included, projected extra charge.
  const service = useLoad(() => call('client/order/service', { id: orderId }), [orderId, keys.map((k) => k.api_key).join()]);
  const [serverInfo, setServerInfo] = useState<KeyInfo | null>(null);
  const [newName, setNewName] = useState('');
  const [created, setCreated] = useState<string | null>(null);
  const check = useAction();
  const create = useAction();
  const first = keys[0]!;
  // The list already says why the keys do or do not validate (reading it counts no use); they share the order's state.
  const reason = first.reason;
  const valid = reason === 'VALID';
  const limit = monthlyLimit(first.config);
  const used = usage.data?.total ?? 0;
  const period = currentPeriod();
  const titleId = `key-title-${orderId}`;
  // A refusal to add a key (the plan's allowance) no longer holds once the keys have changed.
  useEffect(() => create.clear(), [keys.length]);
  const custom = Object.entries(first.config ?? {});

  const doCheck = (): void => {
    void check.run(async () => {
      setServerInfo(await call('guest/serviceapikey/get_info', { key: first.api_key }));
      // The check was a use: show the usage with it rather than the figure from before.
      usage.reload();
      service.reload();
    });
  };
  const doCreate = (event: Event): void => {
    event.preventDefault();
    setCreated(null);
    void create.run(async () => {
      const made = await call('client/serviceapikey/create', { order_id: orderId, name: newName });
      setNewName('');
      setCreated(`Added ${made.name ?? `key #${made.id}`}.`);
      onChanged();
    });
  };

  return html`<article class="card" aria-labelledby=${titleId} data-testid=${`key-${orderId}`}>
    <h2 id=${titleId}>${order.data?.title ?? 'API keys'} <small>(order #${orderId})</small></h2>
    <${DefinitionList}
      items=${[
        // One badge, worded for people ("Valid" was shown twice: the badge and the text beside it).
        ['Validity', html`<span data-testid="key-validity"><span class=${`badge badge-${valid ? 'valid' : 'invalid'}`}>${valid ? 'Valid' : 'Not valid'}</span></span>`],
        ['Reason', html`<span data-testid="key-reason">${REASON_LABELS[reason] ?? reason}</span>`],
        [
          'Order status',
          order.data
            ? html`<${Badge} status=${order.data.status} />${trialBadge(order.data) !== null ? html` <span class="badge badge-trial" data-testid="key-trial-badge">${trialBadge(order.data)}</span>` : null}`
            : '…',
        ],
        ['Expires', order.data ? formatDate(order.data.expires_at) : '…'],
      ]}
    />
    <${ErrorMessage} error=${order.error} />
    ${custom.length > 0
      ? html`<h3>Plan parameters</h3>
          <ul class="features">${custom.map(([name, value]) => html`<li>${humanize(name)}: <strong>${formatValue(value)}</strong></li>`)}</ul>`
      : null}
    <h3>${keys.length === 1 ? 'Key' : `Keys (${keys.length})`}</h3>
    <ul class="key-list">
      ${keys.map((apiKey) => html`<${KeyRow} key=${apiKey.id} apiKey=${apiKey} canDelete=${keys.length > 1} onChanged=${onChanged} />`)}
    </ul>
    ${(service.data?.max_keys ?? 1) > 1 && !inPortal
      ? html`<form class="row" onSubmit=${doCreate} aria-label=${`Add a key to order #${orderId}`}>
          <${Field} label="Name of a new key" name="name" value=${newName} onInput=${setNewName} hint="For example the application or environment that will use it." />
          <${Button} type="submit" busy=${create.busy}>Add a key<//>
        </form>`
      : null}
    <${ErrorMessage} error=${create.error} />
    <${Notice}>${created}<//>
    ${showUsage
      ? html`<h3>Usage this period</h3>
          <${UsageLine} usage=${service.data?.usage} currency=${order.data?.currency} />
          <${ErrorMessage} error=${usage.error} />
          ${usage.data === undefined && usage.loading ? html`<${Loading} label="Loading usage…" />` : null}
          ${usage.data !== undefined
            ? html`<${UsageChart} title=${keys.length === 1 ? 'Checks' : 'Checks, all keys'} days=${usage.data.days} total=${used} limit=${limit} from=${period.from} to=${period.to} />
                <${MeterCharts} meters=${usage.data.meters} currency=${order.data?.currency} />`
            : null}
          <${OutcomeChart} title=${keys.length === 1 ? 'Answers by outcome' : 'Answers by outcome, all keys'} load=${(range: '24h' | '30d' | '12m') => call('client/serviceapikey/analytics', { order_id: orderId, range })} />
          ${inPortal ? null : html`<${UsageAlerts} orderId=${orderId} />`}`
      : null}
    <div class="actions">
      <${Button} busy=${check.busy} onClick=${doCheck}>Check with the server<//>
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
  </article>`;
}

export function KeysPage() {
  // Every key of the caller on one page, grouped by order (an order holds at most a plan's max_keys).
  const keys = useLoad(() => call('client/serviceapikey/get_list', { per_page: 500 }), []);
  const byOrder = new Map<number, ApiKey[]>();
  for (const apiKey of keys.data?.list ?? []) {
    const list = byOrder.get(apiKey.order_id) ?? [];
    list.push(apiKey);
    byOrder.set(apiKey.order_id, list);
  }
  // Oldest key first within an order (the list comes newest first).
  for (const list of byOrder.values()) list.reverse();
  return html`<h1>API keys</h1>
    <p>Send your key with each request to the service. Keep it secret; reset it if it leaks.</p>
    <${ErrorMessage} error=${keys.error} />
    ${keys.data === undefined && keys.loading ? html`<${Loading} label="Loading your keys…" />` : null}
    ${keys.data !== undefined && keys.data.list.length === 0
      ? html`<p>You have no API keys yet. A key is issued when a plan's invoice is paid. <${Link} href="/">See the plans<//> or <${Link} href="/invoices">your invoices<//>.</p>`
      : null}
    ${[...byOrder].map(([orderId, list]) => html`<${OrderKeys} key=${orderId} orderId=${orderId} keys=${list} onChanged=${keys.reload} />`)}`;
}
