// Shared set-up for the Stripe tests: a Tollgate whose `stripe` library talks to the local Stripe stand-in, signed
// webhook deliveries over inject(), and a client holding an unpaid invoice.
import { expect } from 'vitest';
import { createTestApp, type Reply, type TestApp } from './app.ts';
import { StripeStandIn, type SignedDelivery, type StripeEvent } from './stripe-server.ts';
import { asClient } from './selling-fixtures.ts';

export interface StripeStand {
  t: TestApp;
  stripe: StripeStandIn;
  close(): Promise<void>;
}

export async function stripeStand(env: Record<string, string> = {}): Promise<StripeStand> {
  const stripe = new StripeStandIn();
  await stripe.start();
  const t = await createTestApp(stripe.env({ PUBLIC_URL: 'https://billing.example.com', ...env }));
  return {
    t,
    stripe,
    async close() {
      await t.close();
      await stripe.stop();
    },
  };
}

/** POSTs a raw webhook body to /webhooks/stripe with these headers. */
export async function postWebhook(t: TestApp, payload: string, headers: Record<string, string>): Promise<{ status: number; body: unknown }> {
  const response = await t.app.inject({ method: 'POST', url: '/webhooks/stripe', payload, headers: { 'content-type': 'application/json', ...headers } });
  return { status: response.statusCode, body: response.json() };
}

/** Delivers an event signed as Stripe signs it. */
export async function deliver(stand: StripeStand, event: StripeEvent | SignedDelivery): Promise<{ status: number; body: unknown }> {
  const signed = 'payload' in event ? event : stand.stripe.sign(event);
  return postWebhook(stand.t, signed.payload, { 'stripe-signature': signed.header });
}

export interface Purchase {
  clientId: number;
  token: string;
  orderId: number;
  invoiceId: number;
  hash: string;
}

/** A client who checked out `productId`: an order pending setup and its unpaid invoice. */
export async function purchase(t: TestApp, productId: number, client?: { id: number; token: string }): Promise<Purchase> {
  const buyer = client ?? (await t.createClient());
  expect((await asClient(t, buyer.token, 'cart/add_item', { id: productId, period: '1M' })).body.error).toBeNull();
  const checkout = await asClient(t, buyer.token, 'cart/checkout');
  expect(checkout.body.error).toBeNull();
  return { clientId: buyer.id, token: buyer.token, orderId: checkout.result.order_id, invoiceId: checkout.result.invoice_id, hash: checkout.result.invoice_hash };
}

export function payment(t: TestApp, params: Record<string, unknown>, ip?: string): Promise<Reply> {
  return t.call('/api/guest/invoice/payment', params, ip === undefined ? {} : { ip });
}

/** Starts a card payment and returns the stand-in's session id. */
export async function startCardPayment(stand: StripeStand, hash: string): Promise<string> {
  const reply = await payment(stand.t, { hash, gateway_id: 'stripe' });
  expect(reply.body.error).toBeNull();
  const url = reply.result.redirect_url as string;
  expect(url.startsWith(`${stand.stripe.url}/pay/`)).toBe(true);
  return url.slice(`${stand.stripe.url}/pay/`.length);
}

/** Pays an invoice by card: session created, paid at the stand-in, both webhooks delivered. */
export async function payByCard(stand: StripeStand, hash: string): Promise<StripeEvent[]> {
  const session = await startCardPayment(stand, hash);
  const events = stand.stripe.completeSession(session);
  for (const event of events) expect((await deliver(stand, event)).status).toBe(200);
  return events;
}

export async function transactionsOf(t: TestApp, invoiceId: number) {
  return t.services.db.selectFrom('transactions').selectAll().where('invoice_id', '=', invoiceId).orderBy('id').execute();
}

export async function storedEvents(t: TestApp) {
  return t.services.db.selectFrom('gateway_events').selectAll().orderBy('id').execute();
}
