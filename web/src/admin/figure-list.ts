// /admin/dashboard/<figure>?from=&to=: the records behind one dashboard figure (admin/stats/dashboard_list), a page at
// a time, with their CSV and, where the panel has one, the ordinary list they come from.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { call, type Params } from '../lib/api.ts';
import { humanize } from '../lib/format.ts';
import { Link } from '../lib/router.ts';
import { ErrorMessage, Loading, Pager, useLoad } from '../lib/ui.ts';
import { FigureCsv, useRange } from './dashboard.ts';

type Figure = Params<'admin/stats/dashboard_list'>['figure'];

const FIGURES: Record<Figure, { title: string; list?: readonly [href: string, label: string] }> = {
  mrr: { title: 'Orders behind MRR', list: ['/admin/orders?status=active', 'Active orders'] },
  renewals_due: { title: 'Renewals in the next 30 days', list: ['/admin/orders?status=active', 'Active orders'] },
  cancellations_scheduled: { title: 'Cancellations scheduled' },
  revenue: { title: 'Invoices paid', list: ['/admin/invoices?status=paid', 'Paid invoices'] },
  refunds: { title: 'Refunds', list: ['/admin/transactions', 'Transactions'] },
  credit_notes: { title: 'Credit notes to the balance' },
  usage: { title: 'Usage (overage) lines paid' },
  top_ups: { title: 'Top-ups paid' },
  failed_payments: { title: 'Failed payments', list: ['/admin/transactions?status=failed', 'Failed transactions'] },
  top_customers: { title: 'Top customers by revenue' },
  new_customers: { title: 'New clients', list: ['/admin/clients', 'Clients'] },
  churned_customers: { title: 'Churned customers' },
  projected_overage: { title: 'Projected overage this period' },
};

const isFigure = (name: string): name is Figure => Object.hasOwn(FIGURES, name);

/** A cell: ids of records link to their pages. */
function Cell({ column, value }: { column: string; value: string | number | null | undefined }) {
  if (value === null || value === undefined || value === '') return html`<span>—</span>`;
  const pages: Record<string, string> = { client_id: '/admin/clients/', order_id: '/admin/orders/', invoice_id: '/admin/invoices/' };
  const page = pages[column];
  return page !== undefined ? html`<${Link} href=${`${page}${value}`}>#${value}<//>` : html`${String(value)}`;
}

export function FigureListPage({ figure }: { figure: string }) {
  const range = useRange();
  const [page, setPage] = useState(1);
  const known = isFigure(figure);
  const loaded = useLoad(() => (known ? call('admin/stats/dashboard_list', { figure, ...range, page, per_page: 50 }) : Promise.resolve(undefined)), [figure, range.from, range.to, page]);
  if (!known) return html`<h1>Page not found</h1><p><${Link} href="/admin">Back to the dashboard<//>.</p>`;
  const about = FIGURES[figure];
  const data = loaded.data;
  return html`<h1>${about.title}</h1>
    <p><${Link} href=${`/admin${range.from !== undefined || range.to !== undefined ? `?${new URLSearchParams(range).toString()}` : ''}`}>‹ Dashboard<//>
      ${about.list !== undefined ? html` · <${Link} href=${about.list[0]}>${about.list[1]}<//>` : null} · <${FigureCsv} figure=${figure} range=${range} label=${about.title} /></p>
    <${ErrorMessage} error=${loaded.error} />
    ${data === undefined
      ? loaded.loading ? html`<${Loading} />` : null
      : html`<section class="card" aria-busy=${loaded.loading ? 'true' : 'false'}>
          ${data.list.length === 0
            ? html`<p class="hint">Nothing behind this figure in this range.</p>`
            : html`<div class="table-wrap"><table data-testid="figure-rows">
                <caption class="sr-only">${about.title}</caption>
                <thead><tr>${data.columns.map((column) => html`<th scope="col">${humanize(column)}</th>`)}</tr></thead>
                <tbody>${data.list.map((row) => html`<tr>${data.columns.map((column) => html`<td><${Cell} column=${column} value=${row[column]} /></td>`)}</tr>`)}</tbody>
              </table></div>`}
          <${Pager} page=${data} onPage=${setPage} label="Pages of records" />
        </section>`}`;
}
