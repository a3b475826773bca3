// Payment gateways: one interface for every way of paying (CONTRACT §9, DESIGN "Growing the house"). A gateway tells
// the payer how to pay; an online one also starts payments, charges saved methods, refunds and turns the provider's
// signed events into provider-neutral effects, which the payment service hands to the invoice. No code outside a
// gateway's own folder knows a provider's name. Adding one is a folder implementing PaymentGateway (as stripe/),
// registered in services.ts with `gateways.register(...)`. Beside this file: the manual gateway (custom-gateway.ts)
// and how a provider's failure is logged and answered (gateway-failures.ts).
import { errors } from '../../platform/errors.ts';
import { invoiceLabel } from '../../lib/invoice-label.ts';

export interface GatewayInvoice {
  id: number;
  hash: string;
  /** The legal number once paid; null before (then the invoice is "Pro forma <id>"). */
  number: string | null;
  clientId: number;
  /** Decimal string, e.g. "10.00". */
  total: string;
  /** The total in minor units. */
  amount: number;
  currency: string;
}

export interface GatewayClient {
  id: number;
  email: string;
  name: string;
}

export interface StartPaymentRequest {
  invoice: GatewayInvoice;
  /** The client's customer at the provider (see createCustomer). */
  customerRef: string;
  /** Keep the payment method for off-session renewals. */
  saveMethod: boolean;
  successUrl: string;
  cancelUrl: string;
}

/** Saving a card without a payment (Stripe Checkout in setup mode): the card is kept for off-session charges. */
export interface StartSetupRequest {
  customerRef: string;
  clientId: number;
  /** The instance currency (Stripe asks for one in setup mode). */
  currency: string;
  successUrl: string;
  cancelUrl: string;
}

export interface SavedChargeRequest {
  invoice: GatewayInvoice;
  customerRef: string;
  methodRef: string;
  /** Same key, same charge: a retried request never charges twice. */
  idempotencyKey: string;
}

/**
 * What an off-session charge came to. `ref` is the provider's payment reference when one was created; `cardCountry`
 * the issuing country of the card charged, when the provider tells.
 */
export type ChargeOutcome =
  | { status: 'succeeded'; ref: string; amount: number; currency: string; cardCountry?: string | null }
  | { status: 'failed'; ref: string | null; message: string }
  | { status: 'requires_action'; ref: string | null; message: string };

export interface SavedMethod {
  ref: string;
  brand: string;
  last4: string;
  expMonth: number;
  expYear: number;
  /** The provider's fingerprint of the card number (Stripe's `card.fingerprint`): one card, one fingerprint. */
  fingerprint?: string | null;
}

/** A provider event whose signature has been verified. */
export interface VerifiedEvent {
  id: string;
  type: string;
  /** The event as received (JSON text), stored before anything is acted on. */
  payload: string;
}

/** What a provider event means, in Tollgate's terms. An event the gateway does not handle has no effects. */
export type GatewayEffect =
  /** `cardCountry`: the issuing country of the card paid with, when the provider tells (tax evidence, issue 26). */
  | { kind: 'paid'; invoiceId: number; ref: string; amount: number; currency: string; cardCountry?: string | null }
  | { kind: 'failed'; invoiceId: number; ref: string; amount: number; currency: string; message: string }
  /** `refundedTotal`: everything refunded of payment `paymentRef` so far (providers report it cumulatively). */
  | { kind: 'refunded'; paymentRef: string; ref: string; refundedTotal: number; currency: string }
  | { kind: 'method_saved'; customerRef: string; method: SavedMethod };

/** Thrown by verifyEvent: the request is not a genuine, recent provider event (HTTP 400, nothing stored). */
export class InvalidEventError extends Error {}

export interface PaymentGateway {
  /** Stable numeric id (what `gateway_id` parameters name). */
  readonly id: number;
  readonly code: string;
  readonly title: string;
  /**
   * Whether the gateway can be used now (its settings are complete); a gateway without it always can. An unavailable
   * gateway is not listed and cannot be named; it comes back as soon as its settings are (no restart).
   */
  available?(): boolean;
  /** What to show the payer for this invoice (or in general, when `invoice` is null). */
  instructions(invoice: GatewayInvoice | null): string | null;
  /** Online gateways: the client's customer record at the provider, created once (idempotent per client). */
  createCustomer?(client: GatewayClient): Promise<string>;
  /** Online gateways: starts a payment and returns where to send the payer. */
  startPayment?(request: StartPaymentRequest): Promise<{ redirect_url: string }>;
  /** Online gateways that can: starts saving a card without a payment; its event reports `method_saved`. */
  startSetup?(request: StartSetupRequest): Promise<{ redirect_url: string }>;
  /** Charges a saved payment method without the customer (renewals). Never throws for a refused charge. */
  chargeSavedMethod?(request: SavedChargeRequest): Promise<ChargeOutcome>;
  /** Refunds `amount` minor units of payment `paymentRef`; returns the provider's refund reference. */
  refund?(request: { paymentRef: string; amount: number; idempotencyKey: string }): Promise<{ ref: string }>;
  /** Forgets a saved payment method at the provider. */
  detachMethod?(methodRef: string): Promise<void>;
  /** Verifies a provider event's signature on the raw body; throws (or rejects with) InvalidEventError when it is not genuine. */
  verifyEvent?(rawBody: Buffer, headers: Record<string, string | string[] | undefined>): VerifiedEvent | Promise<VerifiedEvent>;
  /**
   * A sentence for a failure of this gateway that is safe to show the payer and staff (no key, no request detail),
   * saying what happened and what to do; a gateway without it gets a generic one.
   */
  describeFailure?(error: unknown): string;
  /** What a stored event means. May ask the provider for details (e.g. the card of a payment). */
  interpretEvent?(event: VerifiedEvent): Promise<GatewayEffect[]>;
}

export class GatewayRegistry {
  private readonly gateways = new Map<number, PaymentGateway>();

  register(gateway: PaymentGateway): void {
    if (this.gateways.has(gateway.id) || this.list().some((known) => known.code === gateway.code)) {
      throw new Error(`Payment gateway ${gateway.id}/${gateway.code} is already registered`);
    }
    this.gateways.set(gateway.id, gateway);
  }

  get(id: number): PaymentGateway | undefined {
    const gateway = this.gateways.get(id);
    return gateway !== undefined && usable(gateway) ? gateway : undefined;
  }

  byCode(code: string): PaymentGateway | undefined {
    return this.list().find((gateway) => gateway.code === code);
  }

  /** A `gateway_id` parameter names a gateway by id (`2`, `"2"`) or code (`"stripe"`); unknown → 422. */
  resolve(ref: number | string, param = 'gateway_id'): PaymentGateway {
    const text = String(ref).trim();
    const gateway = /^\d+$/.test(text) ? this.get(Number(text)) : this.byCode(text);
    if (gateway === undefined) throw errors.invalid(param, 'is not a known payment gateway');
    return gateway;
  }

  /** The gateway with this id; an unknown id is a bad `param` (422). */
  require(id: number, param = 'gateway_id'): PaymentGateway {
    const gateway = this.get(id);
    if (gateway === undefined) throw errors.invalid(param, 'is not a known payment gateway');
    return gateway;
  }

  list(): PaymentGateway[] {
    return [...this.gateways.values()].filter(usable).toSorted((a, b) => a.id - b.id);
  }
}

const usable = (gateway: PaymentGateway): boolean => gateway.available?.() !== false;

/** What a provider shows the payer for an invoice (e.g. the line of a card payment page). */
export function gatewayLineName(invoice: Pick<GatewayInvoice, 'id' | 'number'>): string {
  return invoiceLabel(invoice);
}
