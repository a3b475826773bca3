// The client's orders and invoices, and one invoice with the payment instructions.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { call, type Page } from '../lib/api.ts';
import { formatDate, formatDateTime, formatMoney } from '../lib/format.ts';
import { Link, navigate } from '../lib/router.ts';
import { Badge, Button, DefinitionList, ErrorMessage, Loading, Pager, useAction, useLoad } from '../lib/ui.ts';
import type { Gateway, Invoice, Order } from '../lib/types.ts';
import { periodLabel, periods } from './shop.ts';
import { PayByCard, PaymentReturn } from './payments.ts';

export function OrdersPage() {
  const [page, setPage] = useState(1);
  const orders = useLoad(() => call<Page<Order>>('client/order/get_list', { page, per_page: 20 }), [page]);
  const labels = useLoad(periods, []);
  const action = useAction();
  const [renewing, setRenewing] = useState<number | null>(null);
  const renew = (order: Order): void => {
    setRenewing(order.id);
    void action
      .run(async () => {
        const invoiceId = await call<number>('client/invoice/renewal_invoice', { order_id: order.id });
        navigate(`/invoices/${invoiceId}`);
      })
      .finally(() => setRenewing(null));
  };
  return html`<h1>Orders</h1>
    <${ErrorMessage} error=${orders.error} />
    <${ErrorMessage} error=${action.error} />
    ${orders.data === undefined && orders.loading ? html`<${Loading} />` : null}
    ${orders.data !== undefined && orders.data.list.length === 0 ? html`<p>No orders yet. <${Link} href="/">See the plans<//>.</p>` : null}
    ${orders.data !== undefined && orders.data.list.length > 0
      ? html`<div class="table-wrap" aria-busy=${orders.loading ? 'true' : 'false'}>
          <table>
            <caption class="sr-only">Your orders</caption>
            <thead><tr><th scope="col">#</th><th scope="col">Plan</th><th scope="col">Period</th><th scope="col" class="num">Price</th><th scope="col">Status</th><th scope="col">Expires</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
            <tbody>
              ${orders.data.list.map(
                (order) => html`<tr>
                  <td>${order.id}</td>
                  <td>${order.title}</td>
                  <td>${periodLabel(labels.data, order.period)}</td>
                  <td class="num">${formatMoney(order.price, order.currency)}</td>
                  <td><${Badge} status=${order.status} />${order.reason ? html` <small>${order.reason}</small>` : null}</td>
                  <td>${formatDate(order.expires_at)}</td>
                  <td class="actions">
                    ${order.type === 'apikey' && order.status !== 'pending_setup' ? html`<${Link} href="/keys">API key<//>` : null}
                    ${order.unpaid_invoice_id ? html`<${Link} href=${`/invoices/${order.unpaid_invoice_id}`}>Pay invoice<//>` : null}
                    ${!order.unpaid_invoice_id && order.period !== null && (order.status === 'active' || order.status === 'suspended')
                      ? html`<${Button} busy=${renewing === order.id} onClick=${() => renew(order)} label=${`Renew order ${order.id}`}>Renew<//>`
                      : null}
                  </td>
                </tr>`,
              )}
            </tbody>
          </table>
        </div>`
      : null}
    <${Pager} page=${orders.data} onPage=${setPage} label="Order pages" />`;
}

export function InvoicesPage() {
  const [page, setPage] = useState(1);
  const invoices = useLoad(() => call<Page<Invoice>>('client/invoice/get_list', { page, per_page: 20 }), [page]);
  return html`<h1>Invoices</h1>
    <${ErrorMessage} error=${invoices.error} />
    ${invoices.data === undefined && invoices.loading ? html`<${Loading} />` : null}
    ${invoices.data !== undefined && invoices.data.list.length === 0 ? html`<p>No invoices yet.</p>` : null}
    ${invoices.data !== undefined && invoices.data.list.length > 0
      ? html`<div class="table-wrap" aria-busy=${invoices.loading ? 'true' : 'false'}>
          <table>
            <caption class="sr-only">Your invoices</caption>
            <thead><tr><th scope="col">Invoice</th><th scope="col">Issued</th><th scope="col">Due</th><th scope="col" class="num">Total</th><th scope="col">Status</th></tr></thead>
            <tbody>
              ${invoices.data.list.map(
                (invoice) => html`<tr>
                  <td><${Link} href=${`/invoices/${invoice.id}`}>Invoice #${invoice.id}<//></td>
                  <td>${formatDate(invoice.created_at)}</td>
                  <td>${formatDate(invoice.due_at)}</td>
                  <td class="num">${formatMoney(invoice.total, invoice.currency)}</td>
                  <td><${Badge} status=${invoice.status} /></td>
                </tr>`,
              )}
            </tbody>
          </table>
        </div>`
      : null}
    <${Pager} page=${invoices.data} onPage=${setPage} label="Invoice pages" />`;
}

function PaymentInstructions({ invoice }: { invoice: Invoice }) {
  const gateways = useLoad(() => call<Gateway[]>('guest/invoice/gateways'), []);
  return html`<section class="card" aria-labelledby="pay-title">
    <h2 id="pay-title">How to pay</h2>
    <p>Pay <strong>${formatMoney(invoice.total, invoice.currency)}</strong> and quote the reference <strong>Invoice #${invoice.id}</strong>. Your order starts as soon as the payment is confirmed.</p>
    <${ErrorMessage} error=${gateways.error} />
    ${gateways.loading && gateways.data === undefined ? html`<${Loading} label="Loading the payment options…" />` : null}
    ${gateways.data?.map(
      (gateway) => html`<div>
        <h3>${gateway.title}</h3>
        ${gateway.instructions ? html`<div class="instructions">${gateway.instructions}</div>` : html`<p>No further instructions.</p>`}
      </div>`,
    )}
  </section>`;
}

export function InvoicePage({ id }: { id: number }) {
  const invoice = useLoad(() => call<Invoice>('client/invoice/get', { id }), [id]);
  const data = invoice.data;
  return html`<h1>Invoice #${id}</h1>
    <p><${Link} href="/invoices">All invoices<//></p>
    <${ErrorMessage} error=${invoice.error} />
    ${data === undefined && invoice.loading ? html`<${Loading} />` : null}
    ${data !== undefined
      ? html`<${PaymentReturn} status=${data.status} reload=${invoice.reload} />
          <section class="card" aria-labelledby="invoice-summary">
            <h2 id="invoice-summary">Summary</h2>
            <${DefinitionList}
              items=${[
                ['Status', html`<${Badge} status=${data.status} />`],
                ['Total', formatMoney(data.total, data.currency)],
                ['Issued', formatDateTime(data.created_at)],
                ['Due', formatDateTime(data.due_at)],
                ['Paid', formatDateTime(data.paid_at)],
              ]}
            />
            <div class="table-wrap">
              <table>
                <caption class="sr-only">Invoice items</caption>
                <thead><tr><th scope="col">Item</th><th scope="col" class="num">Qty</th><th scope="col" class="num">Price</th><th scope="col" class="num">Total</th></tr></thead>
                <tbody>
                  ${data.items.map(
                    (item) => html`<tr><td>${item.title}${item.task === 'renew' ? ' (renewal)' : ''}</td><td class="num">${item.quantity}</td><td class="num">${formatMoney(item.price, data.currency)}</td><td class="num">${formatMoney(item.total, data.currency)}</td></tr>`,
                  )}
                </tbody>
                <tfoot>
                  <tr><th scope="row" colspan="3">Subtotal</th><td class="num">${formatMoney(data.subtotal, data.currency)}</td></tr>
                  <tr><th scope="row" colspan="3">Total</th><td class="num"><strong>${formatMoney(data.total, data.currency)}</strong></td></tr>
                </tfoot>
              </table>
            </div>
          </section>
          <${PayByCard} invoice=${data} />
          ${data.status === 'unpaid' ? html`<${PaymentInstructions} invoice=${data} />` : null}
          ${data.status === 'paid' ? html`<p>Thank you, this invoice is paid. <${Link} href="/keys">See your API keys<//>.</p>` : null}`
      : null}`;
}
