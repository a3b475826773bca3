// Payment gateways. A gateway tells the payer how to pay an invoice; an online one also starts payments and verifies
// the provider's callbacks, after which the invoice service marks the invoice paid. Adding a card gateway is one file
// implementing PaymentGateway, registered in services.ts with `gateways.register(...)`.
import { errors } from '../../http/errors.ts';

export interface GatewayInvoice {
  id: number;
  hash: string;
  /** Decimal string, e.g. "10.00". */
  total: string;
  currency: string;
}

export interface PaymentCallback {
  /** The invoice the provider says was paid. */
  invoiceHash: string;
  /** The provider's payment reference (recorded as the transaction id; a repeat of it is ignored). */
  transactionId: string;
  /** Amount paid, minor units. */
  amount: number;
}

export interface PaymentGateway {
  /** Stable numeric id (what `gateway_id` parameters name). */
  readonly id: number;
  readonly code: string;
  readonly title: string;
  /** What to show the payer for this invoice (or in general, when `invoice` is null). */
  instructions(invoice: GatewayInvoice | null): string | null;
  /** Online gateways: starts a payment and returns where to send the payer. */
  startPayment?(invoice: GatewayInvoice): Promise<{ redirect_url: string }>;
  /** Online gateways: checks a provider callback (signature included); null when it is not a completed payment. */
  verifyCallback?(request: { headers: Record<string, unknown>; body: unknown }): Promise<PaymentCallback | null>;
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
    return this.gateways.get(id);
  }

  /** The gateway with this id; an unknown id is a bad `param` (422). */
  require(id: number, param = 'gateway_id'): PaymentGateway {
    const gateway = this.gateways.get(id);
    if (gateway === undefined) throw errors.invalid(param, 'is not a known payment gateway');
    return gateway;
  }

  list(): PaymentGateway[] {
    return [...this.gateways.values()].toSorted((a, b) => a.id - b.id);
  }
}

/**
 * The built-in manual gateway: the payer follows the instructions, staff confirm with admin/invoice/mark_as_paid.
 * `paymentInstructions` may be a function, read on every call (the `payment_instructions` setting).
 */
export function customGateway(paymentInstructions: string | (() => string)): PaymentGateway {
  return {
    id: 1,
    code: 'custom',
    title: 'Manual payment',
    instructions: () => (typeof paymentInstructions === 'string' ? paymentInstructions : paymentInstructions()),
  };
}
