// Clients: search and paginated list, a new-client form, and one client's details with its orders and invoices.
import { useCountryOptions } from '../lib/countries.ts';
import { html } from 'htm/preact';
import { invoiceTitle } from '../lib/invoice-view.ts';
import { useEffect, useState } from 'preact/hooks';
import { call } from '../lib/api.ts';
import { cancelsAtPeriodEnd, formatDate, formatMoney } from '../lib/format.ts';
import { Link, navigate, useLocation } from '../lib/router.ts';
import { announce, Badge, Button, Confirm, DefinitionList, ErrorMessage, Field, FormError, Loading, Notice, Pager, useAction, useLoad } from '../lib/ui.ts';
import type { ClientRecord, Invoice, StaffOrderListItem } from '../lib/types.ts';
import { ClientCell, DataTable, ExportButton, filled, type Column } from './common.ts';
import { trialNote } from './order-trial.ts';
import { periodLabel, usePeriodLabels } from '../lib/labels.ts';
import { ClientBalance } from './client-balance.ts';
import { ClientVat } from './client-vat.ts';

export const CLIENT_STATUSES = [
  ['', 'Any status'],
  ['active', 'Active'],
  ['suspended', 'Suspended'],
  ['canceled', 'Canceled'],
] as const;

function clientName(client: ClientRecord): string {
  return [client.first_name, client.last_name].filter((part) => part).join(' ');
}

function NewClientForm({ onCreated }: { onCreated: (id: number) => void }) {
  const [form, setForm] = useState<Record<string, string>>({});
  const action = useAction();
  const set = (name: string) => (value: string) => setForm({ ...form, [name]: value });
  const submit = (event: Event): void => {
    event.preventDefault();
    void action.run(async () => {
      const id = await call('admin/client/create', { ...filled(form), email: form.email ?? '', first_name: form.first_name ?? '' });
      onCreated(id);
    });
  };
  const fields = ['email', 'first_name', 'last_name', 'company', 'password'];
  return html`<form class="card" onSubmit=${submit} aria-labelledby="new-client">
    <h2 id="new-client">New client</h2>
    <div class="row">
      <${Field} label="E-mail" name="email" type="email" required value=${form.email} onInput=${set('email')} error=${action.error} />
      <${Field} label="First name" name="first_name" required value=${form.first_name} onInput=${set('first_name')} error=${action.error} />
      <${Field} label="Last name" name="last_name" value=${form.last_name} onInput=${set('last_name')} error=${action.error} />
      <${Field} label="Company" name="company" value=${form.company} onInput=${set('company')} error=${action.error} />
      <${Field} label="Password" name="password" type="password" autocomplete="new-password" value=${form.password} onInput=${set('password')} error=${action.error} hint="Optional: without one the client cannot log in until staff sets it." />
    </div>
    <${FormError} error=${action.error} fields=${fields} />
    <div class="actions"><${Button} type="submit" variant="primary" busy=${action.busy}>Create client<//></div>
  </form>`;
}

export function ClientsPage() {
  const { query } = useLocation();
  const [search, setSearch] = useState(query.get('search') ?? '');
  const [status, setStatus] = useState(query.get('status') ?? '');
  const [applied, setApplied] = useState({ search, status });
  const [page, setPage] = useState(1);
  const [creating, setCreating] = useState(false);
  const clients = useLoad(
    () => call('admin/client/get_list', { ...filled(applied), page, per_page: 25 }),
    [applied.search, applied.status, page],
  );
  const submit = (event: Event): void => {
    event.preventDefault();
    setPage(1);
    setApplied({ search, status });
  };
  return html`<h1>Clients</h1>
    <form class="card row" role="search" onSubmit=${submit} aria-label="Search clients">
      <${Field} label="Search (e-mail, name, company)" name="search" type="search" value=${search} onInput=${setSearch} error=${clients.error} />
      <${Field} label="Status" name="status" value=${status} onInput=${setStatus} options=${CLIENT_STATUSES} error=${clients.error} />
      <${Button} type="submit" variant="primary" busy=${clients.loading}>Search<//>
      <button type="button" aria-expanded=${creating ? 'true' : 'false'} onClick=${() => setCreating(!creating)}>${creating ? 'Close the new-client form' : 'New client…'}</button>
    </form>
    <div class="actions"><${ExportButton} kind="clients" filters=${applied} /></div>
    ${creating ? html`<${NewClientForm} onCreated=${(id: number) => navigate(`/admin/clients/${id}`)} />` : null}
    <${FormError} error=${clients.error} fields=${['search', 'status']} />
    ${clients.data === undefined && clients.loading ? html`<${Loading} />` : null}
    ${clients.data !== undefined
      ? html`<${DataTable}
          caption="Clients"
          busy=${clients.loading}
          rows=${clients.data.list}
          columns=${[
            ['#', (client: ClientRecord) => client.id],
            ['Name', (client: ClientRecord) => html`<${Link} href=${`/admin/clients/${client.id}`}>${clientName(client)}<//>`],
            ['E-mail', (client: ClientRecord) => client.email],
            ['Company', (client: ClientRecord) => client.company ?? '—', 'hide-narrow'],
            ['Status', (client: ClientRecord) => html`<${Badge} status=${client.status} />`],
            ['Since', (client: ClientRecord) => formatDate(client.created_at), 'hide-narrow'],
          ]}
        />`
      : null}
    <${Pager} page=${clients.data} onPage=${setPage} label="Client pages" />`;
}

const EDIT_FIELDS = [
  ['email', 'E-mail'],
  ['first_name', 'First name'],
  ['last_name', 'Last name'],
  ['company', 'Company'],
  ['phone', 'Phone'],
  ['address_1', 'Address'],
  ['address_2', 'Address (line 2)'],
  ['city', 'City'],
  ['state', 'State or region'],
  ['postcode', 'Postcode'],
  ['country', 'Country'],
  ['vat_number', 'VAT number'],
] as const;

function ClientEditForm({ client, onSaved }: { client: ClientRecord; onSaved: () => void }) {
  const [form, setForm] = useState<Record<string, string>>({});
  const [saved, setSaved] = useState<string | null>(null);
  const action = useAction();
  useEffect(() => {
    const values: Record<string, string> = { status: client.status, tax_exempt: client.tax_exempt ? 'true' : 'false' };
    for (const [name] of EDIT_FIELDS) values[name] = client[name] ?? '';
    setForm(values);
  }, [client.updated_at]);
  const countries = useCountryOptions();
  const submit = (event: Event): void => {
    event.preventDefault();
    setSaved(null);
    void action.run(async () => {
      await call('admin/client/update', { id: client.id, ...form });
      setSaved('Saved.');
      onSaved();
    });
  };
  return html`<form class="card" onSubmit=${submit} aria-labelledby="client-edit">
    <h2 id="client-edit">Details</h2>
    <div class="row">
      ${EDIT_FIELDS.map(
        ([name, label]) =>
          html`<${Field}
            label=${label}
            name=${name}
            required=${name === 'email' || name === 'first_name'}
            value=${form[name]}
            onInput=${(value: string) => setForm({ ...form, [name]: value })}
            error=${action.error}
            options=${name === 'country' ? countries : undefined}
          />`,
      )}
      <${Field} label="Tax" name="tax_exempt" value=${form.tax_exempt} onInput=${(value: string) => setForm({ ...form, tax_exempt: value })} options=${[['false', 'Pays tax'], ['true', 'Tax-exempt']]} error=${action.error} />
      <${Field} label="Status" name="status" value=${form.status} onInput=${(value: string) => setForm({ ...form, status: value })} options=${CLIENT_STATUSES.slice(1)} error=${action.error} />
    </div>
    <${FormError} error=${action.error} fields=${[...EDIT_FIELDS.map(([name]) => name), 'status', 'tax_exempt']} />
    <${Notice}>${saved}<//>
    <div class="actions"><${Button} type="submit" variant="primary" busy=${action.busy}>Save<//></div>
  </form>`;
}

function ClientAccount({ client }: { client: ClientRecord }) {
  const [password, setPassword] = useState({ password: '', password_confirm: '' });
  const [message, setMessage] = useState<string | null>(null);
  const [token, setToken] = useState<string | null>(null);
  const [confirm, setConfirm] = useState<'token' | 'delete' | null>(null);
  const passwordAction = useAction();
  const tokenAction = useAction();
  const deleteAction = useAction();
  const changePassword = (event: Event): void => {
    event.preventDefault();
    void passwordAction.run(async () => {
      await call('admin/client/change_password', { id: client.id, ...password });
      setPassword({ password: '', password_confirm: '' });
      setMessage('Password changed.');
    });
  };
  return html`<section class="card" aria-labelledby="client-account">
    <h2 id="client-account">Account</h2>
    <form onSubmit=${changePassword} aria-label="Set the client's password">
      <div class="row">
        <${Field} label="New password" name="password" type="password" autocomplete="new-password" value=${password.password} onInput=${(value: string) => setPassword({ ...password, password: value })} error=${passwordAction.error} />
        <${Field} label="Repeat the password" name="password_confirm" type="password" autocomplete="new-password" value=${password.password_confirm} onInput=${(value: string) => setPassword({ ...password, password_confirm: value })} error=${passwordAction.error} />
      </div>
      <${FormError} error=${passwordAction.error} fields=${['password', 'password_confirm']} />
      <${Button} type="submit" busy=${passwordAction.busy}>Set password<//>
    </form>
    <${Notice}>${message}<//>
    <div class="actions">
      <button type="button" onClick=${() => setConfirm('token')}>Reset the client's API token…</button>
      <button type="button" class="danger" onClick=${() => setConfirm('delete')}>Delete the client…</button>
    </div>
    ${token !== null ? html`<p>New API token: <code>${token}</code></p>` : null}
    ${confirm === 'token'
      ? html`<${Confirm}
          question="Reset this client's API token? Their scripts stop working until they use the new token."
          confirmLabel="Reset the token"
          busy=${tokenAction.busy}
          onCancel=${() => setConfirm(null)}
          onConfirm=${() =>
            void tokenAction.run(async () => {
              setToken(await call('admin/profile/api_key_reset', { id: client.id }));
              setConfirm(null);
              announce('A new API token was issued.');
            })}
        />`
      : null}
    ${confirm === 'delete'
      ? html`<${Confirm}
          question=${`Delete ${client.email} for good?`}
          confirmLabel="Delete the client"
          busy=${deleteAction.busy}
          onCancel=${() => setConfirm(null)}
          onConfirm=${() =>
            void deleteAction.run(async () => {
              await call('admin/client/delete', { id: client.id });
              navigate('/admin/clients');
            })}
        />`
      : null}
    <${ErrorMessage} error=${tokenAction.error} />
    <${ErrorMessage} error=${deleteAction.error} />
  </section>`;
}

/** The client's e-mail and name on list items (admin order and invoice lists carry them; older servers did not). */
type WithClient = { client_email?: string | null; client_name?: string | null };

export function OrdersTable({ orders, busy, showClient = true }: { orders: StaffOrderListItem[]; busy?: boolean; showClient?: boolean }) {
  const labels = usePeriodLabels();
  const columns: Column<StaffOrderListItem & WithClient>[] = [
    ['Order', (order) => html`<${Link} href=${`/admin/orders/${order.id}`}>Order #${order.id}<//>`],
    ['Product', (order) => order.title],
    ['Client', (order) => html`<${ClientCell} client=${{ id: order.client_id, email: order.client_email, name: order.client_name }} />`],
    ['Period', (order) => periodLabel(labels, order.period), 'hide-narrow'],
    ['Price', (order) => formatMoney(order.price, order.currency), 'num'],
    ['Status', (order) => html`<${Badge} status=${order.status} />${cancelsAtPeriodEnd(order) ? html` <small data-testid="cancels-at-period-end">${cancelsAtPeriodEnd(order)}</small>` : null}${trialNote(order) !== null ? html` <small class="badge badge-trial" data-testid="order-trial-note">${trialNote(order)}</small>` : null}`],
    ['Expires', (order) => formatDate(order.expires_at), 'hide-narrow'],
  ];
  return html`<${DataTable} caption="Orders" busy=${busy} rows=${orders} columns=${showClient ? columns : columns.filter(([label]) => label !== 'Client')} />`;
}

export function InvoicesTable({ invoices, busy, showClient = true }: { invoices: Invoice[]; busy?: boolean; showClient?: boolean }) {
  const columns: Column<Invoice & WithClient>[] = [
    ['Invoice', (invoice) => html`<${Link} href=${`/admin/invoices/${invoice.id}`}>${invoiceTitle(invoice)}<//>`],
    ['Client', (invoice) => html`<${ClientCell} client=${{ id: invoice.client_id, email: invoice.client_email, name: invoice.client_name }} />`],
    ['Issued', (invoice) => formatDate(invoice.created_at), 'hide-narrow'],
    ['Total', (invoice) => formatMoney(invoice.total, invoice.currency), 'num'],
    ['Status', (invoice) => html`<${Badge} status=${invoice.status} />`],
    ['Paid', (invoice) => formatDate(invoice.paid_at), 'hide-narrow'],
  ];
  return html`<${DataTable} caption="Invoices" busy=${busy} rows=${invoices} columns=${showClient ? columns : columns.filter(([label]) => label !== 'Client')} />`;
}

function ClientOrders({ clientId }: { clientId: number }) {
  const [page, setPage] = useState(1);
  const orders = useLoad(() => call('admin/order/get_list', { client_id: clientId, page, per_page: 10 }), [clientId, page]);
  return html`<section class="card" aria-labelledby="client-orders">
    <h2 id="client-orders">Orders</h2>
    <${ErrorMessage} error=${orders.error} />
    ${orders.data ? html`<${OrdersTable} orders=${orders.data.list} busy=${orders.loading} showClient=${false} />` : orders.loading ? html`<${Loading} />` : null}
    <${Pager} page=${orders.data} onPage=${setPage} label="Order pages" />
  </section>`;
}

function ClientInvoices({ clientId }: { clientId: number }) {
  const [page, setPage] = useState(1);
  const invoices = useLoad(() => call('admin/invoice/get_list', { client_id: clientId, page, per_page: 10 }), [clientId, page]);
  return html`<section class="card" aria-labelledby="client-invoices">
    <h2 id="client-invoices">Invoices</h2>
    <${ErrorMessage} error=${invoices.error} />
    ${invoices.data ? html`<${InvoicesTable} invoices=${invoices.data.list} busy=${invoices.loading} showClient=${false} />` : invoices.loading ? html`<${Loading} />` : null}
    <${Pager} page=${invoices.data} onPage=${setPage} label="Invoice pages" />
  </section>`;
}

export function ClientPage({ id }: { id: number }) {
  const client = useLoad(() => call('admin/client/get', { id }), [id]);
  const data = client.data;
  return html`<h1>${data ? clientName(data) || data.email : `Client #${id}`}</h1>
    <p><${Link} href="/admin/clients">All clients<//></p>
    <${ErrorMessage} error=${client.error} />
    ${data === undefined && client.loading ? html`<${Loading} />` : null}
    ${data !== undefined
      ? html`<${DefinitionList}
            items=${[
              ['E-mail', data.email],
              ['Status', html`<${Badge} status=${data.status} />`],
              ['Currency', data.currency ?? '—'],
              ['Since', formatDate(data.created_at)],
            ]}
          />
          <${ClientOrders} clientId=${id} />
          <${ClientInvoices} clientId=${id} />
          <${ClientBalance} clientId=${id} />
          <${ClientVat} clientId=${id} vatNumber=${data.vat_number} />
          <${ClientEditForm} client=${data} onSaved=${client.reload} />
          <${ClientAccount} client=${data} />`
      : null}`;
}
