// The portal's "Usage" page (issue 25, scope `usage`): each API key order's uses this month and its meters, without
// the keys themselves (they are the `keys` scope's). The client area shows the same figures on its keys page.
import { html } from 'htm/preact';
import { call } from '../lib/api.ts';
import { ErrorMessage, Loading, UsageChart, useLoad } from '../lib/ui.ts';
import { currentPeriod, type Order } from '../lib/types.ts';
import { MeterCharts } from '../lib/meter-charts.ts';

function OrderUsage({ order }: { order: Order }) {
  const usage = useLoad(() => call('client/serviceapikey/usage', { order_id: order.id }), [order.id]);
  const period = currentPeriod();
  const titleId = `usage-title-${order.id}`;
  return html`<article class="card" aria-labelledby=${titleId} data-testid=${`usage-${order.id}`}>
    <h2 id=${titleId}>${order.title} <small>(order #${order.id})</small></h2>
    <${ErrorMessage} error=${usage.error} />
    ${usage.data === undefined && usage.loading ? html`<${Loading} label="Loading usage…" />` : null}
    ${usage.data !== undefined
      ? html`<${UsageChart} title="Checks, all keys" days=${usage.data.days} total=${usage.data.total} from=${period.from} to=${period.to} />
          <${MeterCharts} meters=${usage.data.meters} currency=${order.currency} />`
      : null}
  </article>`;
}

export function PortalUsagePage() {
  const orders = useLoad(() => call('client/order/get_list', { per_page: 100 }), []);
  const keyOrders = (orders.data?.list ?? []).filter((order) => order.type === 'apikey' && order.status !== 'canceled');
  return html`<h1>Usage</h1>
    <${ErrorMessage} error=${orders.error} />
    ${orders.data === undefined && orders.loading ? html`<${Loading} label="Loading your plans…" />` : null}
    ${orders.data !== undefined && keyOrders.length === 0 ? html`<p>No plan with API keys yet.</p>` : null}
    ${keyOrders.map((order) => html`<${OrderUsage} key=${order.id} order=${order} />`)}`;
}
