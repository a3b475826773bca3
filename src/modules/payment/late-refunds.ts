// Late payments refunded automatically (issue 20, M2): a payment a provider reports for an invoice that no longer
// takes it (voided when its plan change lapsed, canceled, a renewal of a plan the order left, already paid) is never
// applied. Instead of waiting for staff, it is given back through the gateway that took it, exactly once:
// - the `late_refund` outbox item is written in the transaction that records the payment (one per payment: a dedupe
//   key), so the refund exists exactly when the payment does, survives a crash and is retried with backoff;
// - the provider is asked with an idempotency key made of the payment alone, so a repeated request (a retry, a
//   sender that died after asking) is answered with the first refund instead of making a second;
// - the refund transaction names the payment it gives back (`refund_of`) and is recorded up to the payment's amount,
//   whichever confirmation comes first (the provider's answer here, or its refund event through applyRefund).
// The invoice's ledger records it (invoice/payments.ts) and tells the client by mail (`invoice_payment_refunded`) in
// the transaction that records the refund; this file only asks the provider.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { inTransaction } from '../../platform/transaction.ts';
import { OutboxGiveUp, type OutboxService } from '../outbox/service.ts';
import type { InvoicePayments } from '../invoice/payments.ts';
import type { GatewayRegistry, PaymentGateway } from './gateways.ts';

/** An error's class and HTTP status (`StripeConnectionError`, `StripeAPIError 500`), never its message. */
function errorKind(error: unknown): string {
  if (!(error instanceof Error)) return 'unknown error';
  const status = (error as { statusCode?: unknown }).statusCode;
  return typeof status === 'number' ? `${error.constructor.name} ${status}` : error.constructor.name;
}

export const LATE_REFUND_KIND = 'late_refund';

/**
 * Waits after failed attempts 1…7 (1 min, 5 min, 30 min, 2 h, 12 h, then daily): a provider that is down for an hour
 * or a day still refunds; after that the item is `failed` in the outbox for staff, beside the `error` payment.
 */
export const LATE_REFUND_RETRY_DELAYS_MS: readonly number[] = [60_000, 300_000, 1_800_000, 7_200_000, 43_200_000, 86_400_000, 86_400_000];

/** The provider's idempotency key of the refund of payment `paymentRef`: one per payment, whoever asks and when. */
export const lateRefundKey = (paymentRef: string): string => `late-refund:${paymentRef}`;

interface LateRefundPayload {
  /** The `error` payment transaction to refund. */
  paymentId: number;
}

export interface LateRefundDeps {
  db: Kysely<Database>;
  gateways: GatewayRegistry;
  outbox: Pick<OutboxService, 'enqueue' | 'registerKind'>;
  /** The invoice's ledger: the late payment to give back, and the record of what the provider gave back. */
  ledger: Pick<InvoicePayments, 'latePayment' | 'recordLateRefund'>;
  /** Why an attempt failed, for the operator's log (the outbox keeps a short message without provider details). */
  log?: (message: string, error: unknown) => void;
}

export function createLateRefunds({ db, gateways, outbox, ledger, log }: LateRefundDeps) {
  /** One delivery of a `late_refund` item: ask the provider (same key every time), then record what it confirms. */
  async function deliver({ paymentId }: LateRefundPayload, now: Date): Promise<void> {
    const payment = await ledger.latePayment(paymentId);
    if (payment === null) throw new OutboxGiveUp('The payment to refund is not recorded');
    // Refunded meanwhile: the provider's refund event arrived first (or staff refunded it at the provider).
    if (payment.refunded >= payment.amount) return;
    const gateway: PaymentGateway | undefined = gateways.byCode(payment.gatewayCode);
    // Not configured in this process (keys removed, a restart pending): retried, the payment is still the client's.
    if (gateway?.refund === undefined) throw new Error(`The ${payment.gatewayCode} gateway cannot refund now; the refund will be tried again`);
    let ref: string;
    try {
      ({ ref } = await gateway.refund({ paymentRef: payment.ref, amount: payment.amount, idempotencyKey: lateRefundKey(payment.ref) }));
    } catch (error) {
      // The provider's own message can quote request details (even a redacted key): the log gets the error's kind and
      // status only, the outbox (shown to staff) a fixed sentence.
      log?.(`refund of late payment ${payment.id} failed`, errorKind(error));
      // The cause stays attached for a debugger; the outbox records only this message.
      throw new Error(`${gateway.title} did not make the refund (unreachable or refused); it will be tried again`, { cause: error });
    }
    await inTransaction(db, (trx) => ledger.recordLateRefund(trx, payment.id, { ref, refundedTotal: payment.amount }, now));
  }

  outbox.registerKind(LATE_REFUND_KIND, {
    retryDelaysMs: LATE_REFUND_RETRY_DELAYS_MS,
    deliver: (payload) => deliver(payload as LateRefundPayload, new Date()),
  });

  return {
    /** Queues the refund of the late payment `paymentId` inside `trx` (the transaction that records it); once per payment. */
    async schedule(trx: Kysely<Database>, gateway: PaymentGateway, paymentId: number, paymentRef: string): Promise<void> {
      await outbox.enqueue(trx, { kind: LATE_REFUND_KIND, payload: { paymentId } satisfies LateRefundPayload, dedupeKey: `${LATE_REFUND_KIND}:${gateway.code}:${paymentRef}` });
    },
  };
}

export type LateRefunds = ReturnType<typeof createLateRefunds>;
