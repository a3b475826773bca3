// Late payments refunded automatically (issue 20, M2): a payment a provider reports for an invoice that no longer
// takes it (voided when its plan change lapsed, canceled, a renewal of a plan the order left, already paid) is never
// applied. Instead of waiting for staff, it is given back through the gateway that took it, exactly once:
// - the `late_refund` outbox item is written in the transaction that records the payment (one per payment: a dedupe
//   key), so the refund exists exactly when the payment does, survives a crash and is retried with backoff;
// - the provider is asked with an idempotency key made of the payment alone, so a repeated request (a retry, a
//   sender that died after asking) is answered with the first refund instead of making a second;
// - the refund transaction names the payment it gives back (`refund_of`) and is recorded up to the payment's amount,
//   whichever confirmation comes first (the provider's answer here, or its refund event through applyRefund).
// The client is told by mail (`invoice_payment_refunded`) in the transaction that records the refund.
import type { Kysely, Selectable } from 'kysely';
import { sql } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { TransactionTable } from './tables.ts';
import { inTransaction } from '../../platform/transaction.ts';
import type { EventBus } from '../../platform/events.ts';
import { isoSeconds } from '../../lib/time.ts';
import { OutboxGiveUp, type OutboxService } from '../outbox/service.ts';
import type { GatewayRegistry, PaymentGateway } from './gateways.ts';
import type { InvoiceRow } from './service.ts';
// The event this file emits is declared with the other invoice events.
import '../order/events.ts';

type TransactionRow = Selectable<TransactionTable>;

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
  events: EventBus;
  gateways: GatewayRegistry;
  outbox: Pick<OutboxService, 'enqueue' | 'registerKind'>;
  /** Serialises work on one invoice until the transaction ends (gateway-payments.ts). */
  lock: (trx: Kysely<Database>, invoiceId: number) => Promise<InvoiceRow | undefined>;
  /** Why an attempt failed, for the operator's log (the outbox keeps a short message without provider details). */
  log?: (message: string, error: unknown) => void;
}

export function createLateRefunds({ db, events, gateways, outbox, lock, log }: LateRefundDeps) {
  /** What has been given back of payment `paymentId` so far, minor units. */
  async function refundedOf(trx: Kysely<Database>, paymentId: number): Promise<number> {
    const row = await trx
      .selectFrom('transactions')
      .select(sql<string | number | null>`sum(amount)`.as('total'))
      .where('refund_of', '=', paymentId)
      .where('type', '=', 'refund')
      .where('status', '=', 'refunded')
      .executeTakeFirst();
    // PostgreSQL sums bigints as numeric, which arrives as text.
    return Number(row?.total ?? 0);
  }

  /**
   * Records the refund of a late payment up to `refundedTotal` (everything given back of it so far, as providers
   * report it): the part not recorded yet, if any, as one `refund` transaction, and the client's mail.
   */
  async function record(trx: Kysely<Database>, payment: TransactionRow, report: { ref: string; refundedTotal: number }, now: Date): Promise<'refunded' | 'duplicate'> {
    const invoice = await lock(trx, payment.invoice_id);
    if (invoice === undefined) return 'duplicate';
    const delta = Math.min(report.refundedTotal, payment.amount) - (await refundedOf(trx, payment.id));
    if (delta <= 0) return 'duplicate';
    await trx
      .insertInto('transactions')
      .values({
        invoice_id: payment.invoice_id,
        client_id: payment.client_id,
        gateway_id: payment.gateway_id,
        gateway: payment.gateway,
        transaction_id: report.ref,
        amount: delta,
        currency: payment.currency,
        type: 'refund',
        status: 'refunded',
        message: `Refund of payment ${payment.transaction_id ?? payment.id}, which was not applied`,
        created_at: isoSeconds(now),
        refund_of: payment.id,
      })
      .execute();
    await events.emit('invoice.payment_refunded', { invoiceId: invoice.id, clientId: invoice.client_id, amount: delta, currency: payment.currency }, trx);
    return 'refunded';
  }

  /** One delivery of a `late_refund` item: ask the provider (same key every time), then record what it confirms. */
  async function deliver({ paymentId }: LateRefundPayload, now: Date): Promise<void> {
    const payment = await db.selectFrom('transactions').selectAll().where('id', '=', paymentId).executeTakeFirst();
    if (payment?.transaction_id === null || payment?.transaction_id === undefined || payment.gateway === null) {
      throw new OutboxGiveUp('The payment to refund is not recorded');
    }
    // Refunded meanwhile: the provider's refund event arrived first (or staff refunded it at the provider).
    if ((await refundedOf(db, payment.id)) >= payment.amount) return;
    const gateway: PaymentGateway | undefined = gateways.byCode(payment.gateway);
    // Not configured in this process (keys removed, a restart pending): retried, the payment is still the client's.
    if (gateway?.refund === undefined) throw new Error(`The ${payment.gateway} gateway cannot refund now; the refund will be tried again`);
    let ref: string;
    try {
      ({ ref } = await gateway.refund({ paymentRef: payment.transaction_id, amount: payment.amount, idempotencyKey: lateRefundKey(payment.transaction_id) }));
    } catch (error) {
      // The provider's own message can quote request details (even a redacted key): the log gets the error's kind and
      // status only, the outbox (shown to staff) a fixed sentence.
      log?.(`refund of late payment ${payment.id} failed`, errorKind(error));
      // The cause stays attached for a debugger; the outbox records only this message.
      throw new Error(`${gateway.title} did not make the refund (unreachable or refused); it will be tried again`, { cause: error });
    }
    await inTransaction(db, (trx) => record(trx, payment, { ref, refundedTotal: payment.amount }, now));
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

    /**
     * A provider's refund event for a payment that was not applied (an `error` payment): recorded as the late
     * payment's refund. Null when no such payment is recorded.
     */
    async recordReported(
      trx: Kysely<Database>,
      gateway: PaymentGateway,
      report: { paymentRef: string; ref: string; refundedTotal: number },
      now: Date,
    ): Promise<'refunded' | 'duplicate' | null> {
      const payment = await trx
        .selectFrom('transactions')
        .selectAll()
        .where('gateway', '=', gateway.code)
        .where('transaction_id', '=', report.paymentRef)
        .where('type', '=', 'payment')
        .where('status', '=', 'error')
        .orderBy('id')
        .executeTakeFirst();
      if (payment === undefined) return null;
      return record(trx, payment, report, now);
    },
  };
}

export type LateRefunds = ReturnType<typeof createLateRefunds>;
