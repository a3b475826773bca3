// Gateway payments (CONTRACT §9): what a provider reports (a payment, a failed charge, a refund) handed to the invoice
// as the three things it does with money — pay, record a failure, record a refund (invoice/payments.ts) — and refunds
// staff ask for, made at the provider first. This is where a gateway meets an invoice: the invoice module sees only
// the gateway's id and code, whether it can refund, and the amounts. Late payments (recorded, never applied) are given
// back through the outbox (late-refunds.ts).
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { inTransaction } from '../../platform/transaction.ts';
import { errors } from '../../platform/errors.ts';
import { moneyFor } from '../../lib/money.ts';
import type { OutboxService } from '../outbox/service.ts';
import type { InvoicePayments, PaymentResult, PaymentSource, ReportedPayment } from '../invoice/payments.ts';
import type { PayableInvoice } from '../invoice/types.ts';
import type { GatewayInvoice, GatewayRegistry, PaymentGateway } from './gateways.ts';
import { gatewayFailure } from './gateway-failures.ts';
import { createLateRefunds } from './late-refunds.ts';


/** A refund reported for a payment Tollgate has not recorded yet: try again later (events arrive out of order). */
export class PaymentNotYetKnown extends Error {}

export interface GatewayPaymentDeps {
  db: Kysely<Database>;
  gateways: GatewayRegistry;
  invoicePayments: Pick<InvoicePayments, 'pay' | 'recordFailure' | 'recordRefund' | 'refundPlan' | 'refundManually' | 'latePayment' | 'recordLateRefund'>;
  /** Late payments are refunded through the outbox (late-refunds.ts). */
  outbox: Pick<OutboxService, 'enqueue' | 'registerKind'>;
  log?: (message: string, error: unknown) => void;
}

/** The invoice as a gateway sees it: what to charge, and the names to show the payer. */
export function toGatewayInvoice(invoice: PayableInvoice): GatewayInvoice {
  // The amount in the invoice's own currency's decimals (¥ none, KWD three).
  return { id: invoice.id, hash: invoice.hash, number: invoice.number, clientId: invoice.clientId, total: moneyFor(invoice.currency).format(invoice.amount), amount: invoice.amount, currency: invoice.currency };
}

const sourceOf = (gateway: PaymentGateway): PaymentSource => ({ id: gateway.id, code: gateway.code });

export function createGatewayPayments({ db, gateways, invoicePayments, outbox, log }: GatewayPaymentDeps) {
  const lateRefunds = createLateRefunds({ db, gateways, outbox, ledger: invoicePayments, ...(log !== undefined && { log }) });

  return {
    /**
     * A payment the provider reports for an invoice, paid through the invoice's compare-and-set (invoice/payments.ts
     * says what happens to a duplicate, a mismatch or a late payment). A late payment through a gateway that can
     * refund is queued for its refund in this transaction: the refund exists exactly when the payment does.
     */
    async applyPayment(trx: Kysely<Database>, gateway: PaymentGateway, report: ReportedPayment, now: Date): Promise<PaymentResult> {
      const outcome = await invoicePayments.pay(trx, { ...sourceOf(gateway), refundable: gateway.refund !== undefined }, report, now);
      if (outcome.lateRefund !== null) await lateRefunds.schedule(trx, gateway, outcome.lateRefund, report.ref);
      return outcome.result;
    },

    /** A failed charge: a `failed` transaction with the provider's message (once per provider reference). */
    async recordFailure(
      trx: Kysely<Database>,
      gateway: PaymentGateway,
      report: { invoiceId: number; ref: string | null; amount: number; currency: string; message: string },
      now: Date,
    ): Promise<boolean> {
      return invoicePayments.recordFailure(trx, sourceOf(gateway), report, now);
    },

    /** A refund the provider reports (cumulatively); a payment not recorded yet is retried later (PaymentNotYetKnown). */
    async applyRefund(
      trx: Kysely<Database>,
      gateway: PaymentGateway,
      report: { paymentRef: string; ref: string; refundedTotal: number; currency: string },
      now: Date,
    ): Promise<'refunded' | 'duplicate'> {
      const outcome = await invoicePayments.recordRefund(trx, sourceOf(gateway), report, now);
      if (outcome === 'unknown_payment') throw new PaymentNotYetKnown(`Payment ${report.paymentRef} is not recorded yet`);
      return outcome;
    },

    /**
     * admin/invoice/refund {id, amount?}: full by default; what the balance paid of it goes back to the balance first. A gateway payment is refunded at the provider first (with
     * an idempotency key made of the invoice, what was refunded before and the amount, so a retried request refunds
     * once), then recorded; a manual one is only recorded.
     */
    async refund(id: number, amount: number | undefined, now = new Date(), reason: string | null = null): Promise<void> {
      const plan = await invoicePayments.refundPlan(id, amount);
      // The part the client's balance paid goes back to the balance first (recorded, no provider involved).
      if (plan.toBalance > 0) await invoicePayments.refundManually(id, plan.toBalance, now, reason, true);
      if (plan.amount <= 0) return;
      const gateway = plan.settledBy === null ? undefined : gateways.get(plan.settledBy.gatewayId);
      if (gateway?.refund === undefined || plan.settledBy === null) {
        await invoicePayments.refundManually(id, plan.amount, now, reason);
        return;
      }
      const paymentRef = plan.settledBy.ref;
      let ref: string;
      try {
        ({ ref } = await gateway.refund({ paymentRef, amount: plan.amount, idempotencyKey: `tollgate-refund-${id}-${plan.before}-${plan.amount}` }));
      } catch (error) {
        const failure = gatewayFailure(gateway, 'refund', error, `${gateway.title} did not accept the refund.`);
        throw errors.gatewayFailed(`${failure.message.replace(/[.\s]*$/, '')}. Nothing was refunded; try again later.`);
      }
      await inTransaction(db, async (trx) => {
        const outcome = await invoicePayments.recordRefund(trx, sourceOf(gateway), { paymentRef, ref, refundedTotal: plan.before + plan.amount, currency: plan.currency, reason }, now);
        if (outcome === 'unknown_payment') throw new PaymentNotYetKnown(`Payment ${paymentRef} is not recorded yet`);
      });
    },
  };
}

export type GatewayPayments = ReturnType<typeof createGatewayPayments>;
