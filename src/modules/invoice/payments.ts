// The invoice's money (CONTRACT §9): the three things the payment module asks of an invoice — pay it (through the
// one compare-and-set of mark_as_paid), record a refund of it, record a failed charge — and the transactions they
// leave, listed for staff. Part of the invoice service, split off along this seam: with payInTransaction, the only
// writer of `transactions`, so a payment is applied once whatever arrives twice, late or out of order. A gateway is
// known here only as the id and code a payment came through: which provider that is, and how to ask it for money,
// is the payment module's business (payment/gateway-payments.ts).
import type { Kysely, Selectable } from 'kysely';
import { sql } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { TransactionTable } from './tables.ts';
import { inTransaction } from '../../platform/transaction.ts';
import type { EventBus } from '../../platform/events.ts';
import { errors } from '../../platform/errors.ts';
import { moneyFor } from '../../lib/money.ts';
import { pageRequest, toPage, type Page } from '../../lib/paginator.ts';
import { isoSeconds } from '../../lib/time.ts';
import type { InvoiceService } from './service.ts';
import type { InvoiceRow, PayableInvoice, TransactionFilters, TransactionRecord, TransactionStatus } from './types.ts';
import './events.ts';
import type { CreditNotes } from './credit-notes/service.ts';
import { recordCardCountry } from './card-evidence.ts';

type TransactionRow = Selectable<TransactionTable>;

/** The gateway code of payments from the client's balance (credit/invoice-credits.ts records them so). */
const BALANCE = 'credits';

export type { PayableInvoice, TransactionFilters, TransactionRecord, TransactionStatus } from './types.ts';

/** The gateway a payment came through, as the ledger records it (`gateway_id`, `gateway`). */
export interface PaymentSource {
  id: number;
  code: string;
}

export interface ReportedPayment {
  invoiceId: number;
  ref: string;
  amount: number;
  currency: string;
  /** The issuing country of the card paid with, when the provider says (tax evidence: card-evidence.ts). */
  cardCountry?: string | null;
}

/** What applying a reported payment came to. */
export type PaymentResult = 'paid' | 'duplicate' | 'error' | 'unknown_invoice';

/**
 * What paying came to, and `lateRefund`: the id of the `error` payment just recorded that goes back to the payer by
 * itself (money taken for an invoice that no longer takes it, through a gateway that can refund), else null.
 */
export interface PayOutcome {
  result: PaymentResult;
  lateRefund: number | null;
}

/** A late payment (recorded, never applied) and what has been given back of it so far. */
export interface LatePayment {
  id: number;
  invoiceId: number;
  gatewayCode: string;
  ref: string;
  amount: number;
  refunded: number;
}

/** What a staff refund of an invoice comes to, before any money moves (refundPlan). */
export interface RefundPlan {
  invoiceId: number;
  currency: string;
  /** Refunded through the settling gateway before this refund, and what this one gives back through it, minor units. */
  before: number;
  amount: number;
  /** What this refund gives back to the client's balance (the part pay_with_credits paid), before `amount`. */
  toBalance: number;
  /** The gateway payment that settled the invoice, if it came through one: the provider refunds it. */
  settledBy: { gatewayId: number; ref: string } | null;
}

export interface InvoicePaymentDeps {
  db: Kysely<Database>;
  events: EventBus;
  invoices: Pick<InvoiceService, 'payInTransaction' | 'requireRow' | 'setStatus' | 'unpayableReason' | 'releaseCredit'>;
  /** Every refund of the invoice's money is documented by a credit note, in the refund's transaction. */
  creditNotes: Pick<CreditNotes, 'forRefund' | 'leftOf'>;
}

export function createInvoicePayments({ db, events, invoices, creditNotes }: InvoicePaymentDeps) {
  /** Serialises work on one invoice until `trx` ends (a no-op update takes the row lock on PostgreSQL). */
  async function lock(trx: Kysely<Database>, id: number): Promise<InvoiceRow | undefined> {
    await trx
      .updateTable('invoices')
      .set((eb) => ({ updated_at: eb.ref('updated_at') }))
      .where('id', '=', id)
      .execute();
    return trx.selectFrom('invoices').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async function insert(
    trx: Kysely<Database>,
    row: InvoiceRow,
    source: PaymentSource | { id: null; code: string } | null,
    fields: { ref: string | null; type: 'payment' | 'refund'; amount: number; currency: string; status: TransactionStatus; message: string | null },
    now: Date,
  ): Promise<number> {
    const inserted = await trx
      .insertInto('transactions')
      .values({
        invoice_id: row.id,
        client_id: row.client_id,
        gateway_id: source?.id ?? null,
        gateway: source?.code ?? null,
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

  async function has(trx: Kysely<Database>, invoiceId: number, source: PaymentSource, ref: string, type: string, status: TransactionStatus): Promise<boolean> {
    const found = await trx
      .selectFrom('transactions')
      .select('id')
      .where('invoice_id', '=', invoiceId)
      .where('gateway', '=', source.code)
      .where('transaction_id', '=', ref)
      .where('type', '=', type)
      .where('status', '=', status)
      .executeTakeFirst();
    return found !== undefined;
  }

  /**
   * The invoice's own refunds (a late payment's refund, `refund_of` set, gives back other money); with `gateway`,
   * only those through it (`credits`: what went back to the balance).
   */
  async function refundedSoFar(trx: Kysely<Database>, invoiceId: number, gateway?: string): Promise<number> {
    let query = trx
      .selectFrom('transactions')
      .select(sql<string | number | null>`sum(amount)`.as('total'))
      .where('invoice_id', '=', invoiceId)
      .where('type', '=', 'refund')
      .where('status', '=', 'refunded')
      .where('refund_of', 'is', null);
    if (gateway !== undefined) query = query.where('gateway', '=', gateway);
    const row = await query.executeTakeFirst();
    return Number(row?.total ?? 0);
  }

  /** What the client's balance paid of the invoice (part payments, or all of it) and has not had back yet. */
  async function balanceLeft(trx: Kysely<Database>, row: InvoiceRow): Promise<number> {
    const payment = await settlingPayment(trx, row.id);
    const fromBalance = row.credit_applied + (payment?.gateway === BALANCE ? payment.amount : 0);
    return Math.max(0, fromBalance - (await refundedSoFar(trx, row.id, BALANCE)));
  }

  /** What has been given back of the late payment `paymentId` so far, minor units. */
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
   * Records the refund of a late payment up to `refundedTotal` (everything given back of it so far, as providers
   * report it): the part not recorded yet, if any, as one `refund` transaction naming the payment (`refund_of`), and
   * the client's mail (`invoice.payment_refunded`).
   */
  async function recordLate(trx: Kysely<Database>, payment: TransactionRow, report: { ref: string; refundedTotal: number }, now: Date): Promise<'refunded' | 'duplicate'> {
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

  /**
   * Records refunds of a gateway payment up to `refundedTotal` (providers report refunds cumulatively, and staff
   * refunds record theirs as they happen, so whichever comes second finds nothing left to record). A full refund
   * makes the invoice `refunded`, as admin/invoice/refund does; a partial one leaves invoice and orders as they are.
   * A payment that was never applied (a late one) is refunded as its own money, not the invoice's. `unknown_payment`:
   * no such payment is recorded (yet: events arrive out of order).
   */
  async function recordRefund(
    trx: Kysely<Database>,
    source: PaymentSource,
    report: { paymentRef: string; ref: string; refundedTotal: number; currency: string; reason?: string | null },
    now: Date,
  ): Promise<'refunded' | 'duplicate' | 'unknown_payment'> {
    const payment = await trx
      .selectFrom('transactions')
      .selectAll()
      .where('gateway', '=', source.code)
      .where('transaction_id', '=', report.paymentRef)
      .where('type', '=', 'payment')
      .where('status', '=', 'processed')
      .executeTakeFirst();
    if (payment === undefined) {
      const late = await trx
        .selectFrom('transactions')
        .selectAll()
        .where('gateway', '=', source.code)
        .where('transaction_id', '=', report.paymentRef)
        .where('type', '=', 'payment')
        .where('status', '=', 'error')
        .orderBy('id')
        .executeTakeFirst();
      return late === undefined ? 'unknown_payment' : recordLate(trx, late, report, now);
    }
    const row = await lock(trx, payment.invoice_id);
    if (row === undefined) return 'duplicate';
    const delta = Math.min(report.refundedTotal, payment.amount) - (await refundedSoFar(trx, row.id, source.code));
    if (delta <= 0) return 'duplicate';
    const refundId = await insert(trx, row, source, { ref: report.ref, type: 'refund', amount: delta, currency: row.currency, status: 'refunded', message: null }, now);
    await creditNotes.forRefund(trx, row.id, { transactionId: refundId, amount: delta, reason: report.reason ?? null }, now);
    // Refunded: all the payment went back, or nothing is left to credit (part was credited to the balance before).
    const done = report.refundedTotal >= payment.amount || (await creditNotes.leftOf(trx, row)) <= 0;
    if (done && row.status === 'paid') await invoices.setStatus(trx, row, 'paid', 'refunded', now, 'refunded');
    await events.emit('invoice.refunded', { invoiceId: row.id, clientId: row.client_id, amount: delta }, trx);
    return 'refunded';
  }

  const payable = (row: InvoiceRow): PayableInvoice => ({
    id: row.id,
    hash: row.hash,
    number: row.number,
    clientId: row.client_id,
    status: row.status,
    amount: row.total - row.credit_applied,
    total: row.total,
    creditApplied: row.credit_applied,
    currency: row.currency,
  });

  function toRecord(row: TransactionRow, invoiceNumber: string | null): TransactionRecord {
    return {
      id: row.id,
      invoice_id: row.invoice_id,
      invoice_number: invoiceNumber,
      client_id: row.client_id,
      gateway: row.gateway,
      txn_id: row.transaction_id,
      type: row.type === 'refund' ? 'refund' : 'payment',
      amount: moneyFor(row.currency).format(row.amount),
      currency: row.currency,
      status: row.status as TransactionStatus,
      message: row.message,
      created_at: row.created_at,
    };
  }

  return {
    /** The invoice with this (unguessable) hash, to start paying it; null when there is none. */
    async payableByHash(hash: string): Promise<PayableInvoice | null> {
      const row = await db.selectFrom('invoices').selectAll().where('hash', '=', hash).executeTakeFirst();
      return row === undefined ? null : payable(row);
    },

    /** The invoice `id` (read with `trx`), to charge it; null when there is none. */
    async payable(trx: Kysely<Database>, id: number): Promise<PayableInvoice | null> {
      const row = await trx.selectFrom('invoices').selectAll().where('id', '=', id).executeTakeFirst();
      return row === undefined ? null : payable(row);
    },

    /** Whether the invoice buys more of a running order (a renewal, usage overage): what auto-pay charges off-session. */
    async renewsService(trx: Kysely<Database>, id: number): Promise<boolean> {
      const line = await trx.selectFrom('invoice_items').select('id').where('invoice_id', '=', id).where('task', 'in', ['renew', 'usage']).executeTakeFirst();
      return line !== undefined;
    },

    /**
     * Pays the invoice with a payment a gateway reports. Unpaid and matching → paid through mark_as_paid's
     * compare-and-set (orders activated or renewed in the same transaction). The same payment again → nothing. Amount
     * or currency not matching → an `error` transaction for staff to look at; the invoice stays. An invoice no longer
     * unpaid (canceled, voided, already paid) → an `error` transaction, to be refunded (`lateRefund`) when the gateway
     * is `refundable`. An unpaid invoice the order has moved past (order-tasks.ts) → the same, and the invoice voided.
     */
    async pay(trx: Kysely<Database>, source: PaymentSource & { refundable: boolean }, report: ReportedPayment, now: Date): Promise<PayOutcome> {
      const row = await lock(trx, report.invoiceId);
      if (row === undefined) return { result: 'unknown_invoice', lateRefund: null };
      if (await has(trx, row.id, source, report.ref, 'payment', 'processed')) {
        // The same payment reported again may know the card when the first report could not tell.
        await recordCardCountry(trx, row.id, report.cardCountry);
        return { result: 'duplicate', lateRefund: null };
      }
      let problem: string | null = null;
      // Money taken for an invoice that no longer takes it goes back by itself when the gateway can refund it; a
      // mismatched amount or currency is left to staff (it may be a provider's or an operator's mistake to look at).
      const fate = source.refundable ? 'this payment is refunded automatically' : 'this payment should be refunded';
      let late = false;
      // Due: the total less what the balance paid of it. A payment of the whole total (a Checkout started before part
      // was paid from the balance) pays the invoice too, and the balance's part goes back to the balance.
      const due = row.total - row.credit_applied;
      const whole = row.credit_applied > 0 && report.amount === row.total && row.status === 'unpaid';
      if ((report.amount !== due && !whole) || report.currency.toUpperCase() !== row.currency.toUpperCase()) {
        problem = `Paid ${moneyFor(report.currency).format(report.amount)} ${report.currency.toUpperCase()} but the invoice is for ${moneyFor(row.currency).format(due)} ${row.currency}`;
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
        if (await has(trx, row.id, source, report.ref, 'payment', 'error')) return { result: 'error', lateRefund: null };
        const paymentId = await insert(
          trx,
          row,
          source,
          { ref: report.ref, type: 'payment', amount: report.amount, currency: report.currency.toUpperCase(), status: 'error', message: problem },
          now,
        );
        return { result: 'error', lateRefund: late && source.refundable ? paymentId : null };
      }
      if (whole) await invoices.releaseCredit(trx, row);
      await invoices.payInTransaction(trx, row.id, { transactionId: report.ref, gatewayId: source.id, gatewayCode: source.code }, now);
      // The card that paid is evidence of where the buyer is; a late or mismatched payment's card is not the buyer's proof.
      await recordCardCountry(trx, row.id, report.cardCountry);
      return { result: 'paid', lateRefund: null };
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
      source: PaymentSource,
      report: { invoiceId: number; ref: string | null; amount: number; currency: string; message: string },
      now: Date,
    ): Promise<boolean> {
      const row = await trx.selectFrom('invoices').selectAll().where('id', '=', report.invoiceId).executeTakeFirst();
      if (row === undefined) return false;
      if (report.ref !== null && (await has(trx, row.id, source, report.ref, 'payment', 'failed'))) return false;
      await insert(trx, row, source, { ref: report.ref, type: 'payment', amount: report.amount, currency: report.currency.toUpperCase(), status: 'failed', message: report.message }, now);
      return true;
    },

    recordRefund,

    /**
     * admin/invoice/refund {id, amount?}, checked before any money moves: the invoice is paid (409), `amount` (full by
     * default) is more than 0 and no more than what is left (422). Says which gateway payment settled it, if any.
     */
    async refundPlan(id: number, amount: number | undefined): Promise<RefundPlan> {
      const row = await invoices.requireRow(db, id);
      if (row.status !== 'paid') throw errors.conflict(`The invoice is ${row.status}; it cannot be refunded`);
      // What is left to credit: refunds and credit notes to the balance share the invoice's total.
      const remaining = await creditNotes.leftOf(db, row);
      if (remaining <= 0) throw errors.conflict('Nothing is left to refund: the invoice was credited in full');
      const wanted = amount ?? remaining;
      if (wanted <= 0) throw errors.invalid('amount', 'must be more than 0');
      if (wanted > remaining) throw errors.invalid('amount', `must not be more than what is left to refund (${moneyFor(row.currency).format(remaining)})`);
      const payment = await settlingPayment(db, id);
      // The balance's part (what pay_with_credits paid) goes back to the balance first, the rest to the payer.
      const toBalance = Math.min(wanted, await balanceLeft(db, row));
      const settledBy = payment?.gateway_id === null || payment?.gateway_id === undefined || !payment.transaction_id ? null : { gatewayId: payment.gateway_id, ref: payment.transaction_id };
      const before = payment?.gateway === null || payment === undefined ? await refundedSoFar(db, id) : await refundedSoFar(db, id, payment.gateway);
      return { invoiceId: id, currency: row.currency, before, amount: wanted - toBalance, toBalance, settledBy };
    },

    /**
     * A refund of `amount` no gateway makes (a manual payment, or a gateway that cannot refund): recorded only. With
     * `toBalance`, of the part the client's balance paid: recorded under the `credits` gateway, and the balance gets
     * it back (`invoice.refunded` with `toBalance`, credit/invoice-credits.ts).
     */
    async refundManually(id: number, amount: number, now: Date, reason: string | null = null, toBalance = false): Promise<void> {
      await inTransaction(db, async (trx) => {
        const locked = await lock(trx, id);
        if (locked === undefined) throw errors.notFound('Invoice');
        if (locked.status !== 'paid') throw errors.conflict(`The invoice is ${locked.status}; it cannot be refunded`);
        const left = await creditNotes.leftOf(trx, locked);
        if (amount > left) throw errors.conflict('The invoice was refunded or credited meanwhile');
        if (toBalance && amount > (await balanceLeft(trx, locked))) throw errors.conflict('The invoice was refunded meanwhile');
        const source = toBalance ? { id: null, code: BALANCE } : null;
        const refundId = await insert(trx, locked, source, { ref: null, type: 'refund', amount, currency: locked.currency, status: 'refunded', message: null }, now);
        await creditNotes.forRefund(trx, locked.id, { transactionId: refundId, amount, reason }, now);
        if (amount === left) await invoices.setStatus(trx, locked, 'paid', 'refunded', now, 'refunded');
        await events.emit('invoice.refunded', { invoiceId: locked.id, clientId: locked.client_id, amount, ...(toBalance && { toBalance }) }, trx);
      });
    },

    /** The late payment `paymentId` to give back, or null when it is not a recorded gateway payment. */
    async latePayment(paymentId: number): Promise<LatePayment | null> {
      const payment = await db.selectFrom('transactions').selectAll().where('id', '=', paymentId).executeTakeFirst();
      if (payment?.transaction_id === null || payment?.transaction_id === undefined || payment.gateway === null) return null;
      return { id: payment.id, invoiceId: payment.invoice_id, gatewayCode: payment.gateway, ref: payment.transaction_id, amount: payment.amount, refunded: await refundedOf(db, payment.id) };
    },

    /** Records what the provider confirmed of a late payment's refund (see recordLate). */
    async recordLateRefund(trx: Kysely<Database>, paymentId: number, report: { ref: string; refundedTotal: number }, now: Date): Promise<'refunded' | 'duplicate'> {
      const payment = await trx.selectFrom('transactions').selectAll().where('id', '=', paymentId).executeTakeFirstOrThrow();
      return recordLate(trx, payment, report, now);
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
