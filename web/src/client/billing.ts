// The client's orders and invoices, and one invoice with the payment instructions.
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { call, type Params, type Result } from '../lib/api.ts';
import { formatDate, formatMoney, trialBadge } from '../lib/format.ts';
import { Link, navigate, useLocation } from '../lib/router.ts';
import { announce, Badge, Button, ErrorMessage, Field, Loading, Pager, useAction, useLoad } from '../lib/ui.ts';
import { invoiceReference } from '../../../src/lib/invoice-label.ts';
import { InvoiceDocument, invoiceTitle } from '../lib/invoice-view.ts';
import { CreditNotesList } from '../lib/credit-notes-view.ts';
import type { Invoice, Order } from '../lib/types.ts';
import { periodLabel, periods } from './shop.ts';
import { PayFromBalance } from './wallet.ts';
import { AddCard, isCardGateway, PayByCard, PaymentReturn } from './payments.ts';

export function OrdersPage() {
  const [page, setPage] = useState(1);
  const orders = useLoad(() => call('client/order/get_list', { page, per_page: 20 }), [page]);
  // Back from saving a card: Stripe's confirmation may come after the client, so a trial still waiting is asked again.
  const { query } = useLocation();
  const [polls, setPolls] = useState(0);
  const waiting = query.get('setup') === 'success' && orders.data?.list.some((order) => order.trial_awaiting_card) === true;
  useEffect(() => {
    if (!waiting || polls >= 20) return undefined;
    const timer = setTimeout(() => {
      setPolls(polls + 1);
      orders.reload();
    }, 1000);
    return () => clearTimeout(timer);
  }, [waiting, polls]);
  const labels = useLoad(periods, []);
  const action = useAction();
  const [renewing, setRenewing] = useState<number | null>(null);
  const renew = (order: Order): void => {
    setRenewing(order.id);
    void action
      .run(async () => {
        const invoiceId = await call('client/invoice/renewal_invoice', { order_id: order.id });
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
                  <td>${order.title}${order.usage_terms ? html`<br /><small class="usage-terms" data-testid="order-usage-terms">${order.usage_terms}</small>` : null}</td>
                  <td>${periodLabel(labels.data, order.period)}</td>
                  <td class="num">${formatMoney(order.price, order.currency)}</td>
                  <td>
                    <${Badge} status=${order.status} />${order.reason ? html` <small>${order.reason}</small>` : null}
                    ${order.cancel_at_period_end ? html` <small>Ends ${formatDate(order.expires_at)}</small>` : null}
                    ${trialBadge(order) !== null ? html` <span class="badge badge-trial" data-testid="order-trial-badge">${trialBadge(order)}</span>` : null}
                    ${order.trial_awaiting_card ? html` <span class="badge badge-trial" data-testid="order-trial-waiting">Free trial starts once you add a card</span><${AddCard} returnTo="orders" label="Add a card" />` : null}
                    ${order.next_product_id !== null ? html` <small>Plan change at renewal</small>` : null}
                  </td>
                  <td>${formatDate(order.expires_at)}</td>
                  <td class="actions">
                    ${order.type === 'apikey' && order.status !== 'pending_setup' ? html`<${Link} href="/keys">API key<//>` : null}
                    ${order.unpaid_invoice_id ? html`<${Link} href=${`/invoices/${order.unpaid_invoice_id}`}>Pay invoice<//>` : null}
                    ${!order.unpaid_invoice_id && order.period !== null && (order.status === 'active' || order.status === 'suspended') && !order.cancel_at_period_end
                      ? html`<${Button} busy=${renewing === order.id} onClick=${() => renew(order)} label=${`Renew order ${order.id}`}>Renew<//>`
                      : null}
                    <${OrderSelfService} order=${order} onDone=${orders.reload} />
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
  const invoices = useLoad(() => call('client/invoice/get_list', { page, per_page: 20 }), [page]);
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
                  <td><${Link} href=${`/invoices/${invoice.id}`}>${invoiceTitle(invoice)}<//></td>
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

/** The manual ways to pay (bank transfer…); the card gateway has its own "Pay by card" section, not instructions. */
function PaymentInstructions({ invoice }: { invoice: Invoice }) {
  const gateways = useLoad(() => call('guest/invoice/gateways'), []);
  const manual = gateways.data?.filter((gateway) => !isCardGateway(gateway));
  if (manual !== undefined && manual.length === 0) return null;
  return html`<section class="card" aria-labelledby="pay-title" data-testid="how-to-pay">
    <h2 id="pay-title">How to pay</h2>
    <p>Pay <strong>${formatMoney(invoice.amount_due, invoice.currency)}</strong> and quote the reference <strong>${invoiceReference(invoice)}</strong>. Your order starts as soon as the payment is confirmed.</p>
    <${ErrorMessage} error=${gateways.error} />
    ${gateways.loading && gateways.data === undefined ? html`<${Loading} label="Loading the payment options…" />` : null}
    ${manual?.map(
      (gateway) => html`<div>
        <h3>${gateway.title}</h3>
        ${gateway.instructions ? html`<div class="instructions">${gateway.instructions}</div>` : html`<p>No further instructions.</p>`}
      </div>`,
    )}
  </section>`;
}

export function InvoicePage({ id }: { id: number }) {
  const invoice = useLoad(() => call('client/invoice/get', { id }), [id]);
  const data = invoice.data;
  return html`<h1>${data === undefined ? 'Invoice' : invoiceTitle(data)}</h1>
    <p><${Link} href="/invoices">All invoices<//></p>
    <${ErrorMessage} error=${invoice.error} />
    ${data === undefined && invoice.loading ? html`<${Loading} />` : null}
    ${data !== undefined
      ? html`<${PaymentReturn} status=${data.status} reload=${invoice.reload} />
          <${InvoiceDocument} invoice=${data} />
          <${CreditNotesList} invoice=${data} area="client" />
          <${PayFromBalance} invoice=${data} onPaid=${invoice.reload} />
          <${PayByCard} invoice=${data} />
          ${data.status === 'unpaid' ? html`<${PaymentInstructions} invoice=${data} />` : null}
          ${data.status === 'paid' ? html`<p>Thank you, this invoice is paid. <${Link} href="/keys">See your API keys<//>.</p>` : null}`
      : null}`;
}

/** The invoice behind a guest link (`/invoice/<hash>`), e.g. from an e-mail, without logging in. */
export function GuestInvoicePage({ hash }: { hash: string }) {
  const invoice = useLoad(() => call('guest/invoice/get', { hash }), [hash]);
  const data = invoice.data;
  return html`<h1>${data === undefined ? 'Invoice' : invoiceTitle(data)}</h1>
    <${ErrorMessage} error=${invoice.error} />
    ${data === undefined && invoice.loading ? html`<${Loading} />` : null}
    ${data !== undefined
      ? html`<${PaymentReturn} status=${data.status} reload=${invoice.reload} />
          <${InvoiceDocument} invoice=${data} />
          <${PayByCard} invoice=${data} />
          ${data.status === 'unpaid' ? html`<${PaymentInstructions} invoice=${data} />` : null}`
      : null}`;
}

/**
 * Cancel at period end, take that back, or go to the plan change page (CONTRACT §8 self-service); an order whose trial
 * waits for a card can be cancelled at once (it has no period to run to).
 */
function OrderSelfService({ order, onDone }: { order: Order; onDone: () => void }) {
  const action = useAction();
  const running = order.status === 'active' && order.period !== null;
  const run = (path: 'client/order/cancel' | 'client/order/uncancel', message: string): void => {
    void action.run(async () => {
      await call(path, { id: order.id });
      announce(message);
      onDone();
    });
  };
  if (order.trial_awaiting_card) {
    return html`<${Button} busy=${action.busy} onClick=${() => run('client/order/cancel', 'The order is cancelled')} label=${`Cancel order ${order.id}`}>Cancel order<//>
      <${ErrorMessage} error=${action.error} />`;
  }
  if (!running) return null;
  return html`${order.cancel_at_period_end
      ? html`<${Button} busy=${action.busy} onClick=${() => run('client/order/uncancel', 'The order continues')} label=${`Keep order ${order.id}`}>Keep order<//>`
      : html`<${Link} href=${`/orders/${order.id}/plan`}>Change plan<//>
          <${Button} busy=${action.busy} onClick=${() => run('client/order/cancel', 'The order ends at the end of its period')} label=${`Cancel at period end: order ${order.id}`}>Cancel at period end<//>`}
    <${ErrorMessage} error=${action.error} />`;
}

type PlanChange = Result<'client/order/change_plan'>;

/** Choose another plan of the same kind: upgrades are invoiced now (prorated), downgrades apply at renewal. */
export function ChangePlanPage({ id }: { id: number }) {
  const order = useLoad(() => call('client/order/get', { id }), [id]);
  const plans = useLoad(() => call('client/order/upgradables', { id }), [id]);
  const labels = useLoad(periods, []);
  const [choice, setChoice] = useState('');
  const [done, setDone] = useState<PlanChange | null>(null);
  const action = useAction();
  const options: Array<[string, string]> = [['', 'Choose a plan']];
  for (const plan of plans.data ?? []) {
    for (const [period, price] of Object.entries(plan.pricing?.recurrent ?? {})) {
      options.push([`${plan.id}:${period}`, `${plan.title} — ${formatMoney(price.price, order.data?.currency)} ${periodLabel(labels.data, period).toLowerCase()}`]);
    }
  }
  const submit = (event: Event): void => {
    event.preventDefault();
    const [productId, period] = choice.split(':');
    void action.run(async () => {
      // Nothing chosen: period is left out, and the server's 422 names it under the field.
      const change = { id, product_id: Number(productId), ...(period !== undefined && { period }) } as Params<'client/order/change_plan'>;
      const result = await call('client/order/change_plan', change);
      setDone(result);
      if (result.invoice_id !== null) navigate(`/invoices/${result.invoice_id}`);
    });
  };
  return html`<h1>Change the plan of order #${id}</h1>
    <p><${Link} href="/orders">All orders<//></p>
    <${ErrorMessage} error=${order.error ?? plans.error} />
    ${order.data !== undefined ? html`<p>Current plan: <strong>${order.data.title}</strong>, ${formatMoney(order.data.price, order.data.currency)} ${periodLabel(labels.data, order.data.period).toLowerCase()}, until ${formatDate(order.data.expires_at)}.</p>` : null}
    <p>A more expensive plan starts at once: you pay its price less the unused part of your current period. A cheaper plan starts at your next renewal. Your API key stays the same.</p>
    ${plans.data !== undefined && plans.data.length === 0 ? html`<p>There is no other plan to move to.</p>` : null}
    ${plans.data !== undefined && plans.data.length > 0
      ? html`<form onSubmit=${submit} class="card">
          <${Field} label="New plan" name="product_id" value=${choice} onInput=${setChoice} options=${options} error=${action.error} />
          <${ErrorMessage} error=${action.error} />
          <${Button} type="submit" variant="primary" busy=${action.busy} disabled=${choice === ''}>Change plan<//>
        </form>`
      : null}
    ${done !== null && done.invoice_id === null
      ? html`<p role="status">${done.effective === 'at_renewal' ? 'The new plan starts at your next renewal.' : 'Your plan has changed.'}</p>`
      : null}`;
}
