// The one stand-in of the suite: a small local HTTP server speaking the part of Stripe's API Tollgate uses
// (customers, Checkout Sessions in payment and setup mode, PaymentIntents, SetupIntents, PaymentMethods, refunds) with Stripe's request shapes (form-encoded,
// bracketed names, Idempotency-Key) and response shapes (objects, and `{error: {type, code, message, …}}` with
// Stripe's HTTP statuses). Tollgate reaches it only through the official `stripe` library (STRIPE_API_BASE). It records
// every request, replays idempotent ones, and can be told to decline, to require authentication, to fail or to
// answer slowly. It also serves a hosted-page stand-in for Checkout: a tiny HTML page whose "Pay" button completes the
// session, sends the signed webhooks to Tollgate and redirects to the success URL. Events are signed with the
// library's own `stripe.webhooks.generateTestHeaderString`.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import qs from 'qs';
import Stripe from 'stripe';

export const WEBHOOK_SECRET = 'whsec_test_tollgate_local';
export const SECRET_KEY = 'sk_test_tollgate_local';

type Json = Record<string, unknown>;

export interface RecordedRequest {
  method: string;
  path: string;
  body: Json;
  idempotencyKey: string | null;
  authorization: string | null;
}

/** How the next off-session PaymentIntent answers. */
// `charge_then_hang`: the card is charged (the intent succeeds and a retry with the same idempotency key gets it), but
// the answer never comes: the caller's process can be killed between Stripe's charge and its own record of it.
export type ChargeBehaviour = 'succeed' | 'decline' | 'authentication_required' | 'server_error' | 'slow' | 'drop' | 'charge_then_hang';

export interface StripeEvent {
  id: string;
  object: 'event';
  type: string;
  created: number;
  api_version: string;
  livemode: false;
  pending_webhooks: number;
  request: { id: null; idempotency_key: null };
  data: { object: Json };
}

export interface SignedDelivery {
  payload: string;
  header: string;
}

const signer = new Stripe(SECRET_KEY);

const id = (prefix: string): string => `${prefix}_${randomBytes(12).toString('hex')}`;
const now = (): number => Math.floor(Date.now() / 1000);

/** Currencies Stripe counts without decimals, and those it counts in thousandths (its "zero-decimal" and "three-decimal" lists). */
const ZERO_DECIMAL = new Set(['bif', 'clp', 'djf', 'gnf', 'jpy', 'kmf', 'krw', 'mga', 'pyg', 'rwf', 'ugx', 'vnd', 'vuv', 'xaf', 'xof', 'xpf']);
const THREE_DECIMAL = new Set(['bhd', 'jod', 'kwd', 'omr', 'tnd']);

/** The amounts requests carried, as Stripe received them (tests check the minor units). */
export const receivedAmounts: Array<{ param: string; value: unknown }> = [];

/** Stripe's 400 for an amount that is not a non-negative integer (form fields arrive as strings), else null. */
function notMinorUnits(value: unknown, param: string): { status: number; body: Json } | null {
  receivedAmounts.push({ param, value });
  if (typeof value === 'string' ? /^\d+$/.test(value) : Number.isSafeInteger(value) && (value as number) >= 0) return null;
  return { status: 400, body: { error: { type: 'invalid_request_error', code: 'parameter_invalid_integer', param, message: `Invalid integer: ${String(value)}` } } };
}

/** An amount in minor units as the hosted page shows it, in the currency's decimals. */
function shownAmount(minor: number, currency: string): string {
  const decimals = ZERO_DECIMAL.has(currency) ? 0 : THREE_DECIMAL.has(currency) ? 3 : 2;
  return (minor / 10 ** decimals).toFixed(decimals);
}

export class StripeStandIn {
  readonly requests: RecordedRequest[] = [];
  readonly customers = new Map<string, Json>();
  readonly sessions = new Map<string, Json>();
  readonly intents = new Map<string, Json>();
  readonly methods = new Map<string, Json>();
  readonly charges = new Map<string, Json>();
  readonly refunds = new Map<string, Json>();
  readonly setupIntents = new Map<string, Json>();
  /** Every event the stand-in produced, in order. */
  readonly events: StripeEvent[] = [];
  /** Behaviours of the next off-session charges, consumed in order; `succeed` when empty. */
  readonly chargeQueue: ChargeBehaviour[] = [];
  /** When set, every API request answers 500 (Stripe down). */
  failAll = false;
  /** When set, refund requests answer 500 and refund nothing (the rest of the API works). */
  failRefunds = false;
  /** How long a `slow` answer waits (longer than Tollgate's STRIPE_TIMEOUT_MS in tests). */
  slowMs = 2000;
  /** How long after the customer is sent back the hosted page delivers the webhooks. */
  webhookDelayMs = 300;
  /**
   * The issuing country of the cards the stand-in makes from now on (the PaymentMethod's `card.country`, and each
   * charge's `payment_method_details.card.country`): Stripe's test card 4242 4242 4242 4242 is a US card.
   */
  cardCountry = 'US';
  /** The card fingerprint the hosted page's "Save card" gives (null: the default for its last4). */
  hostedFingerprint: string | null = null;
  /** Where the hosted page sends the signed webhooks (Tollgate's /webhooks/stripe on a real socket). */
  webhookUrl: string | null = null;
  private readonly idempotent = new Map<string, { status: number; body: Json }>();
  private server: Server | null = null;
  private readonly sockets = new Set<import('node:net').Socket>();
  url = '';

  async start(port = 0): Promise<string> {
    this.server = createServer((request, response) => {
      void this.handle(request, response).catch((error: unknown) => {
        response.statusCode = 500;
        response.end(JSON.stringify({ error: { type: 'api_error', message: String(error) } }));
      });
    });
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this.url;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => (this.server === null ? resolve() : this.server.close(() => resolve())));
  }

  /** The secret keys this Stripe accepts (tests that store keys in Settings add theirs). */
  readonly acceptedKeys = new Set<string>([SECRET_KEY]);

  /** Environment for Tollgate pointing the library here. */
  env(extra: Record<string, string> = {}): Record<string, string> {
    return { STRIPE_SECRET_KEY: SECRET_KEY, STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET, STRIPE_API_BASE: this.url, STRIPE_TIMEOUT_MS: '400', ...extra };
  }

  requestsTo(method: string, path: string): RecordedRequest[] {
    return this.requests.filter((request) => request.method === method && request.path === path);
  }

  // ----- events -----

  event(type: string, object: Json): StripeEvent {
    const event: StripeEvent = {
      id: id('evt'),
      object: 'event',
      type,
      created: now(),
      api_version: '2025-01-01',
      livemode: false,
      pending_webhooks: 1,
      request: { id: null, idempotency_key: null },
      data: { object: structuredClone(object) },
    };
    this.events.push(event);
    return event;
  }

  /** Signs an event as Stripe does (the library's own test signer); another secret or timestamp to forge one. */
  sign(event: StripeEvent | string, options: { secret?: string; timestamp?: number } = {}): SignedDelivery {
    const payload = typeof event === 'string' ? event : JSON.stringify(event);
    const header = signer.webhooks.generateTestHeaderString({
      payload,
      secret: options.secret ?? WEBHOOK_SECRET,
      ...(options.timestamp !== undefined && { timestamp: options.timestamp }),
    });
    return { payload, header };
  }

  /** Sends a signed event to `webhookUrl` over HTTP; returns the status. */
  async deliver(event: StripeEvent): Promise<number> {
    if (this.webhookUrl === null) throw new Error('webhookUrl is not set');
    const { payload, header } = this.sign(event);
    const response = await fetch(this.webhookUrl, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': header }, body: payload });
    await response.arrayBuffer();
    return response.status;
  }

  // ----- state changes the tests (and the hosted page) drive -----

  private card(customer: string | null, last4 = '4242', fingerprint?: string, country = this.cardCountry): Json {
    const method: Json = {
      id: id('pm'),
      object: 'payment_method',
      type: 'card',
      customer,
      // As Stripe's: the same card number gives the same fingerprint, whichever customer saves it.
      card: { brand: 'visa', last4, fingerprint: fingerprint ?? `fp_test_${last4}`, exp_month: 12, exp_year: new Date().getUTCFullYear() + 3, funding: 'credit', country },
      created: now(),
      livemode: false,
      metadata: {},
    };
    this.methods.set(method.id as string, method);
    return method;
  }

  private succeededIntent(fields: { amount: number; currency: string; customer: string | null; method: string; metadata: Json; setupFutureUsage: string | null }): Json {
    const intentId = id('pi');
    // What Stripe's charge says of the card it was made with (the method may be one Tollgate names that was never made here).
    const card = (this.methods.get(fields.method)?.card as Json | undefined) ?? { brand: 'visa', last4: '4242', country: this.cardCountry };
    const charge: Json = {
      id: id('ch'),
      object: 'charge',
      amount: fields.amount,
      amount_refunded: 0,
      currency: fields.currency,
      customer: fields.customer,
      payment_intent: intentId,
      payment_method: fields.method,
      payment_method_details: { type: 'card', card: { brand: card.brand, last4: card.last4, country: card.country, fingerprint: card.fingerprint ?? null } },
      paid: true,
      refunded: false,
      status: 'succeeded',
      metadata: fields.metadata,
      refunds: { object: 'list', data: [], has_more: false, url: '/v1/refunds' },
    };
    this.charges.set(charge.id as string, charge);
    const intent: Json = {
      id: intentId,
      object: 'payment_intent',
      amount: fields.amount,
      amount_received: fields.amount,
      currency: fields.currency,
      customer: fields.customer,
      payment_method: fields.method,
      setup_future_usage: fields.setupFutureUsage,
      status: 'succeeded',
      latest_charge: charge.id,
      metadata: fields.metadata,
      last_payment_error: null,
      created: now(),
      livemode: false,
    };
    this.intents.set(intentId, intent);
    return intent;
  }

  /**
   * The customer pays the session with a card: the session completes and its PaymentIntent succeeds. Returns the two
   * events Stripe would send (checkout.session.completed, payment_intent.succeeded), not yet delivered.
   * `amount`/`currency` override what is charged (to test mismatches).
   */
  completeSession(sessionId: string, options: { amount?: number; currency?: string; last4?: string; fingerprint?: string; cardCountry?: string } = {}): StripeEvent[] {
    const session = this.sessions.get(sessionId);
    if (session === undefined) throw new Error(`No session ${sessionId}`);
    const data = session.payment_intent_data as Json | undefined;
    const method = this.card(session.customer as string | null, options.last4, options.fingerprint, options.cardCountry);
    const intent = this.succeededIntent({
      amount: options.amount ?? (session.amount_total as number),
      currency: options.currency ?? (session.currency as string),
      customer: session.customer as string | null,
      method: method.id as string,
      metadata: (data?.metadata as Json | undefined) ?? {},
      setupFutureUsage: (data?.setup_future_usage as string | undefined) ?? null,
    });
    if (intent.setup_future_usage === 'off_session') method.customer = session.customer;
    Object.assign(session, {
      status: 'complete',
      payment_status: 'paid',
      payment_intent: intent.id,
      amount_total: intent.amount,
      currency: intent.currency,
    });
    return [this.event('checkout.session.completed', session), this.event('payment_intent.succeeded', intent)];
  }

  /**
   * The customer saves a card on a setup-mode session: as Stripe does, the session's SetupIntent succeeds with a new
   * PaymentMethod attached to the session's customer. Returns the events Stripe would send (checkout.session.completed
   * carrying `setup_intent`, then setup_intent.succeeded), not yet delivered. `fingerprint` picks the card number.
   */
  completeSetup(sessionId: string, options: { last4?: string; fingerprint?: string } = {}): StripeEvent[] {
    const session = this.sessions.get(sessionId);
    if (session === undefined || session.mode !== 'setup') throw new Error(`No setup session ${sessionId}`);
    const intent = this.setupIntents.get(session.setup_intent as string)!;
    const method = this.card(session.customer as string | null, options.last4, options.fingerprint);
    Object.assign(intent, { status: 'succeeded', payment_method: method.id });
    Object.assign(session, { status: 'complete' });
    return [this.event('checkout.session.completed', session), this.event('setup_intent.succeeded', intent)];
  }

  /** A payment of the session fails (the customer's card is declined on the hosted page). */
  failSession(sessionId: string, message = 'Your card was declined.'): StripeEvent {
    const session = this.sessions.get(sessionId)!;
    const data = session.payment_intent_data as Json | undefined;
    const intent: Json = {
      id: id('pi'),
      object: 'payment_intent',
      amount: session.amount_total,
      amount_received: 0,
      currency: session.currency,
      customer: session.customer,
      payment_method: null,
      status: 'requires_payment_method',
      metadata: data?.metadata ?? {},
      last_payment_error: { type: 'card_error', code: 'card_declined', decline_code: 'generic_decline', message },
      created: now(),
      livemode: false,
    };
    this.intents.set(intent.id as string, intent);
    return this.event('payment_intent.payment_failed', intent);
  }

  /** The latest session created for an invoice. */
  sessionFor(invoiceId: number): Json {
    const found = [...this.sessions.values()].filter((session) => (session.metadata as Json).invoice_id === String(invoiceId)).at(-1);
    if (found === undefined) throw new Error(`No session for invoice ${invoiceId}`);
    return found;
  }

  // ----- the HTTP side -----

  private async readBody(request: IncomingMessage): Promise<string> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  }

  private send(response: ServerResponse, status: number, body: Json): void {
    response.writeHead(status, { 'content-type': 'application/json', 'request-id': id('req') });
    response.end(JSON.stringify(body));
  }

  private error(status: number, fields: Json): { status: number; body: Json } {
    return { status, body: { error: fields } };
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', this.url);
    const raw = await this.readBody(request);
    if (url.pathname.startsWith('/pay/')) return this.hostedPage(url, request.method ?? 'GET', response);
    // A GET's parameters (e.g. `expand[0]=latest_charge`) come in the query string, as the library sends them.
    const body = qs.parse(request.method === 'GET' ? url.search.slice(1) : raw) as Json;
    const idempotencyKey = (request.headers['idempotency-key'] as string | undefined) ?? null;
    this.requests.push({ method: request.method ?? 'GET', path: url.pathname, body, idempotencyKey, authorization: request.headers.authorization ?? null });
    if (!this.acceptedKeys.has((request.headers.authorization ?? '').replace(/^Bearer /, ''))) {
      // Stripe quotes the key it got, redacted; Tollgate must not pass that on.
      const got = (request.headers.authorization ?? '').replace(/^Bearer /, '');
      return this.send(response, 401, { error: { type: 'invalid_request_error', message: `Invalid API Key provided: ${got.slice(0, 8)}****${got.slice(-4)}` } });
    }
    if (this.failAll) return this.send(response, 500, { error: { type: 'api_error', message: 'Stripe is having trouble' } });
    const replayKey = idempotencyKey === null ? null : `${request.method} ${url.pathname} ${idempotencyKey}`;
    const replay = replayKey === null ? undefined : this.idempotent.get(replayKey);
    if (replay !== undefined) {
      response.setHeader('idempotent-replayed', 'true');
      return this.send(response, replay.status, replay.body);
    }
    const answer = await this.route(request.method ?? 'GET', url.pathname, body, response);
    if (answer === null) return; // dropped or already answered
    if (replayKey !== null && answer.status < 500) this.idempotent.set(replayKey, { status: answer.status, body: answer.body });
    if (answer.hang === true) return;
    this.send(response, answer.status, answer.body);
  }

  private async route(method: string, path: string, body: Json, response: ServerResponse): Promise<{ status: number; body: Json; hang?: boolean } | null> {
    let match: RegExpExecArray | null;
    if (method === 'POST' && path === '/v1/customers') {
      const customer: Json = { id: id('cus'), object: 'customer', email: body.email ?? null, name: body.name ?? null, metadata: body.metadata ?? {}, created: now(), livemode: false };
      this.customers.set(customer.id as string, customer);
      return { status: 200, body: customer };
    }
    if (method === 'POST' && path === '/v1/checkout/sessions' && body.mode === 'setup') return this.setupSession(body);
    if (method === 'POST' && path === '/v1/checkout/sessions') {
      const items = body.line_items as Array<{ quantity: string; price_data: { currency: string; unit_amount: string } }>;
      // Stripe takes amounts as integers in the currency's smallest unit (¥ has none, KWD three): "10.5" is refused.
      for (const [index, item] of items.entries()) {
        const bad = notMinorUnits(item.price_data.unit_amount, `line_items[${index}][price_data][unit_amount]`);
        if (bad !== null) return bad;
      }
      const sessionId = id('cs_test');
      const session: Json = {
        id: sessionId,
        object: 'checkout.session',
        mode: body.mode,
        status: 'open',
        payment_status: 'unpaid',
        customer: body.customer ?? null,
        client_reference_id: body.client_reference_id ?? null,
        amount_total: items.reduce((sum, item) => sum + Number(item.price_data.unit_amount) * Number(item.quantity), 0),
        currency: items[0]!.price_data.currency,
        metadata: body.metadata ?? {},
        payment_intent: null,
        payment_intent_data: body.payment_intent_data ?? {},
        success_url: body.success_url,
        cancel_url: body.cancel_url,
        url: `${this.url}/pay/${sessionId}`,
        created: now(),
        livemode: false,
      };
      this.sessions.set(sessionId, session);
      const { payment_intent_data: _hidden, ...shown } = session;
      return { status: 200, body: shown };
    }
    if (method === 'POST' && path === '/v1/payment_intents') return this.offSession(body, response);
    if (method === 'GET' && (match = /^\/v1\/payment_intents\/([^/]+)$/.exec(path)) !== null) {
      const intent = this.intents.get(match[1]!);
      return intent === undefined ? this.missing('payment_intent', match[1]!) : { status: 200, body: this.expanded(intent, body.expand) };
    }
    if (method === 'GET' && (match = /^\/v1\/setup_intents\/([^/]+)$/.exec(path)) !== null) {
      const intent = this.setupIntents.get(match[1]!);
      return intent === undefined ? this.missing('setup_intent', match[1]!) : { status: 200, body: intent };
    }
    if (method === 'GET' && (match = /^\/v1\/payment_methods\/([^/]+)$/.exec(path)) !== null) {
      const found = this.methods.get(match[1]!);
      return found === undefined ? this.missing('payment_method', match[1]!) : { status: 200, body: found };
    }
    if (method === 'POST' && (match = /^\/v1\/payment_methods\/([^/]+)\/detach$/.exec(path)) !== null) {
      const found = this.methods.get(match[1]!);
      if (found === undefined || found.customer === null) return this.missing('payment_method', match[1]!);
      found.customer = null;
      return { status: 200, body: found };
    }
    if (method === 'POST' && path === '/v1/refunds') {
      if (this.failRefunds) return { status: 500, body: { error: { type: 'api_error', message: 'An unknown error occurred' } } };
      const intent = this.intents.get(String(body.payment_intent));
      if (intent === undefined) return this.missing('payment_intent', String(body.payment_intent));
      const charge = this.charges.get(intent.latest_charge as string)!;
      const amount = body.amount === undefined ? (charge.amount as number) - (charge.amount_refunded as number) : Number(body.amount);
      if (amount <= 0 || (charge.amount_refunded as number) + amount > (charge.amount as number)) {
        return this.error(400, { type: 'invalid_request_error', code: 'charge_already_refunded', message: `Refund amount exceeds the charge` });
      }
      const refund: Json = { id: id('re'), object: 'refund', amount, currency: charge.currency, charge: charge.id, payment_intent: intent.id, status: 'succeeded', created: now() };
      this.refunds.set(refund.id as string, refund);
      charge.amount_refunded = (charge.amount_refunded as number) + amount;
      charge.refunded = charge.amount_refunded === charge.amount;
      (charge.refunds as { data: Json[] }).data.unshift(refund);
      this.event('charge.refunded', charge);
      return { status: 200, body: refund };
    }
    return this.error(404, { type: 'invalid_request_error', message: `Unrecognized request URL (${method}: ${path})` });
  }

  /** POST /v1/checkout/sessions with mode=setup: a session and its SetupIntent, as Stripe creates them. */
  private setupSession(body: Json): { status: number; body: Json } {
    if (typeof body.customer !== 'string') return this.error(400, { type: 'invalid_request_error', param: 'customer', message: 'Missing required param: customer.' });
    if (typeof body.currency !== 'string') return this.error(400, { type: 'invalid_request_error', param: 'currency', message: 'Missing required param: currency.' });
    const intent: Json = {
      id: id('seti'),
      object: 'setup_intent',
      customer: body.customer,
      payment_method: null,
      status: 'requires_payment_method',
      usage: 'off_session',
      metadata: (body.setup_intent_data as Json | undefined)?.metadata ?? {},
      created: now(),
      livemode: false,
    };
    this.setupIntents.set(intent.id as string, intent);
    const sessionId = id('cs_test');
    const session: Json = {
      id: sessionId,
      object: 'checkout.session',
      mode: 'setup',
      status: 'open',
      payment_status: 'no_payment_required',
      customer: body.customer,
      client_reference_id: body.client_reference_id ?? null,
      amount_total: null,
      currency: body.currency,
      metadata: body.metadata ?? {},
      payment_intent: null,
      setup_intent: intent.id,
      success_url: body.success_url,
      cancel_url: body.cancel_url,
      url: `${this.url}/pay/${sessionId}`,
      created: now(),
      livemode: false,
    };
    this.sessions.set(sessionId, session);
    return { status: 200, body: session };
  }

  /** A PaymentIntent as answered with `expand[]=latest_charge`: the charge object in place of its id (events never are). */
  private expanded(intent: Json, expand: unknown): Json {
    if (!Array.isArray(expand) || !expand.includes('latest_charge') || typeof intent.latest_charge !== 'string') return intent;
    return { ...intent, latest_charge: this.charges.get(intent.latest_charge) ?? intent.latest_charge };
  }

  private missing(kind: string, ref: string): { status: number; body: Json } {
    return this.error(404, { type: 'invalid_request_error', code: 'resource_missing', param: 'id', message: `No such ${kind}: '${ref}'` });
  }

  /** POST /v1/payment_intents with confirm + off_session: what the next queued behaviour says. */
  private async offSession(body: Json, response: ServerResponse): Promise<{ status: number; body: Json; hang?: boolean } | null> {
    const bad = notMinorUnits(body.amount, 'amount');
    if (bad !== null) return bad;
    const behaviour = this.chargeQueue.shift() ?? 'succeed';
    const amount = Number(body.amount);
    const currency = String(body.currency);
    const metadata = (body.metadata as Json | undefined) ?? {};
    const base = { amount, currency, customer: body.customer ?? null, payment_method: body.payment_method ?? null, metadata, created: now(), livemode: false };
    switch (behaviour) {
      case 'slow':
        await new Promise((resolve) => setTimeout(resolve, this.slowMs));
        if (!response.writableEnded) response.destroy();
        return null;
      case 'drop':
        response.destroy();
        return null;
      case 'server_error':
        return { status: 500, body: { error: { type: 'api_error', message: 'An unknown error occurred' } } };
      case 'decline':
      case 'authentication_required': {
        const declined = behaviour === 'decline';
        const intent: Json = {
          id: id('pi'),
          object: 'payment_intent',
          ...base,
          amount_received: 0,
          status: declined ? 'requires_payment_method' : 'requires_action',
          last_payment_error: declined
            ? { type: 'card_error', code: 'card_declined', decline_code: 'insufficient_funds', message: 'Your card has insufficient funds.' }
            : { type: 'card_error', code: 'authentication_required', message: 'Your card was declined. This transaction requires authentication.' },
        };
        this.intents.set(intent.id as string, intent);
        this.event('payment_intent.payment_failed', intent);
        return {
          status: 402,
          body: { error: { ...(intent.last_payment_error as Json), payment_intent: intent, doc_url: 'https://stripe.com/docs/error-codes' } },
        };
      }
      default: {
        const intent = this.succeededIntent({
          amount,
          currency,
          customer: (body.customer as string | undefined) ?? null,
          method: String(body.payment_method),
          metadata,
          setupFutureUsage: null,
        });
        this.event('payment_intent.succeeded', intent);
        return { status: 200, body: this.expanded(intent, body.expand), hang: behaviour === 'charge_then_hang' };
      }
    }
  }

  /** The hosted Checkout page stand-in: GET shows the amount and a Pay button; POST pays, notifies, redirects. */
  private async hostedPage(url: URL, method: string, response: ServerResponse): Promise<void> {
    const sessionId = url.pathname.split('/')[2] ?? '';
    const session = this.sessions.get(sessionId);
    if (session === undefined) {
      response.writeHead(404, { 'content-type': 'text/plain' });
      response.end('No such session');
      return;
    }
    if (method === 'POST' && url.pathname.endsWith('/cancel')) {
      response.writeHead(303, { location: String(session.cancel_url) });
      response.end();
      return;
    }
    if (method === 'POST') {
      const complete = (): StripeEvent[] => (session.mode === 'setup' ? this.completeSetup(sessionId, this.hostedFingerprint === null ? {} : { fingerprint: this.hostedFingerprint }) : this.completeSession(sessionId));
      const events = session.status === 'complete' ? [] : complete();
      if (url.searchParams.get('sync') === '1') {
        // The benchmark's variant: the webhooks are delivered (and acknowledged) before the page answers.
        const statuses: number[] = [];
        for (const event of events) statuses.push(await this.deliver(event));
        response.writeHead(statuses.every((status) => status === 200) ? 303 : 502, { location: String(session.success_url) });
        response.end();
        return;
      }
      // The customer may come back before the webhook arrives: redirect first, deliver right after.
      response.writeHead(303, { location: String(session.success_url) });
      response.end();
      setTimeout(() => {
        void (async () => {
          for (const event of events) await this.deliver(event);
        })();
      }, this.webhookDelayMs);
      return;
    }
    if (session.mode === 'setup') {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      response.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Save a card (Stripe test)</title></head>
<body><main><h1>Stripe Checkout (test): save a card</h1><p>Nothing is charged now.</p>
<form method="post" action="/pay/${sessionId}"><label>Card number <input name="card" value="4242 4242 4242 4242"></label><button type="submit">Save card</button></form>
<form method="post" action="/pay/${sessionId}/cancel"><button type="submit">Cancel</button></form></main></body></html>`);
      return;
    }
    const amount = shownAmount(Number(session.amount_total), String(session.currency));
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    response.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Pay with card (Stripe test)</title></head>
<body><main><h1>Stripe Checkout (test)</h1><p>Amount: <strong id="amount">${amount} ${String(session.currency).toUpperCase()}</strong></p>
<form method="post" action="/pay/${sessionId}"><label>Card number <input name="card" value="4242 4242 4242 4242"></label><button type="submit">Pay</button></form>
<form method="post" action="/pay/${sessionId}/cancel"><button type="submit">Cancel</button></form></main></body></html>`);
  }
}
