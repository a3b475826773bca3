// The Stripe gateway (CONTRACT §9): Checkout Sessions for paying an invoice, off-session PaymentIntents for renewals,
// refunds, and Stripe's signed webhook events turned into provider-neutral effects. Everything goes through the
// official library; STRIPE_API_BASE points it at another host (tests run a local server speaking Stripe's API).
import Stripe from 'stripe';
import type { StripeConfig } from '../../../config.ts';
import { gatewayLineName, InvalidEventError, type ChargeOutcome, type GatewayEffect, type PaymentGateway, type SavedMethod, type VerifiedEvent } from '../gateways.ts';
import { reportGatewayFailure, writeGatewayLog, type GatewayLog } from '../gateway-failures.ts';
import { STRIPE_CODE, STRIPE_GATEWAY_ID, STRIPE_INSTRUCTIONS, STRIPE_TITLE } from './names.ts';

/** Stripe's default signature tolerance, stated here because the contract fixes it. */
export const SIGNATURE_TOLERANCE_SECONDS = 300;

type Metadata = Record<string, string> | null | undefined;

/** The invoice a Stripe object belongs to, from the metadata Tollgate put on it; null when it is not Tollgate's. */
function invoiceIdOf(metadata: Metadata, fallback?: string | null): number | null {
  const raw = metadata?.invoice_id ?? fallback ?? null;
  return raw !== null && /^\d{1,10}$/.test(raw) ? Number(raw) : null;
}

const idOf = (value: string | { id: string } | null | undefined): string | null =>
  value === null || value === undefined ? null : typeof value === 'string' ? value : value.id;

/**
 * The issuing country of the card a PaymentIntent charged (its charge's `payment_method_details.card.country`), when
 * the intent came with `latest_charge` expanded; null otherwise (another payment method, or not expanded).
 */
function cardCountryOf(intent: Stripe.PaymentIntent): string | null {
  const charge = intent.latest_charge;
  if (charge === null || typeof charge === 'string') return null;
  return charge.payment_method_details?.card?.country ?? null;
}

/**
 * A message safe to store, show to staff and mail to the client: Stripe's own wording for card errors (the decline
 * reason), a fixed sentence for everything else — other Stripe messages can quote request details, even a redacted
 * key ("Invalid API Key provided: sk_test_****1234").
 */
export function describeStripeError(error: unknown): string {
  if (error instanceof Stripe.errors.StripeCardError) return error.message;
  if (error instanceof Stripe.errors.StripeConnectionError) return 'Stripe could not be reached (network error or timeout)';
  if (error instanceof Stripe.errors.StripeAuthenticationError || error instanceof Stripe.errors.StripePermissionError) {
    return 'Stripe refused the request: the Stripe keys of this installation are not valid';
  }
  if (error instanceof Stripe.errors.StripeRateLimitError) return 'Stripe is limiting requests; the payment will be tried again';
  return 'Stripe could not complete the payment';
}

/**
 * Logs a failed call to Stripe once, with Stripe's own message (credentials redacted) and the request id Stripe's
 * support asks for; other errors (a bug of ours, a timeout inside the library) with their message.
 */
function logFailure(action: string, error: unknown, log: GatewayLog): void {
  const provider =
    error instanceof Stripe.errors.StripeError
      ? { message: error.message, requestId: error.requestId ?? null, status: error.statusCode ?? null, code: error.code ?? error.type }
      : null;
  reportGatewayFailure(STRIPE_CODE, action, error, provider, log);
}

export function stripeGateway(config: StripeConfig, log: GatewayLog = writeGatewayLog): PaymentGateway {
  /** Runs one call to Stripe; a failure is logged (once) and thrown on. */
  async function logged<T>(action: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      logFailure(action, error, log);
      throw error;
    }
  }

  const stripe = new Stripe(config.secretKey, {
    host: config.apiBase.host,
    port: config.apiBase.port,
    protocol: config.apiBase.protocol,
    timeout: config.timeoutMs,
    // Requests that create something carry an idempotency key, so the library's one retry cannot double anything.
    maxNetworkRetries: 1,
    telemetry: false,
  });

  /**
   * The card country of a PaymentIntent read again with its charge (`latest_charge` expanded). A failure is logged and
   * answers null: the card's country is evidence worth having, never a reason to hold a payment back.
   */
  async function cardCountryAtStripe(intentId: string): Promise<string | null> {
    try {
      return cardCountryOf(await logged('read a payment', () => stripe.paymentIntents.retrieve(intentId, { expand: ['latest_charge'] })));
    } catch {
      return null;
    }
  }

  async function savedMethodOf(intent: Stripe.PaymentIntent): Promise<GatewayEffect[]> {
    if (intent.setup_future_usage !== 'off_session') return [];
    return cardSaved(idOf(intent.customer), idOf(intent.payment_method));
  }

  /** A setup-mode Checkout completed: the card its SetupIntent saved for the customer. */
  async function setupSaved(session: Stripe.Checkout.Session): Promise<GatewayEffect[]> {
    const intentId = idOf(session.setup_intent);
    if (intentId === null || session.status !== 'complete') return [];
    const intent = await logged('read a setup', () => stripe.setupIntents.retrieve(intentId));
    if (intent.status !== 'succeeded') return [];
    return cardSaved(idOf(intent.customer) ?? idOf(session.customer), idOf(intent.payment_method));
  }

  async function cardSaved(customer: string | null, methodId: string | null): Promise<GatewayEffect[]> {
    if (customer === null || methodId === null) return [];
    const method = await logged('read a payment method', () => stripe.paymentMethods.retrieve(methodId));
    if (method.card === undefined || method.card === null) return [];
    const saved: SavedMethod = {
      ref: method.id,
      brand: method.card.brand,
      last4: method.card.last4,
      expMonth: method.card.exp_month,
      expYear: method.card.exp_year,
      fingerprint: method.card.fingerprint ?? null,
    };
    return [{ kind: 'method_saved', customerRef: customer, method: saved }];
  }

  return {
    id: STRIPE_GATEWAY_ID,
    code: STRIPE_CODE,
    title: STRIPE_TITLE,
    instructions: () => STRIPE_INSTRUCTIONS,
    describeFailure: describeStripeError,

    async createCustomer(client) {
      const customer = await logged('create a customer', () =>
        stripe.customers.create(
          { email: client.email, name: client.name, metadata: { client_id: String(client.id) } },
          // Two first payments at once create one customer, not two.
          { idempotencyKey: `tollgate-customer-${client.id}` },
        ),
      );
      return customer.id;
    },

    async startPayment({ invoice, customerRef, saveMethod, successUrl, cancelUrl }) {
      const metadata = { invoice_id: String(invoice.id) };
      const session = await logged('start a Checkout Session', () => stripe.checkout.sessions.create({
        mode: 'payment',
        customer: customerRef,
        client_reference_id: String(invoice.id),
        line_items: [
          {
            quantity: 1,
            price_data: { currency: invoice.currency.toLowerCase(), unit_amount: invoice.amount, product_data: { name: gatewayLineName(invoice) } },
          },
        ],
        payment_intent_data: { metadata, ...(saveMethod && { setup_future_usage: 'off_session' as const }) },
        metadata,
        success_url: successUrl,
        cancel_url: cancelUrl,
      }));
      if (session.url === null) throw new Error('Stripe returned a Checkout Session without a URL');
      return { redirect_url: session.url };
    },

    async startSetup({ customerRef, clientId, currency, successUrl, cancelUrl }) {
      const metadata = { client_id: String(clientId), purpose: 'card_setup' };
      const session = await logged('start a card setup', () =>
        stripe.checkout.sessions.create({
          mode: 'setup',
          customer: customerRef,
          currency: currency.toLowerCase(),
          setup_intent_data: { metadata },
          metadata,
          success_url: successUrl,
          cancel_url: cancelUrl,
        }),
      );
      if (session.url === null) throw new Error('Stripe returned a Checkout Session without a URL');
      return { redirect_url: session.url };
    },

    async chargeSavedMethod({ invoice, customerRef, methodRef, idempotencyKey }): Promise<ChargeOutcome> {
      try {
        const intent = await stripe.paymentIntents.create(
          {
            amount: invoice.amount,
            currency: invoice.currency.toLowerCase(),
            customer: customerRef,
            payment_method: methodRef,
            off_session: true,
            confirm: true,
            metadata: { invoice_id: String(invoice.id) },
            // The charge comes back with the intent: its card's country is tax evidence (issue 26).
            expand: ['latest_charge'],
          },
          { idempotencyKey },
        );
        if (intent.status === 'succeeded') {
          return { status: 'succeeded', ref: intent.id, amount: intent.amount_received, currency: intent.currency.toUpperCase(), cardCountry: cardCountryOf(intent) };
        }
        if (intent.status === 'requires_action') return { status: 'requires_action', ref: intent.id, message: 'The card needs the customer to authenticate' };
        return { status: 'failed', ref: intent.id, message: `The payment is ${intent.status}` };
      } catch (error) {
        logFailure('charge a saved card', error, log);
        if (!(error instanceof Stripe.errors.StripeError)) throw error;
        const ref = error.payment_intent?.id ?? null;
        if (error.code === 'authentication_required') return { status: 'requires_action', ref, message: describeStripeError(error) };
        return { status: 'failed', ref, message: describeStripeError(error) };
      }
    },

    async refund({ paymentRef, amount, idempotencyKey }) {
      const refund = await logged('refund', () => stripe.refunds.create({ payment_intent: paymentRef, amount }, { idempotencyKey }));
      return { ref: refund.id };
    },

    async detachMethod(methodRef) {
      try {
        await stripe.paymentMethods.detach(methodRef);
      } catch (error) {
        // Already gone at Stripe (detached there, or the customer deleted): forgetting it here is all that is left.
        if (!(error instanceof Stripe.errors.StripeInvalidRequestError && error.code === 'resource_missing')) {
          logFailure('detach a card', error, log);
          throw error;
        }
      }
    },

    verifyEvent(rawBody, headers): VerifiedEvent {
      const signature = headers['stripe-signature'];
      if (typeof signature !== 'string' || signature === '') throw new InvalidEventError('The Stripe-Signature header is missing');
      let event: Stripe.Event;
      try {
        event = stripe.webhooks.constructEvent(rawBody, signature, config.webhookSecret, SIGNATURE_TOLERANCE_SECONDS);
      } catch {
        throw new InvalidEventError('The Stripe signature is not valid');
      }
      return { id: event.id, type: event.type, payload: rawBody.toString('utf8') };
    },

    async interpretEvent(stored): Promise<GatewayEffect[]> {
      // The payload was verified when it arrived; parsing it again here is what makes a stored event replayable.
      const event = JSON.parse(stored.payload) as Stripe.Event;
      switch (event.type) {
        case 'checkout.session.completed': {
          const session = event.data.object;
          if (session.mode === 'setup') return setupSaved(session);
          const invoiceId = invoiceIdOf(session.metadata, session.client_reference_id);
          const intentId = idOf(session.payment_intent);
          if (invoiceId === null || intentId === null || session.payment_status !== 'paid' || session.amount_total === null) return [];
          // The intent is read to see whether the card is to be kept; with its charge, which tells the card's country.
          const intent = await logged('read a payment', () => stripe.paymentIntents.retrieve(intentId, { expand: ['latest_charge'] }));
          const paid: GatewayEffect = { kind: 'paid', invoiceId, ref: intentId, amount: session.amount_total, currency: (session.currency ?? '').toUpperCase(), cardCountry: cardCountryOf(intent) };
          return [paid, ...(await savedMethodOf(intent))];
        }
        case 'payment_intent.succeeded': {
          const intent = event.data.object;
          const invoiceId = invoiceIdOf(intent.metadata);
          if (invoiceId === null) return [];
          // An event carries the charge as an id only: the intent is read again with it, for the card's country.
          const cardCountry = cardCountryOf(intent) ?? (await cardCountryAtStripe(intent.id));
          const paid: GatewayEffect = { kind: 'paid', invoiceId, ref: intent.id, amount: intent.amount_received, currency: intent.currency.toUpperCase(), cardCountry };
          return [paid, ...(await savedMethodOf(intent))];
        }
        case 'payment_intent.payment_failed': {
          const intent = event.data.object;
          const invoiceId = invoiceIdOf(intent.metadata);
          if (invoiceId === null) return [];
          const message = intent.last_payment_error?.message ?? 'The payment failed';
          return [{ kind: 'failed', invoiceId, ref: intent.id, amount: intent.amount, currency: intent.currency.toUpperCase(), message }];
        }
        case 'charge.refunded': {
          const charge = event.data.object;
          const paymentRef = idOf(charge.payment_intent);
          // A charge Tollgate did not start (another system on the same Stripe account) is not ours to record.
          if (paymentRef === null || invoiceIdOf(charge.metadata) === null) return [];
          const ref = charge.refunds?.data[0]?.id ?? `${charge.id}:${charge.amount_refunded}`;
          return [{ kind: 'refunded', paymentRef, ref, refundedTotal: charge.amount_refunded, currency: charge.currency.toUpperCase() }];
        }
        default:
          return [];
      }
    },
  };
}
