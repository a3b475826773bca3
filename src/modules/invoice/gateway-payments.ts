// The invoice side of gateway payments: applying what a provider reports (a payment, a failed charge, a refund) to
// invoices and the transaction log, refunds started by staff, and the transaction list (CONTRACT §9). Part of the
// invoice service, split off along this seam: it writes `invoices` and `transactions` only through the same
// compare-and-set as mark_as_paid, so a payment is applied once whatever arrives twice, late or out of order.
import type { Kysely, Selectable } from 'kysely';
import { sql } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { TransactionTable } from './tables.ts';
import { inTransaction } from '../../platform/transaction.ts';
import type { EventBus } from '../../platform/events.ts';
import { errors } from '../../platform/errors.ts';
import type { Money } from '../../lib/money.ts';
import { pageRequest, toPage, type Page } from '../../lib/paginator.ts';
import { isoSeconds } from '../../lib/time.ts';
import type { OutboxService } from '../outbox/service.ts';
import { gatewayFailure, type GatewayInvoice, type GatewayRegistry, type PaymentGateway } from './gateways.ts';
import { createLateRefunds } from './late-refunds.ts';
import type { InvoiceRow, InvoiceService } from './service.ts';

type TransactionRow = Selectable<TransactionTable>;

export type TransactionStatus = 'processed' | 'failed' | 'refunded' | 'error';

/** CONTRACT §9 transaction record. */
export interface TransactionRecord {
  id: number;
  invoice_id: number;
  /** The invoice's legal number once paid, null before: with invoice_id, what invoiceLabel names it by. */
  invoice_number: string | null;
  client_id: number | null;
  gateway: string | null;
  txn_id: string | null;
  type: 'payment' | 'refund';
  amount: string;
  currency: string;
  status: TransactionStatus;
  message: string | null;
  created_at: string;
}

export interface TransactionFilters {
  invoice_id?: number | undefined;
  client_id?: number | undefined;
  gateway?: string | undefined;
  status?: TransactionStatus | undefined;
  page?: number | undefined;
  per_page?: number | undefined;
}

export interface ReportedPayment {
  invoiceId: number;
  ref: string;
  amount: number;
  currency: string;
}

/** What applying a reported payment came to. */
export type PaymentResult = 'paid' | 'duplicate' | 'error' | 'unknown_invoice';

/** A refund reported for a payment Tollgate has not recorded yet: try again later (events arrive out of order). */
export class PaymentNotYetKnown extends Error {}

export interface InvoicePaymentDeps {
  db: Kysely<Database>;
  events: EventBus;
  invoices: Pick<InvoiceService, 'payInTransaction' | 'requireRow' | 'setStatus' | 'unpayableReason'>;
  gateways: GatewayRegistry;
  money: Money;
  /** Late payments are refunded through the outbox (late-refunds.ts). */
  outbox: Pick<OutboxService, 'enqueue' | 'registerKind'>;
  log?: (message: string, error: unknown) => void;
}

export function toGatewayInvoice(row: InvoiceRow, money: Money): GatewayInvoice {
  return { id: row.id, hash: row.hash, number: row.number, clientId: row.client_id, total: money.format(row.total), amount: row.total, currency: row.currency };
}

export function createInvoicePayments({ db, events, invoices, gateways, money, outbox, log }: InvoicePaymentDeps) {
  /** Serialises work on one invoice until `trx` ends (a no-op update takes the row lock on PostgreSQL). */
  async function lock(trx: Kysely<Database>, id: number): Promise<InvoiceRow | undefined> {
    await trx
      .updateTable('invoices')
      .set((eb) => ({ updated_at: eb.ref('updated_at') }))
      .where('id', '=', id)
      .execute();
    return trx.selectFrom('invoices').selectAll().where('id', '=', id).executeTakeFirst();
  }

  const lateRefunds = createLateRefunds({ db, events, gateways, outbox, lock, ...(log !== undefined && { log }) });

  async function insert(
    trx: Kysely<Database>,
    row: InvoiceRow,
    gateway: PaymentGateway | null,
    fields: { ref: string | null; type: 'payment' | 'refund'; amount: number; currency: string; status: TransactionStatus; message: string | null },
    now: Date,
  ): Promise<number> {
    const inserted = await trx
      .insertInto('transactions')
      .values({
        invoice_id: row.id,
        client_id: row.client_id,
        gateway_id: gateway?.id ?? null,
        gateway: gateway?.code ?? null,
        transaction_id: fields.ref,
        amount: fields.amount,
        currency: fields.currency,
        type: fields.type,
        status: fields.status,
        message: fields.message === null ? null : fields.message.slice(0, 1000),
        created_at: isoSeconds(now),
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    return inserted.id;
  }

  async function has(trx: Kysely<Database>, invoiceId: number, gateway: PaymentGateway, ref: string, type: string, status: TransactionStatus): Promise<boolean> {
    const found = await trx
      .selectFrom('transactions')
      .select('id')
      .where('invoice_id', '=', invoiceId)
      .where('gateway', '=', gateway.code)
      .where('transaction_id', '=', ref)
      .where('type', '=', type)
      .where('status', '=', status)
      .executeTakeFirst();
    return found !== undefined;
  }

  /** The invoice's own refunds; a late payment's refund (`refund_of` set, late-refunds.ts) gives back other money. */
  async function refundedSoFar(trx: Kysely<Database>, invoiceId: number): Promise<number> {
    const row = await trx
      .selectFrom('transactions')
      .select(sql<string | number | null>`sum(amount)`.as('total'))
      .where('invoice_id', '=', invoiceId)
      .where('type', '=', 'refund')
      .where('status', '=', 'refunded')
      .where('refund_of', 'is', null)
      .executeTakeFirst();
    return Number(row?.total ?? 0);
  }

  /** The payment that settled the invoice, if it went through a gateway. */
  async function settlingPayment(trx: Kysely<Database>, invoiceId: number): Promise<TransactionRow | undefined> {
    return trx
      .selectFrom('transactions')
      .selectAll()
      .where('invoice_id', '=', invoiceId)
      .where('type', '=', 'payment')
      .where('status', '=', 'processed')
      .orderBy('id')
      .executeTakeFirst();
  }

  /**
   * Records refunds of a gateway payment up to `refundedTotal` (providers report refunds cumulatively, and staff
   * refunds record theirs as they happen, so whichever comes second finds nothing left to record). A full refund
   * makes the invoice `refunded`, as admin/invoice/refund does; a partial one leaves invoice and orders as they are.
   */
  async function applyRefund(
    trx: Kysely<Database>,
    gateway: PaymentGateway,
    report: { paymentRef: string; ref: string; refundedTotal: number; currency: string },
    now: Date,
  ): Promise<'refunded' | 'duplicate'> {
    const payment = await trx
      .selectFrom('transactions')
      .selectAll()
      .where('gateway', '=', gateway.code)
      .where('transaction_id', '=', report.paymentRef)
      .where('type', '=', 'payment')
      .where('status', '=', 'processed')
      .executeTakeFirst();
    if (payment === undefined) {
      // A payment that was never applied (a late one) is refunded as its own money, not the invoice's.
      const late = await lateRefunds.recordReported(trx, gateway, report, now);
      if (late !== null) return late;
      throw new PaymentNotYetKnown(`Payment ${report.paymentRef} is not recorded yet`);
    }
    const row = await lock(trx, payment.invoice_id);
    if (row === undefined) return 'duplicate';
    const delta = Math.min(report.refundedTotal, payment.amount) - (await refundedSoFar(trx, row.id));
    if (delta <= 0) return 'duplicate';
    await insert(trx, row, gateway, { ref: report.ref, type: 'refund', amount: delta, currency: row.currency, status: 'refunded', message: null }, now);
    if (report.refundedTotal >= payment.amount && row.status === 'paid') await invoices.setStatus(trx, row, 'paid', 'refunded', now, 'refunded');
    await events.emit('invoice.refunded', { invoiceId: row.id, clientId: row.client_id, amount: delta }, trx);
    return 'refunded';
  }

  function toRecord(row: TransactionRow, invoiceNumber: string | null): TransactionRecord {
    return {
      id: row.id,
      invoice_id: row.invoice_id,
      invoice_number: invoiceNumber,
      client_id: row.client_id,
      gateway: row.gateway,
      txn_id: row.transaction_id,
      type: row.type === 'refund' ? 'refund' : 'payment',
      amount: money.format(row.amount),
      currency: row.currency,
      status: row.status as TransactionStatus,
      message: row.message,
      created_at: row.created_at,
    };
  }

  return {
    lock,

    /**
     * A payment the provider reports for an invoice. Unpaid and matching → paid through mark_as_paid's compare-and-set
     * (orders activated or renewed in the same transaction). The same payment again → nothing. Amount or currency
     * not matching → an `error` transaction for staff to look at; the invoice stays. An invoice no longer unpaid
     * (canceled, voided, already paid) → an `error` transaction, refunded automatically when the gateway can refund
     * (late-refunds.ts). An unpaid invoice the order has moved past (order-tasks.ts) → the same, and the invoice voided.
     */
    async applyPayment(trx: Kysely<Database>, gateway: PaymentGateway, report: ReportedPayment, now: Date): Promise<PaymentResult> {
      const row = await lock(trx, report.invoiceId);
      if (row === undefined) return 'unknown_invoice';
      if (await has(trx, row.id, gateway, report.ref, 'payment', 'processed')) return 'duplicate';
      let problem: string | null = null;
      // Money taken for an invoice that no longer takes it goes back by itself when the gateway can refund it; a
      // mismatched amount or currency is left to staff (it may be a provider's or an operator's mistake to look at).
      const refundable = gateway.refund !== undefined;
      const fate = refundable ? 'this payment is refunded automatically' : 'this payment should be refunded';
      let late = false;
      if (report.amount !== row.total || report.currency.toUpperCase() !== row.currency.toUpperCase()) {
        problem = `Paid ${money.format(report.amount)} ${report.currency.toUpperCase()} but the invoice is for ${money.format(row.total)} ${row.currency}`;
      } else if (row.status !== 'unpaid') {
        problem = `The invoice was already ${row.status}; this payment was not applied and ${fate}`;
        late = true;
      } else {
        // The order moved past what the invoice buys (a lapsed plan change, a renewal of another plan, an order
        // canceled at period end): the money is recorded and given back, the invoice voided, nothing applied.
        const stale = await invoices.unpayableReason(trx, row.id, now);
        if (stale !== null) {
          problem = `Not applied: ${stale}. The invoice was voided; ${fate}`;
          late = true;
          await invoices.setStatus(trx, row, 'unpaid', 'canceled', now, 'voided');
          await events.emit('invoice.canceled', { invoiceId: row.id, clientId: row.client_id, total: row.total }, trx);
        }
      }
      if (problem !== null) {
        if (!(await has(trx, row.id, gateway, report.ref, 'payment', 'error'))) {
          const paymentId = await insert(
            trx,
            row,
            gateway,
            { ref: report.ref, type: 'payment', amount: report.amount, currency: report.currency.toUpperCase(), status: 'error', message: problem },
            now,
          );
          // In the transaction that records the payment: the refund exists exactly when the payment does.
          if (late && refundable) await lateRefunds.schedule(trx, gateway, paymentId, report.ref);
        }
        return 'error';
      }
      await invoices.payInTransaction(trx, row.id, { transactionId: report.ref, gatewayId: gateway.id, gatewayCode: gateway.code }, now);
      return 'paid';
    },

    /**
     * Before an off-session charge (payment/charges.ts): voids the unpaid invoice if paying it would no longer apply
     * (a renewal of an order canceled at period end or moved to another plan, a lapsed plan change), so no card is
     * charged for it. Returns the reason, or null when the invoice may be charged.
     */
    async voidIfStale(invoiceId: number, now: Date): Promise<string | null> {
      return inTransaction(db, async (trx) => {
        const row = await lock(trx, invoiceId);
        if (row?.status !== 'unpaid') return null;
        const stale = await invoices.unpayableReason(trx, row.id, now);
        if (stale === null) return null;
        await invoices.setStatus(trx, row, 'unpaid', 'canceled', now, 'voided');
        await events.emit('invoice.canceled', { invoiceId: row.id, clientId: row.client_id, total: row.total }, trx);
        return stale;
      });
    },

    /** A failed charge: a `failed` transaction with the provider's message (once per provider reference). */
    async recordFailure(
      trx: Kysely<Database>,
      gateway: PaymentGateway,
      report: { invoiceId: number; ref: string | null; amount: number; currency: string; message: string },
      now: Date,
    ): Promise<boolean> {
      const row = await trx.selectFrom('invoices').selectAll().where('id', '=', report.invoiceId).executeTakeFirst();
      if (row === undefined) return false;
      if (report.ref !== null && (await has(trx, row.id, gateway, report.ref, 'payment', 'failed'))) return false;
      await insert(trx, row, gateway, { ref: report.ref, type: 'payment', amount: report.amount, currency: report.currency.toUpperCase(), status: 'failed', message: report.message }, now);
      return true;
    },

    applyRefund,

    /**
     * admin/invoice/refund {id, amount?}: full by default. A gateway payment is refunded at the provider first (with
     * an idempotency key made of the invoice, what was refunded before and the amount, so a retried request refunds
     * once), then recorded; a manual one is only recorded.
     */
    async refund(id: number, amount: number | undefined, now = new Date()): Promise<void> {
      const row = await invoices.requireRow(db, id);
      if (row.status !== 'paid') throw errors.conflict(`The invoice is ${row.status}; it cannot be refunded`);
      const before = await refundedSoFar(db, id);
      const remaining = row.total - before;
      const wanted = amount ?? remaining;
      if (wanted <= 0) throw errors.invalid('amount', 'must be more than 0');
      if (wanted > remaining) throw errors.invalid('amount', `must not be more than what is left to refund (${money.format(remaining)})`);
      const payment = await settlingPayment(db, id);
      const gateway = payment?.gateway_id === null || payment === undefined ? undefined : gateways.get(payment.gateway_id);
      if (gateway?.refund !== undefined && payment?.transaction_id) {
        let ref: string;
        try {
          ({ ref } = await gateway.refund({ paymentRef: payment.transaction_id, amount: wanted, idempotencyKey: `tollgate-refund-${id}-${before}-${wanted}` }));
        } catch (error) {
          const failure = gatewayFailure(gateway, 'refund', error, `${gateway.title} did not accept the refund.`);
          throw errors.gatewayFailed(`${failure.message.replace(/[.\s]*$/, '')}. Nothing was refunded; try again later.`);
        }
        await inTransaction(db, (trx) => applyRefund(trx, gateway, { paymentRef: payment.transaction_id!, ref, refundedTotal: before + wanted, currency: row.currency }, now));
        return;
      }
      await inTransaction(db, async (trx) => {
        const locked = await lock(trx, id);
        if (locked === undefined) throw errors.notFound('Invoice');
        if (locked.status !== 'paid') throw errors.conflict(`The invoice is ${locked.status}; it cannot be refunded`);
        const left = locked.total - (await refundedSoFar(trx, id));
        if (wanted > left) throw errors.conflict('The invoice was refunded meanwhile');
        await insert(trx, locked, null, { ref: null, type: 'refund', amount: wanted, currency: locked.currency, status: 'refunded', message: null }, now);
        if (wanted === left) await invoices.setStatus(trx, locked, 'paid', 'refunded', now, 'refunded');
        await events.emit('invoice.refunded', { invoiceId: locked.id, clientId: locked.client_id, amount: wanted }, trx);
      });
    },

    async listTransactions(filters: TransactionFilters): Promise<Page<TransactionRecord>> {
      const request = pageRequest(filters);
      let query = db.selectFrom('transactions');
      if (filters.invoice_id !== undefined) query = query.where('invoice_id', '=', filters.invoice_id);
      if (filters.client_id !== undefined) query = query.where('client_id', '=', filters.client_id);
      if (filters.gateway !== undefined) query = query.where('gateway', '=', filters.gateway);
      if (filters.status !== undefined) query = query.where('status', '=', filters.status);
      const total = await query.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
      const rows = await query.selectAll().orderBy('id', 'desc').limit(request.perPage).offset(request.offset).execute();
      // The invoices' numbers, so every list names an invoice as people read it (one query for the page).
      const ids = [...new Set(rows.map((row) => row.invoice_id))];
      const numbers = new Map(
        ids.length === 0 ? [] : (await db.selectFrom('invoices').select(['id', 'number']).where('id', 'in', ids).execute()).map((row) => [row.id, row.number] as const),
      );
      return toPage(request, total.n, rows.map((row) => toRecord(row, numbers.get(row.invoice_id) ?? null)));
    },
  };
}

export type InvoicePayments = ReturnType<typeof createInvoicePayments>;
