// The key checks chart under the dashboard's figures: this month's checks of the active API key orders, per day
// (the first 50 orders; each key's own page has its figures). Kept from the first dashboard until key analytics
// (issue 25 items 5–6) give one series for all keys.
import { html } from 'htm/preact';
import { call } from '../lib/api.ts';
import { formatNumber } from '../lib/format.ts';
import { ErrorMessage, Loading, UsageChart, useLoad } from '../lib/ui.ts';
import { currentPeriod } from '../lib/types.ts';

/** At most this many active key orders are summed for the chart (one usage call each). */
const MAX_KEY_ORDERS = 50;

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

export function KeyChecks() {
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
