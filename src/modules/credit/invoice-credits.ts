// Where the balance meets invoices (issue 24): a top-up invoice (client/invoice/funds_invoice) credits the wallet when
// it is paid, by whatever gateway, in the transaction that marks it paid (`invoice.paid`), once (the idempotency key
// `invoice:<id>:top_up`, and the invoice's own compare-and-set); a client pays an unpaid invoice from the balance
// (client/invoice/pay_with_credits, FOSSBilling's admin/invoice/pay_with_credits); with `credits_pay_invoices` on, a
// renewal or overage invoice is paid from the balance when it is issued, if the balance covers it; refunds follow the
// money back: a refunded top-up takes its credit back, a refunded invoice paid from the balance gives it back.
//
// Lock order: the account (ledger.ts lockAccount) before the invoice's compare-and-set, everywhere here.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { EventBus } from '../../platform/events.ts';
import { errors } from '../../platform/errors.ts';
import { inTransaction } from '../../platform/transaction.ts';
import { moneyFor, parseMoney, precisionOf } from '../../lib/money.ts';
import { InvalidInput } from '../../lib/invalid-input.ts';
import type { Selling } from '../currency/selling.ts';
import { checkFundsLimits } from './funds-limits.ts';
import { isoSeconds } from '../../lib/time.ts';
import type { InvoicePayments } from '../invoice/payments.ts';
import type { InvoiceService } from '../invoice/service.ts';
import { credit, debit, isUncovered, lockAccount, openLots, type Account } from './ledger.ts';
import '../invoice/events.ts';

/** The gateway code a payment from the balance is recorded under (admin/invoice/transaction_get_list). */
export const CREDITS_GATEWAY = 'credits';

export interface InvoiceCreditsDeps {
  db: Kysely<Database>;
  events: EventBus;
  /** A top-up is in the client's currency (their wallet's). */
  selling: Pick<Selling, 'useForClient'>;
  invoices: Pick<InvoiceService, 'create' | 'payInTransaction' | 'applyCredit'>;
  invoicePayments: Pick<InvoicePayments, 'payable' | 'renewsService'>;
  /** The settings, read at each use: FOSSBilling's funds_min_amount / funds_max_amount, and credits_pay_invoices. */
  settings: { fundsMin(): string | null; fundsMax(): string | null; payInvoices(): boolean };
}

/** A part payment's `amount` in the invoice currency's minor units: more than 0, no more decimals than it has. */
function amountIn(amount: string | number, currency: string): number {
  if ((typeof amount === 'string' && amount.trim().startsWith('-')) || (typeof amount === 'number' && amount < 0)) throw new InvalidInput('amount', 'must be more than 0');
  const minor = parseMoney(amount, 'amount', precisionOf(currency));
  if (minor <= 0) throw new InvalidInput('amount', 'must be more than 0');
  return minor;
}

export function createInvoiceCredits({ db, events, selling, invoices, invoicePayments, settings }: InvoiceCreditsDeps) {
  /** What the invoice's `deposit` lines add to the balance when it is paid (0: not a top-up invoice). */
  async function depositOf(trx: Kysely<Database>, invoiceId: number): Promise<number> {
    const lines = await trx.selectFrom('invoice_items').select('total').where('invoice_id', '=', invoiceId).where('task', '=', 'deposit').execute();
    return lines.reduce((sum, line) => sum + line.total, 0);
  }

  async function entryByKey(trx: Kysely<Database>, key: string) {
    return trx.selectFrom('credit_entries').selectAll().where('idempotency_key', '=', key).executeTakeFirst();
  }

  /** What the account can spend now (grants past their expiry are not spendable). The caller holds the lock. */
  async function spendable(trx: Kysely<Database>, account: Account, now: Date): Promise<number> {
    const at = isoSeconds(now);
    return (await openLots(trx, account)).filter((lot) => lot.expiresAt === null || lot.expiresAt > at).reduce((sum, lot) => sum + lot.remaining, 0);
  }

  /** The invoice's number (given when it is paid), else "#<id>" for staff's eyes. */
  async function label(trx: Kysely<Database>, id: number): Promise<string> {
    return (await invoicePayments.payable(trx, id))?.number ?? `#${id}`;
  }

  /**
   * Pays from its client's balance inside `trx` what is due of the unpaid invoice `id` — all of it (`amount`
   * undefined), or `amount` of it — under the account's lock, the invoice re-read under it. Paying all that is due is
   * the invoice's compare-and-set of payment (orders activated or renewed as by any payment) and a `consume` entry
   * naming it; paying part raises its `credit_applied` (a compare-and-set too) and writes a `consume` entry, and a
   * gateway then pays the rest. `partial`: take what the balance holds when it is short of `amount` (renewals with
   * credits_pay_invoices). 'uncovered' when the balance is short (or empty, for `partial`): nothing is written.
   * Throws 409 when the invoice is not payable (paid meanwhile, canceled, stale); the transaction then rolls back.
   */
  async function payFromBalance(trx: Kysely<Database>, id: number, now: Date, options: { amount?: number; partial?: boolean } = {}): Promise<'paid' | 'applied' | 'uncovered'> {
    const first = await invoicePayments.payable(trx, id);
    if (first === null) throw errors.notFound('Invoice');
    const account: Account = { clientId: first.clientId, currency: first.currency };
    await lockAccount(trx, account, now);
    // Read again under the lock: another apply to this invoice (by this client's balance) ran before us.
    const invoice = (await invoicePayments.payable(trx, id))!;
    if (invoice.status !== 'unpaid') throw errors.conflict(`The invoice is ${invoice.status}; it cannot be paid`);
    const due = invoice.amount;
    if (options.amount !== undefined && options.amount > due) throw errors.invalid('amount', `must not be more than the amount due (${moneyFor(invoice.currency).format(due)})`);
    const available = await spendable(trx, account, now);
    // Checked under the lock, so the debit below is covered: no one else spends from this account until we commit.
    let take = options.amount ?? due;
    if (options.partial === true) take = Math.min(take, available);
    if (take <= 0 || available < take) return 'uncovered';
    const name = await label(trx, id);
    if (take < due) {
      await invoices.applyCredit(trx, id, take, invoice.creditApplied, now);
      const written = await debit(trx, account, { kind: 'consume', amount: take, key: `invoice:${id}:apply:${invoice.creditApplied}`, invoiceId: id, note: `Part payment of invoice ${name}` }, now);
      if (isUncovered(written)) throw new Error(`The balance of client ${account.clientId} changed under its lock`);
      return 'applied';
    }
    // Re-read by the compare-and-set: a concurrent payment that won answers 409 here.
    await invoices.payInTransaction(trx, id, { transactionId: `balance-invoice-${id}`, gatewayCode: CREDITS_GATEWAY }, now);
    if (take > 0) {
      const written = await debit(trx, account, { kind: 'consume', amount: take, key: `invoice:${id}:pay`, invoiceId: id, note: `Payment of invoice ${await label(trx, id)}` }, now);
      if (isUncovered(written)) throw new Error(`The balance of client ${account.clientId} changed under its lock`);
    }
    return 'paid';
  }

  // A paid top-up invoice credits the wallet, in the payment's transaction, whichever gateway paid it.
  events.on('invoice.paid', async ({ invoiceId, clientId }, trx) => {
    const amount = await depositOf(trx, invoiceId);
    if (amount <= 0) return;
    const invoice = await trx.selectFrom('invoices').select(['currency', 'number']).where('id', '=', invoiceId).executeTakeFirstOrThrow();
    const account = { clientId, currency: invoice.currency };
    await lockAccount(trx, account, new Date());
    await credit(trx, account, { kind: 'top_up', amount, key: `invoice:${invoiceId}:top_up`, invoiceId, note: `Top-up paid by invoice ${invoice.number ?? `#${invoiceId}`}` }, new Date());
  });

  // With credits_pay_invoices on, a renewal or overage invoice is paid from the balance as it is issued (in full, when
  // the balance covers it, else what the balance holds, the rest left due); a card charge queued for it charges only
  // the rest, or finds it paid and stops.
  events.on('invoice.created', async ({ invoiceId, total }, trx) => {
    if (total <= 0 || !settings.payInvoices()) return;
    if (!(await invoicePayments.renewsService(trx, invoiceId))) return;
    await payFromBalance(trx, invoiceId, new Date(), { partial: true });
  });

  // What the balance paid of an invoice that no longer takes it (canceled; or paid in full by a card payment started
  // before) goes back to the balance, once per release (the invoice's compare-and-set on credit_applied).
  events.on('invoice.credit_released', async ({ invoiceId, clientId, amount, currency }, trx) => {
    const now = new Date();
    const account = { clientId, currency };
    await lockAccount(trx, account, now);
    const previous = await trx.selectFrom('credit_entries').select('id').where('invoice_id', '=', invoiceId).where('idempotency_key', 'like', `invoice:${invoiceId}:release:%`).execute();
    await credit(trx, account, { kind: 'refund', amount, key: `invoice:${invoiceId}:release:${previous.length + 1}`, invoiceId, note: `Returned from invoice ${await label(trx, invoiceId)}, which no longer takes it` }, now);
  });

  // Refunds follow the money: a refunded top-up takes back what is left of its credit (up to the amount), a refunded
  // invoice paid from the balance gives the amount back as credit. One entry per refund event.
  events.on('invoice.refunded', async ({ invoiceId, clientId, amount, toBalance }, trx) => {
    const now = new Date();
    const topUp = await entryByKey(trx, `invoice:${invoiceId}:top_up`);
    const paid = toBalance === true ? await trx.selectFrom('credit_entries').selectAll().where('invoice_id', '=', invoiceId).where('kind', '=', 'consume').executeTakeFirst() : undefined;
    if (topUp === undefined && paid === undefined) return;
    const account = { clientId, currency: (topUp ?? paid)!.currency };
    await lockAccount(trx, account, now);
    const previous = await trx.selectFrom('credit_entries').select('id').where('invoice_id', '=', invoiceId).where('kind', '=', 'refund').execute();
    const key = `invoice:${invoiceId}:refund:${previous.length + 1}`;
    if (paid !== undefined) {
      await credit(trx, account, { kind: 'refund', amount, key, invoiceId, note: `Refund of invoice ${await label(trx, invoiceId)}, paid from the balance` }, now);
      return;
    }
    // The money went back to the payer: take back the credit it bought, as far as the balance still holds it.
    const take = Math.min(amount, await spendable(trx, account, now));
    if (take > 0) await debit(trx, account, { kind: 'refund', amount: take, key, invoiceId, note: `Top-up invoice ${await label(trx, invoiceId)} refunded` }, now, topUp!.id);
  });

  // A credit note to the balance (admin/invoice/credit_note_create) credits its total, in the note's transaction, once
  // per note (its idempotency key).
  events.on('credit_note.created', async ({ creditNoteId, number, invoiceId, clientId, total, currency, method }, trx) => {
    if (method !== 'balance' || total <= 0) return;
    const now = new Date();
    const account = { clientId, currency };
    await lockAccount(trx, account, now);
    await credit(trx, account, { kind: 'refund', amount: total, key: `credit_note:${creditNoteId}`, invoiceId, note: `Credit note ${number} for invoice ${await label(trx, invoiceId)}` }, now);
  });

  return {
    /**
     * client/invoice/funds_invoice: an unpaid top-up invoice for `amount` (minor units, checked by the caller for shape)
     * with one untaxed `deposit` line; paying it credits the wallet. Returns the invoice's hash, as FOSSBilling does.
     */
    async fundsInvoice(clientId: number, amount: number, now = new Date()): Promise<string> {
      if (amount <= 0) throw errors.invalid('amount', 'must be more than 0');
      return inTransaction(db, async (trx) => {
        const sale = await selling.useForClient(trx, clientId);
        checkFundsLimits(amount, sale, settings);
        const money = moneyFor(sale.code);
        const line = { orderId: null, task: 'deposit' as const, title: `Add funds to the account balance (${money.format(amount)} ${money.currency})`, period: null, quantity: 1, price: amount, total: amount };
        const row = await invoices.create(trx, clientId, [line], { now, taxed: false });
        return row.hash;
      });
    },

    /**
     * pay_with_credits: pays from the balance what is due of the unpaid invoice, or `amount` of it (minor units,
     * more than 0, at most what is due; the rest stays due for a card). A client only its own: 404 otherwise.
     */
    async payInvoice(id: number, clientId: number | undefined, now = new Date(), given?: string | number): Promise<void> {
      await inTransaction(db, async (trx) => {
        const invoice = await invoicePayments.payable(trx, id);
        if (invoice === null || (clientId !== undefined && invoice.clientId !== clientId)) throw errors.notFound('Invoice');
        // The amount is read in the invoice's own currency (its decimals: none for JPY, three for KWD).
        const amount = given === undefined ? undefined : amountIn(given, invoice.currency);
        if (invoice.status !== 'unpaid') throw errors.conflict(`The invoice is ${invoice.status}; it cannot be paid`);
        if ((await depositOf(trx, id)) > 0) throw errors.conflict('A top-up invoice cannot be paid from the balance it adds to');
        const outcome = await payFromBalance(trx, id, now, amount === undefined ? {} : { amount });
        if (outcome === 'uncovered') {
          const wanted = amount ?? (await invoicePayments.payable(trx, id))!.amount;
          throw errors.conflict(`The balance does not cover ${amount === undefined ? 'the amount due' : 'the amount'} (${moneyFor(invoice.currency).format(wanted)} ${invoice.currency})`);
        }
      });
    },

    /** The invoice with this hash, as pay_with_credits may name it; null when there is none. */
    async idByHash(hash: string): Promise<number | null> {
      const row = await db.selectFrom('invoices').select('id').where('hash', '=', hash).executeTakeFirst();
      return row?.id ?? null;
    },
  };
}

export type InvoiceCredits = ReturnType<typeof createInvoiceCredits>;
