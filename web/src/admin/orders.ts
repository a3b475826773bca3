// Orders (list, detail, every status action, update) and invoices (list, detail, mark paid, cancel, refund).
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { allPages, call, invalidField } from '../lib/api.ts';
import { cancelsAtPeriodEnd, formatDateTime, formatMoney, formatValue, humanize, statusLabel } from '../lib/format.ts';
import { periodLabel, typeLabel, usePeriodLabels } from '../lib/labels.ts';
import { Link, navigate, useLocation } from '../lib/router.ts';
import { Badge, Button, Confirm, DefinitionList, ErrorMessage, Field, FormError, Loading, Notice, Pager, useAction, useLoad } from '../lib/ui.ts';
import { InvoiceDocument, invoiceLabel, invoiceTitle } from '../lib/invoice-view.ts';
import { CreditNotesList } from '../lib/credit-notes-view.ts';
import { CreditNoteForm } from './credit-note-form.ts';
import type { AdminOrder, Invoice, TransactionRecord } from '../lib/types.ts';
import { MeterCharts } from '../lib/meter-charts.ts';
import { OutcomeChart } from '../lib/outcome-chart.ts';
import { UsageLine } from '../lib/usage-summary.ts';
import { InvoicesTable, OrdersTable } from './clients.ts';
import { ClientCell, DataTable, ExportButton, filled, type Column } from './common.ts';
import { TrialSection } from './order-trial.ts';

const ORDER_STATUSES = [
  ['', 'Any status'],
  ['pending_setup', 'Pending setup'],
  ['failed_setup', 'Setup failed'],
  ['active', 'Active'],
  ['suspended', 'Suspended'],
  ['canceled', 'Canceled'],
] as const;

const INVOICE_STATUSES = [
  ['', 'Any status'],
  ['unpaid', 'Unpaid'],
  ['paid', 'Paid'],
  ['canceled', 'Canceled'],
  ['refunded', 'Refunded'],
] as const;

/** Staff paste a key (a leaked one, say) and land on its order; the server looks it up by hash. */
function FindByKey() {
  const [key, setKey] = useState('');
  const action = useAction();
  const submit = (event: Event): void => {
    event.preventDefault();
    void action.run(async () => {
      if (key.trim() === '') throw invalidField('key', 'is required');
      const found = await call('admin/serviceapikey/find', { key: key.trim() });
      navigate(`/admin/orders/${found.order_id}`);
    });
  };
  return html`<form class="card row" role="search" aria-label="Find the order of an API key" onSubmit=${submit} novalidate>
    <${Field} label="Find by API key" name="key" type="password" autocomplete="off" value=${key} onInput=${setKey} error=${action.error} hint="Paste a key to open its order. The key is looked up, never shown or listed." />
    <${Button} type="submit" busy=${action.busy}>Find the order<//>
    <${FormError} error=${action.error} fields=${['key']} />
  </form>`;
}

export function OrdersPage() {
  const { query } = useLocation();
  const [filters, setFilters] = useState({ status: query.get('status') ?? '', type: query.get('type') ?? '', search: query.get('search') ?? '', client_id: query.get('client_id') ?? '' });
  const [applied, setApplied] = useState(filters);
  const [page, setPage] = useState(1);
  const orders = useLoad(() => call('admin/order/get_list', { ...filled(applied), page, per_page: 25 }), [applied, page]);
  const submit = (event: Event): void => {
    event.preventDefault();
    setPage(1);
    setApplied(filters);
  };
  return html`<h1>Orders</h1>
    <form class="card row" role="search" aria-label="Filter orders" onSubmit=${submit}>
      <${Field} label="Client (name or e-mail)" name="search" type="search" value=${filters.search} onInput=${(value: string) => setFilters({ ...filters, search: value, client_id: '' })} error=${orders.error} />
      <${Field} label="Status" name="status" value=${filters.status} onInput=${(value: string) => setFilters({ ...filters, status: value })} options=${ORDER_STATUSES} error=${orders.error} />
      <${Field} label="Type" name="type" value=${filters.type} onInput=${(value: string) => setFilters({ ...filters, type: value })} options=${[['', 'Any type'], ['apikey', typeLabel('apikey')], ['custom', typeLabel('custom')]]} error=${orders.error} />
      <${Button} type="submit" busy=${orders.loading}>Filter<//>
    </form>
    <${FormError} error=${orders.error} fields=${['status', 'type', 'search']} />
    <div class="actions"><${ExportButton} kind="orders" filters=${applied} /></div>
    ${orders.data ? html`<${OrdersTable} orders=${orders.data.list} busy=${orders.loading} />` : orders.loading ? html`<${Loading} />` : null}
    <${Pager} page=${orders.data} onPage=${setPage} label="Order pages" />
    <${FindByKey} />`;
}

type StatusAction = 'activate' | 'renew' | 'suspend' | 'unsuspend' | 'cancel' | 'uncancel';

/** Which status actions make sense from each status (the server has the last word: 409 otherwise). */
const ACTIONS: Record<string, readonly StatusAction[]> = {
  pending_setup: ['activate', 'cancel'],
  failed_setup: ['activate', 'cancel'],
  active: ['renew', 'suspend', 'cancel'],
  suspended: ['unsuspend', 'renew', 'cancel'],
  canceled: ['uncancel'],
};

const ACTION_LABELS: Record<StatusAction, string> = {
  activate: 'Activate',
  renew: 'Renew',
  suspend: 'Suspend',
  unsuspend: 'Unsuspend',
  cancel: 'Cancel the order',
  uncancel: 'Uncancel',
};

function OrderActions({ order, onDone }: { order: AdminOrder; onDone: () => void }) {
  const [reason, setReason] = useState('');
  const [pending, setPending] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const [confirmDelete, setConfirmDelete] = useState(false);
  const action = useAction();
  const run = (name: StatusAction | 'delete'): void => {
    setPending(name);
    setDone(null);
    void action
      .run(async () => {
        const withReason = name === 'suspend' || name === 'cancel';
        await call(`admin/order/${name}`, { id: order.id, ...(withReason && reason !== '' && { reason }) });
        if (name === 'delete') {
          navigate('/admin/orders');
          return;
        }
        setDone(`${ACTION_LABELS[name]}: done.`);
        setReason('');
        onDone();
      })
      .finally(() => setPending(null));
  };
  const available = ACTIONS[order.status] ?? [];
  return html`<section class="card" aria-labelledby="order-actions">
    <h2 id="order-actions">Actions</h2>
    ${available.some((name) => name === 'suspend' || name === 'cancel')
      ? html`<${Field} label="Reason (for suspend or cancel)" name="reason" value=${reason} onInput=${setReason} error=${action.error} />`
      : null}
    <div class="actions">
      ${available.map(
        (name) => html`<${Button} variant=${name === 'cancel' ? 'danger' : undefined} busy=${pending === name} disabled=${pending !== null} onClick=${() => run(name)}>${ACTION_LABELS[name]}<//>`,
      )}
      <button type="button" class="danger" onClick=${() => setConfirmDelete(true)} disabled=${pending !== null}>Delete…</button>
    </div>
    ${confirmDelete
      ? html`<${Confirm}
          question="Delete this order for good? Its API key (if any) is deleted too."
          confirmLabel="Delete the order"
          busy=${pending === 'delete'}
          onCancel=${() => setConfirmDelete(false)}
          onConfirm=${() => run('delete')}
        />`
      : null}
    <${FormError} error=${action.error} fields=${['reason']} />
    <${Notice}>${done}<//>
  </section>`;
}

function OrderUpdateForm({ order, onSaved }: { order: AdminOrder; onSaved: () => void }) {
  const [form, setForm] = useState({ expires_at: '', period: '', price: '', notes: '' });
  const labels = usePeriodLabels();
  const [saved, setSaved] = useState<string | null>(null);
  const action = useAction();
  useEffect(() => {
    setForm({ expires_at: order.expires_at ?? '', period: order.period ?? '', price: order.price, notes: order.notes ?? '' });
  }, [order.updated_at]);
  const submit = (event: Event): void => {
    event.preventDefault();
    setSaved(null);
    void action.run(async () => {
      await call('admin/order/update', { id: order.id, ...filled(form) });
      setSaved('Saved.');
      onSaved();
    });
  };
  const set = (name: keyof typeof form) => (value: string) => setForm({ ...form, [name]: value });
  return html`<form class="card" onSubmit=${submit} aria-labelledby="order-update">
    <h2 id="order-update">Edit</h2>
    <div class="row">
      <${Field} label="Expires at (UTC)" name="expires_at" value=${form.expires_at} onInput=${set('expires_at')} error=${action.error} hint="Date and time, e.g. 2026-12-31T00:00:00Z" />
      <${Field} label="Billing period" name="period" value=${form.period} onInput=${set('period')} error=${action.error} options=${periodOptions(labels, form.period)} />
      <${Field} label="Price" name="price" inputmode="decimal" value=${form.price} onInput=${set('price')} error=${action.error} />
    </div>
    <${Field} label="Notes" name="notes" type="textarea" value=${form.notes} onInput=${set('notes')} error=${action.error} />
    <${FormError} error=${action.error} fields=${['expires_at', 'period', 'price', 'notes']} />
    <${Notice}>${saved}<//>
    <${Button} type="submit" variant="primary" busy=${action.busy}>Save<//>
  </form>`;
}

/** The period choices for an order: every period the server names, and the order's own if it is another. */
function periodOptions(labels: Record<string, string> | undefined, current: string): Array<[string, string]> {
  const codes = Object.keys(labels ?? {});
  if (current !== '' && !codes.includes(current)) codes.unshift(current);
  return [['', 'One time'], ...codes.map((code): [string, string] => [code, periodLabel(labels, code)])];
}

/** Notes the server writes when staff gave no reason: the action's own name, which the arrow already says. */
const ACTION_NOTES = new Set(['created', 'activate', 'renew', 'suspend', 'unsuspend', 'cancel', 'uncancel']);

function OrderHistory({ id, version }: { id: number; version: string | undefined }) {
  const history = useLoad(() => call('admin/order/history', { id }), [id, version]);
  return html`<section class="card" aria-labelledby="order-history">
    <h2 id="order-history">History</h2>
    <${ErrorMessage} error=${history.error} />
    ${history.data === undefined && history.loading ? html`<${Loading} />` : null}
    ${history.data !== undefined && history.data.length === 0 ? html`<p>No status changes yet.</p>` : null}
    ${history.data !== undefined && history.data.length > 0
      ? html`<ol class="history">
          ${history.data.map(
            (entry) => html`<li>
              <time datetime=${entry.created_at}>${formatDateTime(entry.created_at)}</time>
              ${entry.from_status === null ? html`Created as <strong>${statusLabel(entry.to_status)}</strong>` : html`${statusLabel(entry.from_status)} → <strong>${statusLabel(entry.to_status)}</strong>`}
              ${entry.note && !ACTION_NOTES.has(entry.note) ? html` · ${entry.note}` : null}
            </li>`,
          )}
        </ol>`
      : null}
  </section>`;
}

const PAYMENT_COLUMNS: readonly Column<TransactionRecord>[] = [
  ['When', (row) => formatDateTime(row.created_at)],
  ['Invoice', (row) => html`<${Link} href=${`/admin/invoices/${row.invoice_id}`}>${invoiceLabel({ id: row.invoice_id, number: row.invoice_number })}<//>`],
  ['Type', (row) => (row.type === 'refund' ? 'Refund' : 'Payment')],
  ['Amount', (row) => formatMoney(row.amount, row.currency), 'num'],
  ['Status', (row) => html`<${Badge} status=${row.status} />`],
  ['Gateway', (row) => row.gateway ?? 'Marked paid by staff'],
  ['Reference', (row) => (row.txn_id === null ? '—' : html`<code>${row.txn_id}</code>`)],
];

/** Payments and refunds of the invoices that bill this order (its first invoice, renewals, plan changes). */
function OrderPayments({ order }: { order: AdminOrder }) {
  const payments = useLoad(async () => {
    const invoices = (await allPages('admin/invoice/get_list', { client_id: order.client_id })).list;
    const mine = new Set(invoices.filter((invoice) => invoice.items.some((item) => item.order_id === order.id)).map((invoice) => invoice.id));
    if (mine.size === 0) return [];
    const transactions = (await allPages('admin/invoice/transaction_get_list', { client_id: order.client_id })).list;
    return transactions.filter((transaction) => mine.has(transaction.invoice_id));
  }, [order.id, order.updated_at]);
  return html`<section class="card" aria-labelledby="order-payments">
    <h2 id="order-payments">Payments</h2>
    <${ErrorMessage} error=${payments.error} />
    ${payments.data === undefined && payments.loading ? html`<${Loading} />` : null}
    ${payments.data !== undefined && payments.data.length === 0 ? html`<p>No payments for this order yet.</p>` : null}
    ${payments.data !== undefined && payments.data.length > 0 ? html`<${DataTable} caption="Payments of this order" columns=${PAYMENT_COLUMNS} rows=${payments.data} />` : null}
  </section>`;
}

/** The plan's parameters (monthly limit, tier, …) as fields; the key itself stays on the key page. */
function OrderParameters({ service }: { service: Record<string, unknown> | undefined }) {
  const config = service?.config;
  if (config === null || typeof config !== 'object') return null;
  const entries = Object.entries(config as Record<string, unknown>);
  if (entries.length === 0) return null;
  return html`<h3>Parameters</h3>
    <${DefinitionList} items=${entries.map(([name, value]) => [humanize(name), formatValue(value)] as const)} />`;
}

export function OrderPage({ id }: { id: number }) {
  const order = useLoad(() => call('admin/order/get', { id }), [id]);
  const service = useLoad(() => call('admin/order/service', { id }), [id, order.data?.updated_at]);
  // An API key plan's meters, charted day by day (issue 23): the same read as the key page's.
  const isApiKey = order.data?.type === 'apikey';
  const usage = useLoad(() => (isApiKey ? call('admin/serviceapikey/usage', { order_id: id }) : Promise.resolve(null)), [id, isApiKey, order.data?.updated_at]);
  const labels = usePeriodLabels();
  const data = order.data;
  return html`<h1>Order #${id}${data ? `: ${data.title}` : ''}</h1>
    <p><${Link} href="/admin/orders">All orders<//></p>
    <${ErrorMessage} error=${order.error} />
    ${data === undefined && order.loading ? html`<${Loading} />` : null}
    ${data !== undefined
      ? html`<section class="card" aria-labelledby="order-summary">
            <h2 id="order-summary">Summary</h2>
            <${DefinitionList}
              items=${[
                ['Status', html`<${Badge} status=${data.status} />${data.reason ? ` (${data.reason})` : ''}${cancelsAtPeriodEnd(data) ? html` <strong data-testid="cancels-at-period-end">${cancelsAtPeriodEnd(data)}</strong>` : null}`],
                ['Client', html`<${ClientCell} client=${{ id: data.client_id }} />`],
                ['Product', html`<${Link} href=${`/admin/products/${data.product_id}`}>${data.title}<//>`],
                ['Type', typeLabel(data.type)],
                ['Billing period', periodLabel(labels, data.period)],
                ['Price', formatMoney(data.price, data.currency)],
                ...(data.usage_terms ? [['Usage terms', data.usage_terms] as const] : []),
                ['Expires', formatDateTime(data.expires_at)],
                ['Activated', formatDateTime(data.activated_at)],
                ['Created', formatDateTime(data.created_at)],
                ['Unpaid invoice', data.unpaid_invoice_id ? html`<${Link} href=${`/admin/invoices/${data.unpaid_invoice_id}`}>${invoiceLabel({ id: data.unpaid_invoice_id, number: null })}<//>` : 'None'],
              ]}
            />
            <${ErrorMessage} error=${service.error} />
            <${OrderParameters} service=${service.data ?? undefined} />
            ${data.type === 'apikey' && service.data ? html`<h3>Usage this period</h3><${UsageLine} usage=${service.data.usage} currency=${data.currency} />` : null}
            ${usage.data ? html`<${MeterCharts} meters=${usage.data.meters} currency=${data.currency} />` : null}
            ${data.type === 'apikey' && data.status !== 'pending_setup' ? html`<${OutcomeChart} load=${(range: '24h' | '30d' | '12m') => call('admin/serviceapikey/analytics', { order_id: data.id, range })} />` : null}
            ${data.type === 'apikey' ? html`<p><${Link} href=${`/admin/keys/${data.id}`}>Manage this order's API key<//></p>` : null}
            ${data.notes ? html`<h3>Notes</h3><p class="instructions">${data.notes}</p>` : null}
          </section>
          <${TrialSection} order=${data} onDone=${order.reload} />
          <${OrderActions} order=${data} onDone=${order.reload} />
          <${OrderHistory} id=${id} version=${data.updated_at} />
          <${OrderPayments} order=${data} />
          <${OrderUpdateForm} order=${data} onSaved=${order.reload} />`
      : null}`;
}

export function InvoicesPage() {
  const { query } = useLocation();
  const [filters, setFilters] = useState({ status: query.get('status') ?? '', search: query.get('search') ?? '', client_id: query.get('client_id') ?? '' });
  const [applied, setApplied] = useState(filters);
  const [page, setPage] = useState(1);
  const invoices = useLoad(() => call('admin/invoice/get_list', { ...filled(applied), page, per_page: 25 }), [applied, page]);
  const submit = (event: Event): void => {
    event.preventDefault();
    setPage(1);
    setApplied(filters);
  };
  return html`<h1>Invoices</h1>
    <form class="card row" role="search" aria-label="Filter invoices" onSubmit=${submit}>
      <${Field} label="Client (name or e-mail)" name="search" type="search" value=${filters.search} onInput=${(value: string) => setFilters({ ...filters, search: value, client_id: '' })} error=${invoices.error} />
      <${Field} label="Status" name="status" value=${filters.status} onInput=${(value: string) => setFilters({ ...filters, status: value })} options=${INVOICE_STATUSES} error=${invoices.error} />
      <${Button} type="submit" busy=${invoices.loading}>Filter<//>
    </form>
    <${FormError} error=${invoices.error} fields=${['status', 'search']} />
    <div class="actions"><${ExportButton} kind="invoices" filters=${applied} /></div>
    ${invoices.data ? html`<${InvoicesTable} invoices=${invoices.data.list} busy=${invoices.loading} />` : invoices.loading ? html`<${Loading} />` : null}
    <${Pager} page=${invoices.data} onPage=${setPage} label="Invoice pages" />`;
}

function InvoiceActions({ invoice, onDone }: { invoice: Invoice; onDone: () => void }) {
  const [transactionId, setTransactionId] = useState('');
  const [refundAmount, setRefundAmount] = useState('');
  const [confirm, setConfirm] = useState<'cancel' | 'refund' | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const pay = useAction();
  const other = useAction();
  const markPaid = (event: Event): void => {
    event.preventDefault();
    setDone(null);
    void pay.run(async () => {
      await call('admin/invoice/mark_as_paid', { id: invoice.id, ...(transactionId !== '' && { transaction_id: transactionId }) });
      setDone('Marked as paid; its orders were activated or renewed.');
      onDone();
    });
  };
  const run = (name: 'cancel' | 'refund'): void => {
    setDone(null);
    void other.run(async () => {
      await call(`admin/invoice/${name}`, { id: invoice.id, ...(name === 'refund' && refundAmount.trim() !== '' && { amount: refundAmount.trim() }) });
      setConfirm(null);
      setDone(name === 'cancel' ? 'Invoice canceled.' : refundAmount.trim() === '' ? 'Invoice refunded.' : `Refunded ${refundAmount.trim()}.`);
      setRefundAmount('');
      onDone();
    });
  };
  return html`<section class="card" aria-labelledby="invoice-actions">
    <h2 id="invoice-actions">Actions</h2>
    ${invoice.status === 'unpaid'
      ? html`<form onSubmit=${markPaid} aria-label="Mark as paid">
          <${Field} label="Transaction id (optional)" name="transaction_id" value=${transactionId} onInput=${setTransactionId} error=${pay.error} />
          <${FormError} error=${pay.error} fields=${['transaction_id']} />
          <div class="actions">
            <${Button} type="submit" variant="primary" busy=${pay.busy}>Mark as paid<//>
            <button type="button" class="danger" onClick=${() => setConfirm('cancel')}>Cancel the invoice…</button>
          </div>
        </form>`
      : null}
    ${invoice.status === 'paid'
      ? html`<${Field} label="Refund amount (optional; empty refunds the rest)" name="amount" value=${refundAmount} onInput=${setRefundAmount} error=${other.error} />
          <button type="button" class="danger" onClick=${() => setConfirm('refund')}>Refund…</button>`
      : null}
    <p><${Link} href=${`/admin/transactions?invoice_id=${invoice.id}`}>Payments and refunds of this invoice<//></p>
    ${invoice.status !== 'unpaid' && invoice.status !== 'paid' ? html`<p>No actions for a ${statusLabel(invoice.status).toLowerCase()} invoice.</p>` : null}
    ${confirm !== null
      ? html`<${Confirm}
          question=${confirm === 'cancel' ? 'Cancel this invoice? The client can no longer pay it.' : 'Refund this invoice? A card payment is refunded through its gateway. Its orders are not suspended by this.'}
          confirmLabel=${confirm === 'cancel' ? 'Cancel the invoice' : 'Refund'}
          busy=${other.busy}
          onCancel=${() => setConfirm(null)}
          onConfirm=${() => run(confirm)}
        />`
      : null}
    <${ErrorMessage} error=${other.error} />
    <${Notice}>${done}<//>
  </section>`;
}

export function InvoicePage({ id }: { id: number }) {
  const invoice = useLoad(() => call('admin/invoice/get', { id }), [id]);
  const data = invoice.data;
  return html`<h1>${data === undefined ? 'Invoice' : invoiceTitle(data)}</h1>
    <p><${Link} href="/admin/invoices">All invoices<//></p>
    <${ErrorMessage} error=${invoice.error} />
    ${data === undefined && invoice.loading ? html`<${Loading} />` : null}
    ${data !== undefined
      ? html`<${InvoiceDocument}
            invoice=${data}
            extra=${[['Client', html`<${ClientCell} client=${{ id: data.client_id }} />`]]}
          />
          <${CreditNotesList} invoice=${data} area="admin" />
          <${InvoiceActions} invoice=${data} onDone=${invoice.reload} />
          <${CreditNoteForm} invoice=${data} onDone=${invoice.reload} />`
      : null}`;
}
