// The dashboard: counts from the list actions' totals, this month's revenue summed from paid invoices, and key
// checks per day summed over the active API key orders. Nothing is added to the backend for it.
import { html } from 'htm/preact';
import { allPages, call } from '../lib/api.ts';
import { formatNumber, sumMoney } from '../lib/format.ts';
import { Link } from '../lib/router.ts';
import { ErrorMessage, Loading, UsageChart, useLoad } from '../lib/ui.ts';
import { currentPeriod } from '../lib/types.ts';

/** At most this many active key orders are summed for the chart (one usage call each). */
const MAX_KEY_ORDERS = 50;

/** A count with a link to its list; `count` asks the list for one row and reads its total. */
function Stat({ title, count, href }: { title: string; count: () => Promise<number>; href: string }) {
  const total = useLoad(count, []);
  return html`<section class="stat" aria-busy=${total.loading ? 'true' : 'false'}>
    <h2>${title}</h2>
    <p class="value">${total.data !== undefined ? formatNumber(total.data) : total.loading ? '…' : '—'}</p>
    <${ErrorMessage} error=${total.error} />
    <${Link} href=${href}>See all<//>
  </section>`;
}

function Revenue() {
  const { from } = currentPeriod();
  const revenue = useLoad(async () => {
    const paid = await allPages('admin/invoice/get_list', { status: 'paid' });
    const byCurrency = new Map<string, string[]>();
    for (const invoice of paid.list) {
      if (invoice.paid_at === null || invoice.paid_at.slice(0, 10) < from) continue;
      const currency = invoice.currency ?? '';
      byCurrency.set(currency, [...(byCurrency.get(currency) ?? []), invoice.total]);
    }
    return { sums: [...byCurrency].map(([currency, totals]) => `${sumMoney(totals)} ${currency}`.trim()), complete: paid.complete };
  }, []);
  return html`<section class="stat" aria-busy=${revenue.loading ? 'true' : 'false'}>
    <h2>Revenue this month</h2>
    <p class="value">${revenue.data ? (revenue.data.sums.length > 0 ? revenue.data.sums.join(' + ') : '0') : revenue.loading ? '…' : '—'}</p>
    ${revenue.data && !revenue.data.complete ? html`<p class="hint">Only the first 10,000 paid invoices were counted.</p>` : null}
    <${ErrorMessage} error=${revenue.error} />
    <${Link} href="/admin/invoices?status=paid">Paid invoices<//>
  </section>`;
}

async function mapLimited<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next;
      next += 1;
      out[index] = await work(items[index]!);
    }
  });
  await Promise.all(workers);
  return out;
}

function KeyChecks() {
  const period = currentPeriod();
  const checks = useLoad(async () => {
    const orders = await call('admin/order/get_list', { status: 'active', type: 'apikey', per_page: MAX_KEY_ORDERS });
    const usages = await mapLimited(orders.list, 4, (order) => call('admin/serviceapikey/usage', { order_id: order.id }));
    const days = new Map<string, number>();
    let total = 0;
    for (const usage of usages) {
      total += usage.total;
      for (const day of usage.days) days.set(day.date, (days.get(day.date) ?? 0) + day.count);
    }
    return { days: [...days].map(([date, count]) => ({ date, count })), total, counted: orders.list.length, of: orders.total };
  }, []);
  return html`<section class="card" aria-labelledby="checks-title">
    <h2 id="checks-title">Key checks per day</h2>
    <${ErrorMessage} error=${checks.error} />
    ${checks.data === undefined && checks.loading ? html`<${Loading} label="Adding up key usage…" />` : null}
    ${checks.data !== undefined
      ? html`<${UsageChart} title="Checks of all active keys this month" days=${checks.data.days} total=${checks.data.total} from=${period.from} to=${period.to} />
          <p class="hint">
            Summed over ${formatNumber(checks.data.counted)} active API key order${checks.data.counted === 1 ? '' : 's'}${checks.data.of > checks.data.counted
              ? ` (the first ${MAX_KEY_ORDERS} of ${formatNumber(checks.data.of)}; open a key for its own figures)`
              : ''}.
          </p>`
      : null}
  </section>`;
}

export function DashboardPage() {
  return html`<h1>Dashboard</h1>
    <div class="stats">
      <${Stat} title="Clients" count=${async () => (await call('admin/client/get_list', { per_page: 1 })).total} href="/admin/clients" />
      <${Stat} title="Active orders" count=${async () => (await call('admin/order/get_list', { status: 'active', per_page: 1 })).total} href="/admin/orders?status=active" />
      <${Stat} title="Unpaid invoices" count=${async () => (await call('admin/invoice/get_list', { status: 'unpaid', per_page: 1 })).total} href="/admin/invoices?status=unpaid" />
      <${Revenue} />
    </div>
    <${KeyChecks} />`;
}
