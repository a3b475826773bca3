// The admin home (issue 25): the business at a glance for a range (default the last 30 days), each figure beside its
// value for the range before, with a link to the records behind it and their CSV. Every figure comes computed from
// admin/stats/dashboard (grouped SQL on the server); the page sums nothing. Money is shown per currency and, when
// more than one currency is in play, as the server's total in the default currency, with how it was converted.
import { html } from 'htm/preact';
import type { VNode } from 'preact';
import { useState } from 'preact/hooks';
import { call, readCookie, type Result } from '../lib/api.ts';
import { formatMoney, formatNumber } from '../lib/format.ts';
import { Link, navigate, useLocation } from '../lib/router.ts';
import { ErrorMessage, Loading, useId, useLoad } from '../lib/ui.ts';
import { DashboardChart, type ChartSeries } from './dashboard-chart.ts';
import { KeyChecks } from './key-checks.ts';

type Dashboard = Result<'admin/stats/dashboard'>;
type Range = { from?: string; to?: string };

/** The range in the page's address (?from=&to=), so a figure's link and the back button keep it. */
export function useRange(): Range {
  const { query } = useLocation();
  const from = query.get('from') ?? '';
  const to = query.get('to') ?? '';
  return { ...(from !== '' && { from }), ...(to !== '' && { to }) };
}

const rangeQuery = (range: Range): string => {
  const query = new URLSearchParams(range).toString();
  return query === '' ? '' : `?${query}`;
};

/** "Download CSV" of a figure's records: a form posting the range and the CSRF token (never in a URL). */
export function FigureCsv({ figure, range, label }: { figure: string; range: Range; label: string }) {
  return html`<form class="inline-export" method="post" action=${`/api/admin/export/dashboard_${figure}.csv`} aria-label=${`CSV of ${label}`}>
    <input type="hidden" name="CSRFToken" value=${readCookie('csrf_token')} />
    ${Object.entries(range).map(([name, value]) => html`<input type="hidden" name=${name} value=${value} />`)}
    <button type="submit" class="link">CSV</button>
  </form>`;
}

/** "+12% against 1,000.00 USD before", or the plain previous value when there is nothing to divide by. */
function change(now: number, before: number, shown: string): string {
  if (before === 0) return now === 0 ? `same as before (${shown})` : `up from ${shown} before`;
  const percent = Math.round(((now - before) / Math.abs(before)) * 100);
  return `${percent > 0 ? '+' : ''}${percent}% against ${shown} before`;
}

function Figure({ title, figure, range, children, testId }: { title: string; figure: string; range: Range; children: VNode | VNode[] | string; testId: string }) {
  const id = useId('figure');
  return html`<section class="stat" aria-labelledby=${id} data-testid=${testId}>
    <h2 id=${id}>${title}</h2>
    ${children}
    <p class="figure-links"><${Link} href=${`/admin/dashboard/${figure}${rangeQuery(range)}`}>See the list<//> · <${FigureCsv} figure=${figure} range=${range} label=${title} /></p>
  </section>`;
}

/** One line per currency: the amount, and how it compares with the range before. */
function MoneyLines({ rows }: { rows: ReadonlyArray<{ currency: string; amount: string; previous: string }> }) {
  if (rows.length === 0) return html`<p class="value">0</p><p class="hint">Nothing in this range or the one before.</p>`;
  return html`${rows.map(
    (row) => html`<p class="value">${formatMoney(row.amount, row.currency)}</p>
      <p class="hint">${change(Number(row.amount), Number(row.previous), formatMoney(row.previous, row.currency))}</p>`,
  )}`;
}

/** True when the figure has money in a currency other than the default: its default-currency total then says something. */
const mixed = (data: Dashboard, rows: ReadonlyArray<{ currency: string }>): boolean => rows.some((row) => row.currency !== data.default_currency);

/** "All currencies: 1,234.00 USD", under a figure whose rows are in several currencies. */
function AllCurrencies({ data, rows, amount, previous }: { data: Dashboard; rows: ReadonlyArray<{ currency: string }>; amount: string; previous?: string }) {
  if (!mixed(data, rows)) return null;
  const code = data.default_currency;
  return html`<p class="hint all-currencies">All currencies: <strong>${formatMoney(amount, code)}</strong>${previous === undefined ? '' : `; ${change(Number(amount), Number(previous), formatMoney(previous, code))}`}</p>`;
}

function CountLine({ count, previous }: { count: number; previous: number }) {
  return html`<p class="value">${formatNumber(count)}</p><p class="hint">${change(count, previous, formatNumber(previous))}</p>`;
}

function Figures({ data, range }: { data: Dashboard; range: Range }) {
  const failed = data.failed_payments;
  const total = data.in_default_currency;
  return html`<div class="stats">
    <${Figure} title="MRR" figure="mrr" range=${range} testId="figure-mrr"><${MoneyLines} rows=${data.mrr} /><${AllCurrencies} data=${data} rows=${data.mrr} ...${total.mrr} /><//>
    <${Figure} title="ARR" figure="mrr" range=${range} testId="figure-arr"><${MoneyLines} rows=${data.arr} /><${AllCurrencies} data=${data} rows=${data.arr} ...${total.arr} /><//>
    <${Figure} title="Net revenue" figure="revenue" range=${range} testId="figure-net-revenue">
      ${data.net_revenue.length === 0
        ? html`<p class="value">0</p>`
        : data.net_revenue.map(
            (row) => html`<p class="value">${formatMoney(row.net, row.currency)}</p>
              <p class="hint">paid ${row.paid} − refunds ${row.refunds} − credit notes ${row.credit_notes}; ${change(Number(row.net), Number(row.previous_net), formatMoney(row.previous_net, row.currency))}</p>`,
          )}
      <${AllCurrencies} data=${data} rows=${data.net_revenue} amount=${total.net_revenue.net} previous=${total.net_revenue.previous_net} />
      <p class="hint"><${Link} href=${`/admin/dashboard/refunds${rangeQuery(range)}`}>Refunds<//> · <${Link} href=${`/admin/dashboard/credit_notes${rangeQuery(range)}`}>Credit notes<//></p>
    <//>
    <${Figure} title="Usage revenue" figure="usage" range=${range} testId="figure-usage"><${MoneyLines} rows=${data.usage_revenue} /><${AllCurrencies} data=${data} rows=${data.usage_revenue} ...${total.usage_revenue} /><//>
    <${Figure} title="Top-ups" figure="top_ups" range=${range} testId="figure-top-ups"><${MoneyLines} rows=${data.top_ups} /><${AllCurrencies} data=${data} rows=${data.top_ups} ...${total.top_ups} /><//>
    <${Figure} title="Clients" figure="new_customers" range=${range} testId="figure-new-customers">
      <p class="value">${formatNumber(data.new_customers.count)} new</p>
      <p class="hint">${change(data.new_customers.count, data.new_customers.previous, formatNumber(data.new_customers.previous))}</p>
    <//>
    <${Figure} title="Churned customers" figure="churned_customers" range=${range} testId="figure-churned"><${CountLine} ...${data.churned_customers} /><//>
    <${Figure} title="Failed payments" figure="failed_payments" range=${range} testId="figure-failed">
      <p class="value">${formatNumber(failed.count)}</p>
      <p class="hint">${formatNumber(failed.recovered)} recovered; before: ${formatNumber(failed.previous_count)} failed, ${formatNumber(failed.previous_recovered)} recovered</p>
      ${failed.amounts.map((row) => html`<p class="hint">${formatMoney(row.failed, row.currency)} failed, ${formatMoney(row.recovered, row.currency)} recovered</p>`)}
      <${AllCurrencies} data=${data} rows=${failed.amounts} amount=${total.failed_payments.failed} />
    <//>
    <${Figure} title="Cancellations scheduled" figure="cancellations_scheduled" range=${range} testId="figure-cancellations">
      <p class="value">${formatNumber(data.cancellations_scheduled.count)}</p>
      ${data.cancellations_scheduled.amounts.map((row) => html`<p class="hint">${formatMoney(row.mrr, row.currency)} MRR ends with them</p>`)}
      <${AllCurrencies} data=${data} rows=${data.cancellations_scheduled.amounts} amount=${total.cancellations_scheduled.mrr} />
    <//>
    <${Figure} title="Renewals in the next 30 days" figure="renewals_due" range=${range} testId="figure-renewals">
      <p class="value">${formatNumber(data.renewals_due.count)}</p>
      ${data.renewals_due.amounts.map((row) => html`<p class="hint">${formatMoney(row.amount, row.currency)} to be invoiced</p>`)}
      <${AllCurrencies} data=${data} rows=${data.renewals_due.amounts} amount=${total.renewals_due.amount} />
    <//>
    <${Figure} title="Projected overage" figure="projected_overage" range=${range} testId="figure-overage">
      ${data.projected_overage.amounts.length === 0
        ? html`<p class="value">0</p>`
        : data.projected_overage.amounts.map((row) => html`<p class="value">${formatMoney(row.amount, row.currency)}</p>`)}
      <${AllCurrencies} data=${data} rows=${data.projected_overage.amounts} amount=${total.projected_overage.amount} />
      <p class="hint">${formatNumber(data.projected_overage.orders)} order${data.projected_overage.orders === 1 ? '' : 's'} past their included usage this period</p>
    <//>
  </div>`;
}

const NET_COLOR = '#5a3e9b';
const PAID_COLOR = '#0b5cad';

/** The 12 months of all currencies together, in the default currency (the server's conversion). */
function AllCurrenciesChart({ data }: { data: Dashboard }) {
  const code = data.default_currency;
  const rows = data.in_default_currency.revenue_by_month;
  const labels = rows.map((row) => row.month);
  const last = rows[rows.length - 1];
  const series: ChartSeries[] = [
    { label: `Net (all, in ${code})`, values: rows.map((row) => Number(row.net)), texts: rows.map((row) => row.net), kind: 'bars', color: NET_COLOR },
    { label: `Paid (all, in ${code})`, values: rows.map((row) => Number(row.paid)), texts: rows.map((row) => row.paid), kind: 'line', color: PAID_COLOR },
  ];
  return html`<${DashboardChart}
    title=${`Net revenue by month, all currencies in ${code}`}
    summary=${`12 months to ${labels[labels.length - 1] ?? ''}; this month ${last?.net ?? '0'} ${code} net of ${last?.paid ?? '0'} paid, every currency converted.`}
    labels=${labels}
    series=${series}
    testId="revenue-chart-all"
  />`;
}

/** Net revenue by month (bars) with what was paid (line): all currencies together when there are several, then one chart per currency. */
function RevenueCharts({ data }: { data: Dashboard }) {
  const currencies = [...new Set(data.revenue_by_month.map((row) => row.currency))];
  if (currencies.length === 0) return html`<p class="hint">No revenue in the last 12 months yet.</p>`;
  return html`${mixed(data, currencies.map((currency) => ({ currency }))) ? html`<${AllCurrenciesChart} data=${data} />` : null}
  ${currencies.map((currency) => {
    const rows = data.revenue_by_month.filter((row) => row.currency === currency);
    const labels = rows.map((row) => row.month);
    const series: ChartSeries[] = [
      { label: `Net (${currency})`, values: rows.map((row) => Number(row.net)), texts: rows.map((row) => row.net), kind: 'bars', color: NET_COLOR },
      { label: `Paid (${currency})`, values: rows.map((row) => Number(row.paid)), texts: rows.map((row) => row.paid), kind: 'line', color: PAID_COLOR },
    ];
    const last = rows[rows.length - 1];
    return html`<${DashboardChart}
      key=${currency}
      title=${`Net revenue by month, ${currency}`}
      summary=${`12 months to ${labels[labels.length - 1] ?? ''}; this month ${last?.net ?? '0'} ${currency} net of ${last?.paid ?? '0'} paid.`}
      labels=${labels}
      series=${series}
      testId=${`revenue-chart-${currency}`}
    />`;
  })}`;
}

function TopCustomers({ data, range }: { data: Dashboard; range: Range }) {
  const code = data.default_currency;
  const converted = mixed(data, data.top_customers);
  return html`<section class="card" aria-labelledby="top-customers">
    <h2 id="top-customers">Top customers by revenue</h2>
    ${converted ? html`<p class="hint">Ranked by what they paid in ${code}, at the rate stored on each invoice.</p>` : null}
    ${data.top_customers.length === 0
      ? html`<p class="hint">Nobody paid anything in this range.</p>`
      : html`<div class="table-wrap"><table data-testid="top-customers">
          <thead><tr><th scope="col">Client</th><th scope="col" class="num">Paid</th>${converted ? html`<th scope="col" class="num">In ${code}</th>` : null}</tr></thead>
          <tbody>
            ${data.top_customers.map(
              (row) => html`<tr><td><${Link} href=${`/admin/clients/${row.client_id}`}>${row.name || row.email || `Client #${row.client_id}`}<//></td><td class="num">${formatMoney(row.amount, row.currency)}</td>${converted ? html`<td class="num">${formatMoney(row.default_amount, code)}</td>` : null}</tr>`,
            )}
          </tbody>
        </table></div>`}
    <p class="figure-links"><${Link} href=${`/admin/dashboard/top_customers${rangeQuery(range)}`}>See the list<//> · <${FigureCsv} figure="top_customers" range=${range} label="Top customers" /></p>
  </section>`;
}

function RangeForm({ range, data }: { range: Range; data: Dashboard | undefined }) {
  const [from, setFrom] = useState(range.from ?? data?.from ?? '');
  const [to, setTo] = useState(range.to ?? data?.to ?? '');
  const submit = (event: Event): void => {
    event.preventDefault();
    navigate(`/admin${rangeQuery({ ...(from !== '' && { from }), ...(to !== '' && { to }) })}`);
  };
  return html`<form class="row range-form" onSubmit=${submit} aria-label="Range">
    <div class="field"><label for="range-from">From</label><input id="range-from" type="date" value=${from || data?.from || ''} onInput=${(e: Event) => setFrom((e.target as HTMLInputElement).value)} /></div>
    <div class="field"><label for="range-to">To</label><input id="range-to" type="date" value=${to || data?.to || ''} onInput=${(e: Event) => setTo((e.target as HTMLInputElement).value)} /></div>
    <button type="submit">Show</button>
  </form>
  ${data !== undefined ? html`<p class="hint" data-testid="range-line">${data.from} to ${data.to}, compared with ${data.previous_from} to ${data.previous_to}.</p>` : null}`;
}

export function DashboardPage() {
  const range = useRange();
  const loaded = useLoad(() => call('admin/stats/dashboard', range), [range.from, range.to]);
  const data = loaded.data;
  return html`<h1>Dashboard</h1>
    <${RangeForm} key=${`${range.from ?? ''}|${range.to ?? ''}|${data === undefined ? 0 : 1}`} range=${range} data=${data} />
    <${ErrorMessage} error=${loaded.error} />
    ${data === undefined ? (loaded.loading ? html`<${Loading} label="Adding up the figures…" />` : null) : html`<div aria-busy=${loaded.loading ? 'true' : 'false'} data-testid="dashboard-figures">
          <${Figures} data=${data} range=${range} />
          ${mixed(data, [...data.net_revenue, ...data.mrr]) ? html`<p class="hint" data-testid="conversion-note">${data.conversion}</p>` : null}
          <section class="card" aria-labelledby="revenue-title">
            <h2 id="revenue-title">Revenue</h2>
            <${RevenueCharts} data=${data} />
          </section>
          <${TopCustomers} data=${data} range=${range} />
        </div>`}
    <${KeyChecks} />`;
}
