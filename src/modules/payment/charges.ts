// Off-session charges of renewal invoices (CONTRACT §9 renewals), as a kind of the one outbox (`card_charge`). When a
// renewal invoice is issued for a client with auto-pay on and a saved card, its outbox item is written in the same
// transaction (one per invoice: a dedupe key), so the charge exists exactly when the invoice does; the outbox sender
// claims it, retries it and survives crashes.
//
// Each delivery is one attempt, recorded in `payment_attempts` before the card is charged, with the idempotency key
// "invoice <id> attempt <n>". A sender that dies mid-charge leaves its attempt `processing`; the next delivery reuses
// that attempt and its key, so Stripe answers the first charge again instead of making a second. A failure (declined,
// Stripe unreachable or too slow) records a failed attempt and transaction, emits `invoice.payment_failed` (the client
// is sent the pay link) and lets the outbox retry after the configured days (1, 3, 5 by default, counted from the
// first failure); a card that needs the customer's authentication is left to the pay link. The payment goes through
// the invoice's compare-and-set, so the order is renewed in the transaction that records the payment, or not at all.
import type { Kysely, Selectable } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { PaymentAttemptTable } from './tables.ts';
import { inTransaction } from '../../platform/transaction.ts';
import type { EventBus } from '../../platform/events.ts';
import { isoSeconds } from '../../lib/time.ts';
import type { InvoicePayments } from '../invoice/payments.ts';
import { OutboxGiveUp, type OutboxService } from '../outbox/service.ts';
import { toGatewayInvoice, type GatewayPayments } from './gateway-payments.ts';
import type { ChargeOutcome } from './gateways.ts';
import type { PaymentService } from './service.ts';
import { periodicTask } from '../../lib/periodic.ts';
import './events.ts';

type AttemptRow = Selectable<PaymentAttemptTable>;

export const CHARGE_KIND = 'card_charge';
const DAY_MS = 86_400_000;

/** Thrown to the outbox after a failed attempt was recorded: the item waits for its next retry. */
export class ChargeFailed extends Error {}

/** Days after the first failure (1, 3, 5) as waits after each failure (1, 2, 2 days), as the outbox counts them. */
export function retryDelays(retryDays: readonly number[]): number[] {
  return retryDays.map((day, index) => (day - (index === 0 ? 0 : retryDays[index - 1]!)) * DAY_MS);
}

export interface ChargeServiceDeps {
  db: Kysely<Database>;
  events: EventBus;
  outbox: Pick<OutboxService, 'enqueue' | 'registerKind'>;
  gatewayPayments: Pick<GatewayPayments, 'applyPayment' | 'recordFailure'>;
  /** The invoice to charge, read from its owner; a renewal the order no longer takes is voided by it, never charged. */
  invoicePayments: Pick<InvoicePayments, 'payable' | 'renewsService' | 'voidIfStale'>;
  payments: Pick<PaymentService, 'chargeableMethod'>;
  /** The `dunning_retry_days` setting, read at each failure so a change applies to the next retry. */
  retryDays: () => readonly number[];
  log?: (message: string, error: unknown) => void;
}

export function createChargeService({ db, events, outbox, gatewayPayments, invoicePayments, payments, retryDays, log }: ChargeServiceDeps) {
  /** Queues the charge of an unpaid renewal invoice of a client who can be charged off-session, inside `trx`. */
  async function schedule(trx: Kysely<Database>, invoiceId: number): Promise<boolean> {
    const invoice = await invoicePayments.payable(trx, invoiceId);
    if (invoice === null || invoice.status !== 'unpaid' || invoice.amount <= 0) return false;
    // Renewals and usage overage (CONTRACT §12) are charged off-session; a new order's first invoice never is.
    if (!(await invoicePayments.renewsService(trx, invoiceId))) return false;
    if ((await payments.chargeableMethod(trx, invoice.clientId)) === null) return false;
    await outbox.enqueue(trx, { kind: CHARGE_KIND, payload: { invoiceId }, dedupeKey: `${CHARGE_KIND}:invoice:${invoiceId}` });
    return true;
  }

  /**
   * Queues the charge of an unpaid top-up invoice an auto-recharge issued (credit/auto-recharge.ts), inside `trx`: the
   * client's default saved card is charged whatever their auto-pay setting, which is about renewals. False (nothing
   * queued) without a card to charge.
   */
  async function scheduleTopUp(trx: Kysely<Database>, invoiceId: number): Promise<boolean> {
    const invoice = await invoicePayments.payable(trx, invoiceId);
    if (invoice === null || invoice.status !== 'unpaid' || invoice.amount <= 0) return false;
    if ((await payments.chargeableMethod(trx, invoice.clientId, false)) === null) return false;
    await outbox.enqueue(trx, { kind: CHARGE_KIND, payload: { invoiceId, anyCard: true }, dedupeKey: `${CHARGE_KIND}:invoice:${invoiceId}` });
    return true;
  }

  events.on('invoice.created', async ({ invoiceId }, trx) => {
    await schedule(trx, invoiceId);
  });

  /** The attempt to make now: one left `processing` by a sender that died (same key), or the next one. */
  async function startAttempt(invoiceId: number, clientId: number, now: Date): Promise<AttemptRow> {
    return inTransaction(db, async (trx) => {
      const last = await trx.selectFrom('payment_attempts').selectAll().where('invoice_id', '=', invoiceId).orderBy('attempt', 'desc').executeTakeFirst();
      if (last?.status === 'processing') return last;
      const stamp = isoSeconds(now);
      return trx
        .insertInto('payment_attempts')
        .values({ invoice_id: invoiceId, client_id: clientId, attempt: (last?.attempt ?? 0) + 1, status: 'processing', txn_ref: null, message: null, created_at: stamp, updated_at: stamp })
        .returningAll()
        .executeTakeFirstOrThrow();
    });
  }

  async function finish(trx: Kysely<Database>, row: AttemptRow, status: AttemptRow['status'], fields: { txnRef?: string | null; message?: string | null }, now: Date): Promise<void> {
    await trx
      .updateTable('payment_attempts')
      .set({ status, txn_ref: fields.txnRef ?? null, message: fields.message ?? null, updated_at: isoSeconds(now) })
      .where('id', '=', row.id)
      .where('status', '=', 'processing')
      .execute();
  }

  /** One delivery of a `card_charge` item. */
  async function charge(invoiceId: number, anyCard: boolean, now: Date): Promise<void> {
    const payable = await invoicePayments.payable(db, invoiceId);
    // Paid meanwhile (the pay link, staff), canceled, or the card or auto-pay gone: nothing left to charge.
    if (payable === null || payable.status !== 'unpaid') return;
    // A renewal the order no longer takes (canceled at period end, another plan since) is voided, never charged.
    if ((await invoicePayments.voidIfStale(invoiceId, now)) !== null) return;
    const method = await payments.chargeableMethod(db, payable.clientId, !anyCard);
    if (method === null) return;
    const invoice = toGatewayInvoice(payable);
    const { gateway } = method;
    const attempt = await startAttempt(invoice.id, invoice.clientId, now);
    let outcome: ChargeOutcome;
    try {
      outcome = await gateway.chargeSavedMethod!({
        invoice,
        customerRef: method.customerRef,
        methodRef: method.methodRef,
        idempotencyKey: `tollgate-invoice-${invoice.id}-attempt-${attempt.attempt}`,
      });
    } catch (error) {
      log?.(`off-session charge of invoice ${invoice.id} failed`, error);
      outcome = { status: 'failed', ref: null, message: 'The payment could not be completed' };
    }
    if (outcome.status === 'succeeded') {
      await inTransaction(db, async (trx) => {
        await gatewayPayments.applyPayment(trx, gateway, { invoiceId: invoice.id, ref: outcome.ref, amount: outcome.amount, currency: outcome.currency, cardCountry: outcome.cardCountry ?? null }, now);
        await finish(trx, attempt, 'succeeded', { txnRef: outcome.ref }, now);
      });
      return;
    }
    await inTransaction(db, async (trx) => {
      await gatewayPayments.recordFailure(trx, gateway, { invoiceId: invoice.id, ref: outcome.ref, amount: invoice.amount, currency: invoice.currency, message: outcome.message }, now);
      await finish(trx, attempt, outcome.status === 'requires_action' ? 'requires_action' : 'failed', { txnRef: outcome.ref, message: outcome.message }, now);
      await events.emit('invoice.payment_failed', { invoiceId: invoice.id, clientId: invoice.clientId, message: outcome.message }, trx);
    });
    // Authentication needs the customer: no retry, the pay link does it. Anything else: the outbox retries.
    if (outcome.status === 'requires_action') throw new OutboxGiveUp(outcome.message);
    throw new ChargeFailed(outcome.message);
  }

  outbox.registerKind(CHARGE_KIND, {
    // A getter: the outbox reads the delays when an attempt fails, so staff's change of the setting applies.
    get retryDelaysMs() {
      return retryDelays(retryDays());
    },
    async deliver(payload) {
      const { invoiceId, anyCard } = payload as { invoiceId: number; anyCard?: boolean };
      await charge(invoiceId, anyCard === true, new Date());
    },
  });

  return {
    schedule,
    scheduleTopUp,

    /** Attempts of an invoice, oldest first (staff views and tests). */
    async attemptsOf(invoiceId: number): Promise<AttemptRow[]> {
      return db.selectFrom('payment_attempts').selectAll().where('invoice_id', '=', invoiceId).orderBy('attempt').execute();
    },
  };
}

export type ChargeService = ReturnType<typeof createChargeService>;

/** Applies stored provider events not applied yet (a crash in between): at start, then every `intervalMs`. */
export function pendingEventsWorker(
  processPending: () => Promise<unknown>,
  onClose: (task: () => Promise<void>) => void,
  log: (message: string, error: unknown) => void,
  intervalMs = 60_000,
): () => void {
  return periodicTask({
    run: processPending,
    onClose,
    onError: (error) => log('applying stored provider events failed', error),
    intervalMs,
    runAtStart: true,
  });
}
