// Card payments in the client area (CONTRACT §9): "Pay by card" on unpaid invoices (client area and the guest invoice
// page, both in billing.ts), the pages Stripe returns to (they show the invoice's real state and keep asking until the webhook has
// arrived), saved cards with remove, and the auto-pay switch.
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { call } from '../lib/api.ts';
import { formatMoney } from '../lib/format.ts';
import { useLocation } from '../lib/router.ts';
import { Button, Checkbox, Confirm, ErrorMessage, Loading, Notice, useAction, useLoad } from '../lib/ui.ts';
import type { Gateway, Invoice } from '../lib/types.ts';

/** The online gateways (those that answer a redirect), loaded once per page. */
/** The card gateway: paid through "Pay by card", so never listed among the manual payment instructions. */
export function isCardGateway(gateway: Pick<Gateway, 'code'>): boolean {
  return gateway.code === 'stripe';
}

function useCardGateway(): Gateway | undefined {
  const gateways = useLoad(() => call('guest/invoice/gateways'), []);
  return gateways.data?.find(isCardGateway);
}

/** "Pay by card": asks for a Checkout Session and sends the browser to Stripe's page. Hidden when Stripe is off. */
export function PayByCard({ invoice }: { invoice: Pick<Invoice, 'hash' | 'status' | 'amount_due' | 'currency'> }) {
  const gateway = useCardGateway();
  const action = useAction();
  const { query } = useLocation();
  // Back from a successful payment that is not confirmed yet: offering to pay again would invite a double payment.
  if (gateway === undefined || invoice.status !== 'unpaid' || query.get('payment') === 'success') return null;
  const pay = (): void => {
    void action.run(async () => {
      const started = await call('guest/invoice/payment', { hash: invoice.hash, gateway_id: gateway.code });
      // A card gateway answers where to pay; only a manual one answers instructions.
      if ('redirect_url' in started) window.location.assign(started.redirect_url);
    });
  };
  return html`<section class="card" aria-labelledby="card-title">
    <h2 id="card-title">Pay by card</h2>
    <p>Pay <strong>${formatMoney(invoice.amount_due, invoice.currency)}</strong> on Stripe’s secure page. Your order starts as soon as Stripe confirms the payment.</p>
    <${ErrorMessage} error=${action.error} />
    <div class="actions"><${Button} variant="primary" busy=${action.busy} onClick=${pay}>Pay by card<//></div>
  </section>`;
}

const POLL_MS = 1500;
const POLL_LIMIT = 40;

/**
 * What the page Stripe returned to says: `?payment=success` waits for the invoice to become paid (the webhook may
 * arrive after the customer) by calling `reload` until it is; `?payment=canceled` says nothing was charged.
 */
export function PaymentReturn({ status, reload }: { status: string | undefined; reload: () => void }) {
  const { query } = useLocation();
  const outcome = query.get('payment');
  const [polls, setPolls] = useState(0);
  const waiting = outcome === 'success' && status === 'unpaid' && polls < POLL_LIMIT;
  useEffect(() => {
    if (!waiting) return undefined;
    const timer = setTimeout(() => {
      setPolls((count) => count + 1);
      reload();
    }, POLL_MS);
    return () => clearTimeout(timer);
  }, [waiting, polls]);
  if (outcome === 'canceled') {
    return html`<p class="notice" role="status" id="payment-return">The card payment was canceled; nothing was charged. You can pay whenever you are ready.</p>`;
  }
  if (outcome !== 'success' || status === undefined) return null;
  if (status === 'paid') return html`<p class="notice" role="status" id="payment-return">Payment received — thank you.</p>`;
  if (waiting) return html`<p class="loading" role="status" aria-busy="true" id="payment-return">Waiting for Stripe to confirm your payment…</p>`;
  return html`<p class="notice" role="status" id="payment-return">Stripe has not confirmed the payment yet. This page shows the invoice as it is; refresh it in a minute.</p>`;
}

/**
 * "Add a card": Stripe Checkout in setup mode (client/payment_method/setup) saves a card without a payment; the card
 * appears once Stripe reports it, and a free trial waiting for a card starts then. Hidden when Stripe is off.
 */
export function AddCard({ returnTo, label = 'Add a card' }: { returnTo: 'profile' | 'orders'; label?: string }) {
  const gateway = useCardGateway();
  const action = useAction();
  if (gateway === undefined) return null;
  const add = (): void => {
    void action.run(async () => {
      const started = await call('client/payment_method/setup', { return_to: returnTo });
      window.location.assign(started.redirect_url);
    });
  };
  return html`<div class="actions"><${Button} busy=${action.busy} onClick=${add}>${label}<//></div><${ErrorMessage} error=${action.error} />`;
}

/** Saved cards (remove one) and the auto-pay switch, on the profile page. */
export function CardsSection() {
  const cards = useLoad(() => call('client/payment_method/get_list'), []);
  const profile = useLoad(() => call('client/profile/get'), []);
  // The switch shows the choice at once; a refused update puts it back.
  const [autoPay, setAutoPayShown] = useState<boolean | undefined>(undefined);
  const [removing, setRemoving] = useState<number | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const remove = useAction();
  const toggle = useAction();
  const confirmRemove = (id: number): void => {
    void remove.run(async () => {
      await call('client/payment_method/delete', { id });
      setRemoving(null);
      setSaved('Card removed.');
      cards.reload();
    });
  };
  const setAutoPay = (on: boolean): void => {
    setSaved(null);
    setAutoPayShown(on);
    void toggle.run(async () => {
      try {
        await call('client/profile/update', { auto_pay: on });
      } catch (error) {
        setAutoPayShown(!on);
        throw error;
      }
      setSaved(on ? 'Renewals will be charged to your saved card.' : 'Renewals will wait for you to pay them.');
    });
  };
  return html`<section class="card" aria-labelledby="cards-title">
    <h2 id="cards-title">Cards and automatic payment</h2>
    <${AddCard} returnTo="profile" />
    <${ErrorMessage} error=${cards.error ?? profile.error} />
    ${profile.data !== undefined
      ? html`<${Checkbox} label="Pay renewals automatically with my saved card" name="auto_pay" checked=${autoPay ?? profile.data.auto_pay} onChange=${setAutoPay} />`
      : null}
    <${ErrorMessage} error=${toggle.error ?? remove.error} />
    <${Notice}>${saved}<//>
    ${cards.data === undefined && cards.loading ? html`<${Loading} />` : null}
    ${cards.data !== undefined && cards.data.length === 0 ? html`<p>No saved card. Add one, or pay an invoice by card: the card is saved for renewals.</p>` : null}
    ${cards.data !== undefined && cards.data.length > 0
      ? html`<ul class="cards">
          ${cards.data.map(
            (card) => html`<li>
              <span>${card.brand.toUpperCase()} •••• ${card.last4}, expires ${String(card.exp_month).padStart(2, '0')}/${card.exp_year}${card.default ? ' (used for renewals)' : ''}</span>
              ${removing === card.id
                ? html`<${Confirm} question=${`Remove the card ending in ${card.last4}?`} confirmLabel="Remove card" busy=${remove.busy} onConfirm=${() => confirmRemove(card.id)} onCancel=${() => setRemoving(null)} />`
                : html`<${Button} label=${`Remove the card ending in ${card.last4}`} onClick=${() => setRemoving(card.id)}>Remove<//>`}
            </li>`,
          )}
        </ul>`
      : null}
  </section>`;
}
