// Developers: what an operator needs to integrate their API with Tollgate. The page is a list of sections, each its
// own component; add a section by adding it to SECTIONS. Today: verifier tokens (verifier-tokens.ts), the SDK quick
// start (quick-start.ts), webhook endpoints (create with the secret shown once, edit events, switch on/off, rotate the
// secret, delete, send a test) and their deliveries (status, attempts with each attempt's status code and duration,
// retry).
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { call } from '../lib/api.ts';
import { formatDateTime } from '../lib/format.ts';
import { announce, Badge, Button, Checkbox, Confirm, ErrorMessage, Field, FormError, Loading, Notice, Pager, useAction, useLoad } from '../lib/ui.ts';
import { WEBHOOK_EVENT_TYPES } from '../../../src/modules/webhook/event-types.ts';
import type { AttemptRecord, DeliveryRecord, WebhookRecord } from '../lib/types.ts';
import { createStore, useStore } from '../lib/store.ts';
import { DataTable, filled } from './common.ts';
import { QuickStartSection } from './quick-start.ts';
import { useRowActions } from './row-actions.ts';
import { SecretOnce } from './secret-once.ts';
import { VerifierTokensSection } from './verifier-tokens.ts';
import { PortalSection } from './portal-settings.ts';

/** Bumped whenever something queues deliveries, so the delivery log reloads. */
const deliveriesChanged = createStore(0);
const bumpDeliveries = (): void => deliveriesChanged.set(deliveriesChanged.get() + 1);

/** Event choice: "all events" or a set of types. */
function EventPicker({ value, onChange, legend }: { value: string[]; onChange: (events: string[]) => void; legend: string }) {
  const all = value.includes('*');
  const toggle = (type: string, on: boolean): void => onChange(on ? [...value.filter((v) => v !== '*'), type] : value.filter((v) => v !== type));
  return html`<fieldset class="events">
    <legend>${legend}</legend>
    <${Checkbox} label="All events (including ones added later)" checked=${all} onChange=${(on: boolean) => onChange(on ? ['*'] : [])} />
    ${all
      ? null
      : WEBHOOK_EVENT_TYPES.map((type) => html`<${Checkbox} label=${type} name="events" checked=${value.includes(type)} onChange=${(on: boolean) => toggle(type, on)} />`)}
  </fieldset>`;
}

/** The webhook signing secret, shown once. */
const SigningSecret = ({ secret, onDone }: { secret: string; onDone: () => void }) =>
  html`<${SecretOnce} secret=${secret} what="The signing secret" again="rotate it to get a new one" onDone=${onDone} />`;

function CreateEndpoint({ onCreated }: { onCreated: () => void }) {
  const [url, setUrl] = useState('');
  const [description, setDescription] = useState('');
  const [events, setEvents] = useState<string[]>(['*']);
  const [secret, setSecret] = useState<string | null>(null);
  const action = useAction();
  const submit = (event: Event): void => {
    event.preventDefault();
    void action.run(async () => {
      const created = await call('admin/webhook/create', { url, events, ...filled({ description }) });
      setSecret(created.secret);
      setUrl('');
      setDescription('');
      announce(`Endpoint #${created.id} added`);
      onCreated();
    });
  };
  return html`<form class="card" onSubmit=${submit} aria-labelledby="webhook-create">
    <h3 id="webhook-create">Add an endpoint</h3>
    <${Field} label="URL" name="url" type="url" required value=${url} onInput=${setUrl} error=${action.error} hint="An http(s) address of your server that accepts POST requests" />
    <${Field} label="Description" name="description" value=${description} onInput=${setDescription} error=${action.error} />
    <${EventPicker} legend="Events" value=${events} onChange=${setEvents} />
    <${FormError} error=${action.error} fields=${['url', 'description']} />
    <div class="actions"><${Button} type="submit" variant="primary" busy=${action.busy}>Add endpoint<//></div>
    ${secret !== null ? html`<${SigningSecret} secret=${secret} onDone=${() => setSecret(null)} />` : null}
  </form>`;
}

function EditEndpoint({ endpoint, onChanged, onClose }: { endpoint: WebhookRecord; onChanged: () => void; onClose: () => void }) {
  const [url, setUrl] = useState(endpoint.url);
  const [description, setDescription] = useState(endpoint.description ?? '');
  const [events, setEvents] = useState<string[]>(endpoint.events);
  const action = useAction();
  const submit = (event: Event): void => {
    event.preventDefault();
    void action.run(async () => {
      await call('admin/webhook/update', { id: endpoint.id, url, events, description: description === '' ? null : description });
      announce('Endpoint saved');
      onChanged();
      onClose();
    });
  };
  return html`<form class="card" onSubmit=${submit} aria-labelledby=${`webhook-edit-${endpoint.id}`}>
    <h3 id=${`webhook-edit-${endpoint.id}`}>Edit endpoint #${endpoint.id}</h3>
    <${Field} label="URL" name="url" type="url" required value=${url} onInput=${setUrl} error=${action.error} />
    <${Field} label="Description" name="description" value=${description} onInput=${setDescription} error=${action.error} />
    <${EventPicker} legend="Events" value=${events} onChange=${setEvents} />
    <${FormError} error=${action.error} fields=${['url', 'description']} />
    <div class="actions">
      <${Button} type="submit" variant="primary" busy=${action.busy}>Save<//>
      <button type="button" onClick=${onClose}>Cancel</button>
    </div>
  </form>`;
}

function EndpointsSection() {
  const [page, setPage] = useState(1);
  const endpoints = useLoad(() => call('admin/webhook/get_list', { page, per_page: 25 }), [page]);
  const [editing, setEditing] = useState<WebhookRecord | null>(null);
  const [deleting, setDeleting] = useState<number | null>(null);
  const [secret, setSecret] = useState<string | null>(null);
  const { working, message, setMessage, error, act } = useRowActions();
  const rotate = (endpoint: WebhookRecord): void =>
    act(`rotate-${endpoint.id}`, async () => {
      const rotated = await call('admin/webhook/rotate_secret', { id: endpoint.id });
      setSecret(rotated.secret);
      announce('New secret issued');
    });
  const test = (endpoint: WebhookRecord): void =>
    act(`test-${endpoint.id}`, async () => {
      const id = await call('admin/webhook/send_test', { id: endpoint.id });
      setMessage(`Test delivery #${id} queued for endpoint #${endpoint.id}; the deliveries below show how it went.`);
      bumpDeliveries();
    });
  const toggle = (endpoint: WebhookRecord): void =>
    act(`toggle-${endpoint.id}`, async () => {
      await call('admin/webhook/update', { id: endpoint.id, enabled: !endpoint.enabled });
      setMessage(endpoint.enabled ? `Endpoint #${endpoint.id} switched off.` : `Endpoint #${endpoint.id} switched on.`);
      endpoints.reload();
    });
  const remove = (id: number): void =>
    act(`delete-${id}`, async () => {
      await call('admin/webhook/delete', { id });
      setDeleting(null);
      setMessage(`Endpoint #${id} deleted.`);
      endpoints.reload();
    });
  return html`<section aria-labelledby="webhooks-heading">
    <h2 id="webhooks-heading">Webhook endpoints</h2>
    <p>
      Tollgate POSTs <code>{"type", "timestamp", "data"}</code> to each endpoint for the events it subscribed to, signed per Standard Webhooks
      (headers <code>webhook-id</code>, <code>webhook-timestamp</code>, <code>webhook-signature</code>). Any answer but 2xx is retried after 5 s,
      5 min, 30 min, 2 h, 5 h, 10 h and 10 h; an answer of 410 switches the endpoint off.
    </p>
    <${CreateEndpoint} onCreated=${() => endpoints.reload()} />
    <${ErrorMessage} error=${error} />
    <${ErrorMessage} error=${endpoints.error} />
    <${Notice}>${message}<//>
    ${secret !== null ? html`<${SigningSecret} secret=${secret} onDone=${() => setSecret(null)} />` : null}
    ${editing !== null
      ? html`<${EditEndpoint} key=${editing.id} endpoint=${editing} onChanged=${() => endpoints.reload()} onClose=${() => setEditing(null)} />`
      : null}
    ${endpoints.data
      ? html`<${DataTable}
          caption="Webhook endpoints"
          busy=${endpoints.loading}
          rows=${endpoints.data.list}
          columns=${[
            ['#', (e: WebhookRecord) => e.id],
            ['URL', (e: WebhookRecord) => html`<code>${e.url}</code>${e.description ? html`<br /><small>${e.description}</small>` : null}`],
            ['Events', (e: WebhookRecord) => (e.events.includes('*') ? 'All events' : e.events.join(', '))],
            ['Status', (e: WebhookRecord) => html`<${Badge} status=${e.enabled ? 'enabled' : 'disabled'} />${e.disabled_reason ? html`<br /><small>${e.disabled_reason}</small>` : null}`],
            [
              'Actions',
              (e: WebhookRecord) =>
                deleting === e.id
                  ? html`<${Confirm}
                      question=${`Delete endpoint #${e.id}? Pending deliveries to it are dropped.`}
                      confirmLabel="Delete"
                      busy=${working === `delete-${e.id}`}
                      onConfirm=${() => remove(e.id)}
                      onCancel=${() => setDeleting(null)}
                    />`
                  : html`<div class="row">
                      <${Button} label=${`Edit endpoint ${e.id}`} onClick=${() => setEditing(e)}>Edit<//>
                      <${Button} label=${`${e.enabled ? 'Switch off' : 'Switch on'} endpoint ${e.id}`} busy=${working === `toggle-${e.id}`} onClick=${() => toggle(e)}>${e.enabled ? 'Switch off' : 'Switch on'}<//>
                      <${Button} label=${`Send a test to endpoint ${e.id}`} busy=${working === `test-${e.id}`} disabled=${!e.enabled} onClick=${() => test(e)}>Send test<//>
                      <${Button} label=${`Rotate the secret of endpoint ${e.id}`} busy=${working === `rotate-${e.id}`} onClick=${() => rotate(e)}>Rotate secret<//>
                      <${Button} label=${`Delete endpoint ${e.id}`} variant="danger" onClick=${() => setDeleting(e.id)}>Delete<//>
                    </div>`,
            ],
          ]}
        />`
      : endpoints.loading
        ? html`<${Loading} />`
        : null}
    <${Pager} page=${endpoints.data} onPage=${setPage} label="Endpoint pages" />
  </section>`;
}

const DELIVERY_STATUS = [
  ['', 'Any status'],
  ['pending', 'Pending (waiting or retrying)'],
  ['delivered', 'Delivered'],
  ['failed', 'Failed'],
] as const;

function Attempts({ id }: { id: number }) {
  const detail = useLoad(() => call('admin/webhook/delivery_get', { id }), [id]);
  if (detail.error) return html`<${ErrorMessage} error=${detail.error} />`;
  if (detail.data === undefined) return html`<${Loading} />`;
  return html`<div class="card">
    <h3>Delivery #${id} · <code>${detail.data.message_id}</code></h3>
    <${DataTable}
      caption=${`Attempts of delivery ${id}`}
      rows=${detail.data.attempt_log}
      columns=${[
        ['When', (a: AttemptRecord) => formatDateTime(a.created_at)],
        ['Status code', (a: AttemptRecord) => a.status_code ?? '—', 'num'],
        ['Duration', (a: AttemptRecord) => `${a.duration_ms} ms`, 'num'],
        ['Error', (a: AttemptRecord) => a.error ?? '—'],
      ]}
    />
    <details><summary>Body</summary><pre>${detail.data.body}</pre></details>
  </div>`;
}

function DeliveriesSection() {
  const changed = useStore(deliveriesChanged);
  const [status, setStatus] = useState('');
  const [webhookId, setWebhookId] = useState('');
  const [applied, setApplied] = useState({ status, webhookId });
  const [page, setPage] = useState(1);
  const [open, setOpen] = useState<number | null>(null);
  const deliveries = useLoad(
    () =>
      call('admin/webhook/delivery_get_list', {
        ...filled({ status: applied.status, webhook_id: applied.webhookId === '' ? undefined : Number(applied.webhookId) }),
        page,
        per_page: 25,
      }),
    [applied, page, changed],
  );
  const retry = useAction();
  const [retrying, setRetrying] = useState<number | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  const again = (delivery: DeliveryRecord): void => {
    setRetrying(delivery.id);
    setMessage(null);
    void retry
      .run(async () => {
        await call('admin/webhook/delivery_retry', { id: delivery.id });
        setMessage(`Delivery #${delivery.id} queued again.`);
        deliveries.reload();
      })
      .finally(() => setRetrying(null));
  };
  return html`<section aria-labelledby="deliveries-heading">
    <h2 id="deliveries-heading">Webhook deliveries</h2>
    <form
      class="card row"
      role="search"
      aria-label="Filter deliveries"
      onSubmit=${(event: Event) => {
        event.preventDefault();
        setPage(1);
        setApplied({ status, webhookId });
      }}
    >
      <${Field} label="Status" name="status" value=${status} onInput=${setStatus} options=${DELIVERY_STATUS} error=${deliveries.error} />
      <${Field} label="Endpoint id" name="webhook_id" value=${webhookId} onInput=${setWebhookId} inputmode="numeric" error=${deliveries.error} />
      <${Button} type="submit" busy=${deliveries.loading}>Filter<//>
      <${Button} onClick=${() => deliveries.reload()}>Refresh<//>
    </form>
    <${FormError} error=${deliveries.error} fields=${['status', 'webhook_id']} />
    <${ErrorMessage} error=${retry.error} />
    <${Notice}>${message}<//>
    ${deliveries.data
      ? html`<${DataTable}
          caption="Webhook deliveries"
          busy=${deliveries.loading}
          rows=${deliveries.data.list}
          columns=${[
            ['#', (d: DeliveryRecord) => html`<button type="button" class="link" aria-expanded=${open === d.id ? 'true' : 'false'} onClick=${() => setOpen(open === d.id ? null : d.id)}>${d.id}</button>`],
            ['Queued', (d: DeliveryRecord) => formatDateTime(d.created_at)],
            ['Event', (d: DeliveryRecord) => d.event_type],
            ['Endpoint', (d: DeliveryRecord) => `#${d.webhook_id}`],
            [
              'Status',
              (d: DeliveryRecord) =>
                html`<${Badge} status=${d.status} />${d.status === 'pending' && d.attempts > 0 ? html` <small>retry ${formatDateTime(d.next_attempt_at)}</small>` : null}`,
            ],
            ['Attempts', (d: DeliveryRecord) => d.attempts, 'num'],
            ['Last answer', (d: DeliveryRecord) => (d.last_status_code !== null ? `HTTP ${d.last_status_code}` : (d.last_error ?? '—'))],
            [
              'Actions',
              (d: DeliveryRecord) =>
                d.status === 'pending'
                  ? null
                  : html`<${Button} busy=${retrying === d.id} onClick=${() => again(d)} label=${`Retry delivery ${d.id}`}>Retry<//>`,
            ],
          ]}
        />`
      : deliveries.loading
        ? html`<${Loading} />`
        : null}
    <${Pager} page=${deliveries.data} onPage=${setPage} label="Delivery pages" />
    ${open !== null ? html`<${Attempts} key=${open} id=${open} />` : null}
  </section>`;
}

/** The page's sections, in order. */
const SECTIONS = [VerifierTokensSection, QuickStartSection, PortalSection, EndpointsSection, DeliveriesSection] as const;

export function DevelopersPage() {
  return html`<h1>Developers</h1>
    ${SECTIONS.map((Section) => html`<${Section} />`)}`;
}
