// Orders (list, detail, every status action, update) and invoices (list, detail, mark paid, cancel, refund).
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { call, type Page } from '../lib/api.ts';
import { formatDateTime, formatMoney, formatValue, humanize } from '../lib/format.ts';
import { Link, navigate, useLocation } from '../lib/router.ts';
import { Badge, Button, Confirm, DefinitionList, ErrorMessage, Field, FormError, Loading, Notice, Pager, useAction, useLoad } from '../lib/ui.ts';
import { InvoiceDocument, invoiceTitle } from '../lib/invoice-view.ts';
import type { Invoice, Order } from '../lib/types.ts';
import { UsageLine, type UsageSummary } from '../lib/usage-summary.ts';
import { InvoicesTable, OrdersTable } from './clients.ts';
import { filled } from './common.ts';

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

export function OrdersPage() {
  const { query } = useLocation();
  const [filters, setFilters] = useState({ status: query.get('status') ?? '', type: query.get('type') ?? '', client_id: query.get('client_id') ?? '' });
  const [applied, setApplied] = useState(filters);
  const [page, setPage] = useState(1);
  const orders = useLoad(() => call<Page<Order>>('admin/order/get_list', { ...filled(applied), page, per_page: 25 }), [applied, page]);
  const submit = (event: Event): void => {
    event.preventDefault();
    setPage(1);
    setApplied(filters);
  };
  return html`<h1>Orders</h1>
    <form class="card row" role="search" aria-label="Filter orders" onSubmit=${submit}>
      <${Field} label="Status" name="status" value=${filters.status} onInput=${(value: string) => setFilters({ ...filters, status: value })} options=${ORDER_STATUSES} error=${orders.error} />
      <${Field} label="Type" name="type" value=${filters.type} onInput=${(value: string) => setFilters({ ...filters, type: value })} options=${[['', 'Any type'], ['apikey', 'API key'], ['custom', 'Custom']]} error=${orders.error} />
      <${Field} label="Client id" name="client_id" type="number" min=${1} value=${filters.client_id} onInput=${(value: string) => setFilters({ ...filters, client_id: value })} error=${orders.error} />
      <${Button} type="submit" busy=${orders.loading}>Filter<//>
    </form>
    <${FormError} error=${orders.error} fields=${['status', 'type', 'client_id']} />
    ${orders.data ? html`<${OrdersTable} orders=${orders.data.list} busy=${orders.loading} />` : orders.loading ? html`<${Loading} />` : null}
    <${Pager} page=${orders.data} onPage=${setPage} label="Order pages" />`;
}

/** Which status actions make sense from each status (the server has the last word: 409 otherwise). */
const ACTIONS: Record<string, readonly string[]> = {
  pending_setup: ['activate', 'cancel'],
  failed_setup: ['activate', 'cancel'],
  active: ['renew', 'suspend', 'cancel'],
  suspended: ['unsuspend', 'renew', 'cancel'],
  canceled: ['uncancel'],
};

const ACTION_LABELS: Record<string, string> = {
  activate: 'Activate',
  renew: 'Renew',
  suspend: 'Suspend',
  unsuspend: 'Unsuspend',
  cancel: 'Cancel the order',
  uncancel: 'Uncancel',
};

function OrderActions({ order, onDone }: { order: Order; onDone: () => void }) {
  const [reason, setReason] = useState('');
  const [pending, setPending] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const [confirmDelete, setConfirmDelete] = useState(false);
  const action = useAction();
  const run = (name: string): void => {
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
        setDone(`${ACTION_LABELS[name] ?? name}: done.`);
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

function OrderUpdateForm({ order, onSaved }: { order: Order; onSaved: () => void }) {
  const [form, setForm] = useState({ expires_at: '', period: '', price: '', notes: '' });
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
      <${Field} label="Expires at (ISO, UTC)" name="expires_at" value=${form.expires_at} onInput=${set('expires_at')} error=${action.error} hint="e.g. 2026-12-31T00:00:00Z" />
      <${Field} label="Period" name="period" value=${form.period} onInput=${set('period')} error=${action.error} hint="e.g. 1M, 1Y" />
      <${Field} label="Price" name="price" inputmode="decimal" value=${form.price} onInput=${set('price')} error=${action.error} />
    </div>
    <${Field} label="Notes" name="notes" type="textarea" value=${form.notes} onInput=${set('notes')} error=${action.error} />
    <${FormError} error=${action.error} fields=${['expires_at', 'period', 'price', 'notes']} />
    <${Notice}>${saved}<//>
    <${Button} type="submit" variant="primary" busy=${action.busy}>Save<//>
  </form>`;
}

export function OrderPage({ id }: { id: number }) {
  const order = useLoad(() => call<Order>('admin/order/get', { id }), [id]);
  const service = useLoad(() => call<Record<string, unknown> | null>('admin/order/service', { id }), [id, order.data?.updated_at]);
  const data = order.data;
  return html`<h1>Order #${id}</h1>
    <p><${Link} href="/admin/orders">All orders<//></p>
    <${ErrorMessage} error=${order.error} />
    ${data === undefined && order.loading ? html`<${Loading} />` : null}
    ${data !== undefined
      ? html`<section class="card" aria-labelledby="order-summary">
            <h2 id="order-summary">${data.title}</h2>
            <${DefinitionList}
              items=${[
                ['Status', html`<${Badge} status=${data.status} />${data.reason ? ` (${data.reason})` : ''}`],
                ['Client', html`<${Link} href=${`/admin/clients/${data.client_id}`}>Client #${data.client_id}<//>`],
                ['Product', html`<${Link} href=${`/admin/products/${data.product_id}`}>Product #${data.product_id}<//>`],
                ['Type', data.type],
                ['Period', data.period ?? 'One time'],
                ['Price', formatMoney(data.price, data.currency)],
                ['Expires', formatDateTime(data.expires_at)],
                ['Activated', formatDateTime(data.activated_at)],
                ['Created', formatDateTime(data.created_at)],
                ['Unpaid invoice', data.unpaid_invoice_id ? html`<${Link} href=${`/admin/invoices/${data.unpaid_invoice_id}`}>Invoice #${data.unpaid_invoice_id}<//>` : '—'],
              ]}
            />
            ${data.type === 'apikey' ? html`<p><${Link} href=${`/admin/keys/${data.id}`}>Manage this order's API key<//></p>` : null}
            <${ErrorMessage} error=${service.error} />
            ${service.data && typeof service.data === 'object'
              ? html`<h3>Service</h3>
                  ${data.type === 'apikey' ? html`<h4>Usage this period</h4><${UsageLine} usage=${service.data.usage as UsageSummary | null} currency=${data.currency} />` : null}
                  <${DefinitionList} items=${Object.entries(service.data).filter(([name]) => name !== 'usage').map(([name, value]) => [humanize(name), formatValue(value)] as const)} />`
              : null}
          </section>
          <${OrderActions} order=${data} onDone=${order.reload} />
          <${OrderUpdateForm} order=${data} onSaved=${order.reload} />`
      : null}`;
}

export function InvoicesPage() {
  const { query } = useLocation();
  const [filters, setFilters] = useState({ status: query.get('status') ?? '', client_id: query.get('client_id') ?? '' });
  const [applied, setApplied] = useState(filters);
  const [page, setPage] = useState(1);
  const invoices = useLoad(() => call<Page<Invoice>>('admin/invoice/get_list', { ...filled(applied), page, per_page: 25 }), [applied, page]);
  const submit = (event: Event): void => {
    event.preventDefault();
    setPage(1);
    setApplied(filters);
  };
  return html`<h1>Invoices</h1>
    <form class="card row" role="search" aria-label="Filter invoices" onSubmit=${submit}>
      <${Field} label="Status" name="status" value=${filters.status} onInput=${(value: string) => setFilters({ ...filters, status: value })} options=${INVOICE_STATUSES} error=${invoices.error} />
      <${Field} label="Client id" name="client_id" type="number" min=${1} value=${filters.client_id} onInput=${(value: string) => setFilters({ ...filters, client_id: value })} error=${invoices.error} />
      <${Button} type="submit" busy=${invoices.loading}>Filter<//>
    </form>
    <${FormError} error=${invoices.error} fields=${['status', 'client_id']} />
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
    ${invoice.status !== 'unpaid' && invoice.status !== 'paid' ? html`<p>No actions for a ${invoice.status} invoice.</p>` : null}
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
  const invoice = useLoad(() => call<Invoice>('admin/invoice/get', { id }), [id]);
  const data = invoice.data;
  return html`<h1>${data === undefined ? `Invoice #${id}` : invoiceTitle(data)}</h1>
    <p><${Link} href="/admin/invoices">All invoices<//></p>
    <${ErrorMessage} error=${invoice.error} />
    ${data === undefined && invoice.loading ? html`<${Loading} />` : null}
    ${data !== undefined
      ? html`<${InvoiceDocument}
            invoice=${data}
            extra=${[['Client', html`<${Link} href=${`/admin/clients/${data.client_id}`}>Client #${data.client_id}<//>`]]}
          />
          <${InvoiceActions} invoice=${data} onDone=${invoice.reload} />`
      : null}`;
}
