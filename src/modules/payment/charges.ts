// Off-session charges of renewal invoices (CONTRACT §9 renewals). When a renewal invoice is issued for a client with
// auto-pay on and a saved card, attempt 1 is written in the same transaction, due at once; a worker claims due attempts
// with a compare-and-set, charges the card with the idempotency key "invoice <id> attempt <n>", and records the
// outcome. A failure (declined, Stripe unreachable or too slow) records a failed attempt and transaction, schedules the
// next attempt after the configured days (1, 3, 5 by default, counted from the first failure) and emits
// `invoice.payment_failed` so the client is sent the pay link; a card that needs the customer's authentication is left
// to the pay link. A worker that dies mid-charge leaves its claim, which is taken over after the lease with the same
// idempotency key, so the card is charged at most once per attempt. The payment itself goes through the invoice's
// compare-and-set, so the order is renewed in the same transaction that records the payment, or not at all.
import type { Kysely, Selectable } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { PaymentAttemptTable } from '../../db/tables/payments.ts';
import { afterTransaction, inTransaction } from '../../db/transaction.ts';
import type { EventBus } from '../../events.ts';
import type { Money } from '../../lib/money.ts';
import { isoSeconds } from '../../lib/time.ts';
import { toGatewayInvoice, type InvoicePayments } from '../invoice/gateway-payments.ts';
import type { ChargeOutcome } from '../invoice/gateways.ts';
import type { PaymentService } from './service.ts';

type AttemptRow = Selectable<PaymentAttemptTable>;

// The e-mail module declares the same type on its side (identical declarations merge).
declare module '../../events.ts' {
  interface TollgateEvents {
    /** An off-session charge of the invoice failed (declined, needs authentication, provider unreachable). */
    'invoice.payment_failed': { invoiceId: number; clientId: number; message: string };
  }
}

const DAY_MS = 86_400_000;
/** A claim older than this is a worker that died mid-charge; its attempt is taken over (same idempotency key). */
export const CLAIM_LEASE_MS = 5 * 60_000;

export interface ChargeReport {
  attempted: number;
  succeeded: number;
  failed: number;
}

export interface ChargeServiceDeps {
  db: Kysely<Database>;
  events: EventBus;
  invoicePayments: Pick<InvoicePayments, 'applyPayment' | 'recordFailure'>;
  payments: Pick<PaymentService, 'chargeableMethod'>;
  money: Money;
  retryDays: readonly number[];
  log?: (message: string, error: unknown) => void;
}

export function createChargeService({ db, events, invoicePayments, payments, money, retryDays, log }: ChargeServiceDeps) {
  let wake: (() => void) | null = null;

  /** Schedules attempt 1 for an unpaid renewal invoice of a client who can be charged off-session, inside `trx`. */
  async function scheduleFirst(trx: Kysely<Database>, invoiceId: number, now: Date): Promise<boolean> {
    const invoice = await trx.selectFrom('invoices').select(['id', 'client_id', 'status', 'total']).where('id', '=', invoiceId).executeTakeFirst();
    if (invoice === undefined || invoice.status !== 'unpaid' || invoice.total <= 0) return false;
    const renewal = await trx.selectFrom('invoice_items').select('id').where('invoice_id', '=', invoiceId).where('task', '=', 'renew').executeTakeFirst();
    if (renewal === undefined) return false;
    if ((await payments.chargeableMethod(trx, invoice.client_id)) === null) return false;
    const stamp = isoSeconds(now);
    const inserted = await trx
      .insertInto('payment_attempts')
      .values({ invoice_id: invoiceId, client_id: invoice.client_id, attempt: 1, status: 'scheduled', due_at: stamp, claimed_at: null, txn_ref: null, message: null, created_at: stamp, updated_at: stamp })
      .onConflict((oc) => oc.columns(['invoice_id', 'attempt']).doNothing())
      .executeTakeFirst();
    const created = Number(inserted.numInsertedOrUpdatedRows ?? 0n) === 1;
    if (created) afterTransaction(trx, (committed) => committed && wake?.());
    return created;
  }

  events.on('invoice.created', async ({ invoiceId }, trx) => {
    await scheduleFirst(trx, invoiceId, new Date());
  });

  async function finish(row: AttemptRow, status: AttemptRow['status'], fields: { txnRef?: string | null; message?: string | null }, now: Date, trx: Kysely<Database>): Promise<void> {
    await trx
      .updateTable('payment_attempts')
      .set({ status, txn_ref: fields.txnRef ?? null, message: fields.message ?? null, updated_at: isoSeconds(now) })
      .where('id', '=', row.id)
      .where('status', '=', 'processing')
      .execute();
  }

  /** When attempt `failed` (1-based) failed, the next one is due, or null when the retries are used up. */
  async function nextDue(trx: Kysely<Database>, row: AttemptRow, now: Date): Promise<Date | null> {
    const days = retryDays[row.attempt - 1];
    if (days === undefined) return null;
    const first = row.attempt === 1 ? null : await trx.selectFrom('payment_attempts').select('updated_at').where('invoice_id', '=', row.invoice_id).where('attempt', '=', 1).executeTakeFirst();
    const firstFailure = first === null || first === undefined ? now : new Date(first.updated_at);
    return new Date(firstFailure.getTime() + days * DAY_MS);
  }

  /** Runs one claimed attempt. */
  async function run(row: AttemptRow, now: Date): Promise<'succeeded' | 'failed' | 'skipped'> {
    const invoiceRow = await db.selectFrom('invoices').selectAll().where('id', '=', row.invoice_id).executeTakeFirst();
    const method = invoiceRow === undefined ? null : await payments.chargeableMethod(db, invoiceRow.client_id);
    if (invoiceRow === undefined || invoiceRow.status !== 'unpaid' || method === null) {
      // Paid meanwhile (by the pay link, by staff), canceled, or the card or auto-pay is gone: nothing to charge.
      await inTransaction(db, (trx) => finish(row, 'canceled', { message: invoiceRow?.status === 'unpaid' ? 'No card to charge' : `Invoice ${invoiceRow?.status ?? 'deleted'}` }, now, trx));
      return 'skipped';
    }
    const invoice = toGatewayInvoice(invoiceRow, money);
    const { gateway } = method;
    let outcome: ChargeOutcome;
    try {
      outcome = await gateway.chargeSavedMethod!({ invoice, customerRef: method.customerRef, methodRef: method.methodRef, idempotencyKey: `tollgate-invoice-${invoice.id}-attempt-${row.attempt}` });
    } catch (error) {
      log?.(`off-session charge of invoice ${invoice.id} failed`, error);
      outcome = { status: 'failed', ref: null, message: 'The payment could not be completed' };
    }
    return inTransaction(db, async (trx) => {
      if (outcome.status === 'succeeded') {
        await invoicePayments.applyPayment(trx, gateway, { invoiceId: invoice.id, ref: outcome.ref, amount: outcome.amount, currency: outcome.currency }, now);
        await finish(row, 'succeeded', { txnRef: outcome.ref }, now, trx);
        return 'succeeded';
      }
      await invoicePayments.recordFailure(trx, gateway, { invoiceId: invoice.id, ref: outcome.ref, amount: invoice.amount, currency: invoice.currency, message: outcome.message }, now);
      await finish(row, outcome.status === 'requires_action' ? 'requires_action' : 'failed', { txnRef: outcome.ref, message: outcome.message }, now, trx);
      const due = outcome.status === 'requires_action' ? null : await nextDue(trx, row, now);
      if (due !== null) {
        const stamp = isoSeconds(now);
        await trx
          .insertInto('payment_attempts')
          .values({ invoice_id: invoice.id, client_id: invoice.clientId, attempt: row.attempt + 1, status: 'scheduled', due_at: isoSeconds(due), claimed_at: null, txn_ref: null, message: null, created_at: stamp, updated_at: stamp })
          .onConflict((oc) => oc.columns(['invoice_id', 'attempt']).doNothing())
          .execute();
      }
      await events.emit('invoice.payment_failed', { invoiceId: invoice.id, clientId: invoice.clientId, message: outcome.message }, trx);
      return 'failed';
    });
  }

  return {
    scheduleFirst,

    /**
     * Claims and runs every attempt that is due (and every claim older than the lease). Safe to run from several
     * processes at once: each attempt is claimed by one compare-and-set.
     */
    async runDue(now = new Date()): Promise<ChargeReport> {
      const report: ChargeReport = { attempted: 0, succeeded: 0, failed: 0 };
      const stamp = isoSeconds(now);
      const stale = isoSeconds(new Date(now.getTime() - CLAIM_LEASE_MS));
      const due = await db
        .selectFrom('payment_attempts')
        .selectAll()
        .where((eb) =>
          eb.or([
            eb.and([eb('status', '=', 'scheduled'), eb('due_at', '<=', stamp)]),
            eb.and([eb('status', '=', 'processing'), eb('claimed_at', '<', stale)]),
          ]),
        )
        .orderBy('due_at')
        .limit(200)
        .execute();
      for (const candidate of due) {
        const claimed = await db
          .updateTable('payment_attempts')
          .set({ status: 'processing', claimed_at: stamp, updated_at: stamp })
          .where('id', '=', candidate.id)
          .where('status', '=', candidate.status)
          .where((eb) => (candidate.claimed_at === null ? eb('claimed_at', 'is', null) : eb('claimed_at', '=', candidate.claimed_at)))
          .executeTakeFirst();
        if (Number(claimed.numUpdatedRows) !== 1) continue;
        report.attempted += 1;
        try {
          const result = await run({ ...candidate, status: 'processing', claimed_at: stamp }, now);
          if (result === 'succeeded') report.succeeded += 1;
          if (result === 'failed') report.failed += 1;
        } catch (error) {
          // Left claimed: taken over after the lease with the same idempotency key.
          log?.(`off-session charge attempt ${candidate.id} could not be recorded`, error);
        }
      }
      return report;
    },

    /** Attempts of an invoice, oldest first (staff views and tests). */
    async attemptsOf(invoiceId: number): Promise<AttemptRow[]> {
      return db.selectFrom('payment_attempts').selectAll().where('invoice_id', '=', invoiceId).orderBy('attempt').execute();
    },

    /** The in-process worker calls this to be woken as soon as an attempt is written. */
    onWake(callback: (() => void) | null): void {
      wake = callback;
    },
  };
}

export type ChargeService = ReturnType<typeof createChargeService>;

/** The worker: runs due charges and pending provider events every `intervalMs`, and at once when woken. */
export function paymentWorker(
  charges: Pick<ChargeService, 'runDue' | 'onWake'>,
  pendingEvents: () => Promise<unknown>,
  onClose: (task: () => Promise<void>) => void,
  log: (message: string, error: unknown) => void,
  intervalMs = 60_000,
): () => void {
  return () => {
    let running: Promise<unknown> | null = null;
    let again = false;
    const tick = (): void => {
      if (running !== null) {
        again = true;
        return;
      }
      running = pendingEvents()
        .then(() => charges.runDue(new Date()))
        .catch((error: unknown) => log('payment worker failed', error))
        .finally(() => {
          running = null;
          if (again) {
            again = false;
            tick();
          }
        });
    };
    charges.onWake(tick);
    const timer = setInterval(tick, intervalMs);
    timer.unref();
    tick();
    onClose(async () => {
      clearInterval(timer);
      charges.onWake(null);
      if (running !== null) await running;
    });
  };
}
