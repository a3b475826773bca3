// Staff: payments, failed charges and refunds across gateways (admin/invoice/transaction_get_list), filtered by
// invoice, client, gateway and status.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { call } from '../lib/api.ts';
import { formatDateTime, formatMoney } from '../lib/format.ts';
import { Link, useLocation } from '../lib/router.ts';
import { Badge, Button, Field, FormError, Loading, Pager, useLoad } from '../lib/ui.ts';
import { invoiceLabel } from '../../../src/lib/invoice-label.ts';
import type { TransactionRecord } from '../lib/types.ts';
import { ClientCell, DataTable, ExportButton, filled, type Column } from './common.ts';

const STATUSES = [
  ['', 'Any status'],
  ['processed', 'Processed'],
  ['failed', 'Failed'],
  ['refunded', 'Refunded'],
  ['error', 'Error'],
] as const;

const COLUMNS: readonly Column<TransactionRecord>[] = [
  ['#', (row) => row.id],
  ['When', (row) => formatDateTime(row.created_at)],
  ['Invoice', (row) => html`<${Link} href=${`/admin/invoices/${row.invoice_id}`}>${invoiceLabel({ id: row.invoice_id, number: row.invoice_number })}<//>`],
  ['Client', (row) => html`<${ClientCell} client=${{ id: row.client_id }} />`],
  ['Gateway', (row) => row.gateway ?? 'Marked paid by staff'],
  ['Type', (row) => (row.type === 'refund' ? 'Refund' : 'Payment')],
  ['Amount', (row) => formatMoney(row.amount, row.currency), 'num'],
  ['Status', (row) => html`<${Badge} status=${row.status} />`],
  ['Reference', (row) => (row.txn_id === null ? '—' : html`<code>${row.txn_id}</code>`)],
  ['Message', (row) => row.message ?? ''],
];

export function TransactionsPage() {
  const { query } = useLocation();
  const initial = {
    invoice_id: query.get('invoice_id') ?? '',
    client_id: query.get('client_id') ?? '',
    gateway: query.get('gateway') ?? '',
    status: query.get('status') ?? '',
  };
  const [filters, setFilters] = useState(initial);
  const [applied, setApplied] = useState(initial);
  const [page, setPage] = useState(1);
  const list = useLoad(() => call('admin/invoice/transaction_get_list', { ...filled(applied), page, per_page: 25 }), [applied, page]);
  const submit = (event: Event): void => {
    event.preventDefault();
    setPage(1);
    setApplied(filters);
  };
  const set = (name: keyof typeof filters) => (value: string) => setFilters({ ...filters, [name]: value });
  return html`<h1>Transactions</h1>
    <form class="card row" role="search" aria-label="Filter transactions" onSubmit=${submit}>
      <${Field} label="Invoice id" name="invoice_id" type="number" min=${1} value=${filters.invoice_id} onInput=${set('invoice_id')} error=${list.error} />
      <${Field} label="Gateway" name="gateway" value=${filters.gateway} onInput=${set('gateway')} error=${list.error} />
      <${Field} label="Status" name="status" value=${filters.status} onInput=${set('status')} options=${STATUSES} error=${list.error} />
      <${Button} type="submit" busy=${list.loading}>Filter<//>
    </form>
    <${FormError} error=${list.error} fields=${['invoice_id', 'client_id', 'gateway', 'status']} />
    ${applied.client_id !== '' ? html`<p>Transactions of <${ClientCell} client=${{ id: Number(applied.client_id) }} />. <button type="button" class="link" onClick=${() => setApplied({ ...applied, client_id: '' })}>Show every client</button></p>` : null}
    <div class="actions"><${ExportButton} kind="transactions" filters=${applied} /></div>
    ${list.data
      ? list.data.list.length === 0
        ? html`<p>No transactions match.</p>`
        : html`<${DataTable} caption="Transactions" columns=${COLUMNS} rows=${list.data.list} busy=${list.loading} />`
      : list.loading
        ? html`<${Loading} />`
        : null}
    <${Pager} page=${list.data} onPage=${setPage} label="Transaction pages" />`;
}
