// Invoices: what a client owes for new or renewed orders. The only writer of `invoices` and `invoice_items` (and,
// with the payment seam beside it, payments.ts, of `transactions`). Paying is a compare-and-set on the status inside
// one transaction that also records the transaction and executes the items, so an invoice is paid, and its orders
// activated, exactly once. How the money arrives (a gateway, staff) is the payment module's business, not this one's.
import type { Kysely, Selectable } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { InvoiceItemTable, InvoiceStatus } from './tables.ts';
import type { EventBus } from '../../platform/events.ts';
import { errors } from '../../platform/errors.ts';
import { randomString } from '../../lib/crypto.ts';
import { moneyFor, type Money } from '../../lib/money.ts';
import type { Selling } from '../currency/selling.ts';
import { addContacts, createdRange, searchText } from '../../platform/list-filters.ts';
import { pageRequest, toPage, type Page } from '../../lib/paginator.ts';
import { isoSeconds } from '../../lib/time.ts';
import type { ClientService } from '../client/service.ts';
import type { OrderService } from '../order/service.ts';
import { newestPage } from '../../db/newest-page.ts';
import { inTransaction } from '../../platform/transaction.ts';
import { formatRate } from '../../lib/rates.ts';
import type { Company, SystemService } from '../system/service.ts';
import { renderInvoicePdf } from './pdf.ts';
import type { SaleTaxDecider } from './sale-tax.ts';
import { REVERSE_CHARGE_MENTION, taxOn } from '../../lib/eu-vat.ts';
import type { PromoService } from '../product/promos.ts';
import { createOrderTasks } from './order-tasks.ts';
import { paidForCurrentPeriod } from './period-paid.ts';
import { createRenewals } from './renewals.ts';
import './events.ts';
import type { CreditNotes, InvoiceCredit } from './credit-notes/service.ts';
import type { Buyer, InvoiceDiscount, InvoiceFilters, InvoiceLine, InvoiceRecord, InvoiceRow, PaymentInput, TaxEvidence, UsageInvoice } from './types.ts';

export { renewalTitle } from './renewals.ts';
// Neighbours name these records by the service that hands them out; they are declared in types.ts.
export type { Buyer, InvoiceDiscount, InvoiceFilters, InvoiceItemRecord, InvoiceLine, InvoiceRecord, InvoiceRow, PaymentInput, UsageInvoice, UsageLine } from './types.ts';

type ItemRow = Selectable<InvoiceItemTable>;

export interface InvoiceServiceDeps {
  db: Kysely<Database>;
  events: EventBus;
  orders: Pick<OrderService, 'requireRow' | 'lock' | 'transition' | 'applyPlanChange'>;
  settings: Pick<SystemService, 'company' | 'nextInvoiceNumber'>;
  /** The rule, rate and evidence of each new invoice's tax (sale-tax.ts). */
  saleTax: Pick<SaleTaxDecider, 'decide'>;
  promos: Pick<PromoService, 'renewalDiscount'>;
  /** The admin list's `search` over the client's e-mail and name, and the client shown beside each invoice. */
  clients: Pick<ClientService, 'idsMatching' | 'matches' | 'contacts'>;
  /** What each invoice's credit notes credited (the record shows it). */
  creditNotes: Pick<CreditNotes, 'ofInvoices'>;
  /** The client's currency and its rate now: an invoice is in it and stores the rate (issue 26). */
  selling: Pick<Selling, 'useForClient' | 'describe'>;
}


function parseJson(text: string | null): unknown {
  return text === null ? null : JSON.parse(text);
}

export function createInvoiceService({ db, events, orders, settings, saleTax, promos, clients, creditNotes, selling }: InvoiceServiceDeps) {
  function toRecord(row: InvoiceRow, items: ItemRow[], credit: InvoiceCredit | undefined): InvoiceRecord {
    // Each invoice's amounts in its own currency's decimals (¥ none, KWD three).
    const money: Money = moneyFor(row.currency);
    return {
      id: row.id,
      hash: row.hash,
      number: row.number,
      client_id: row.client_id,
      status: row.status,
      currency: row.currency,
      currency_rate: row.currency_rate,
      currency_rate_at: row.currency_rate_at,
      currency_base: row.currency_base,
      seller: parseJson(row.seller) as Company | null,
      buyer: parseJson(row.buyer) as Buyer | null,
      subtotal: money.format(row.subtotal),
      discount: money.format(row.discount),
      promocode: row.promo_code,
      tax_name: row.tax_name,
      tax_rate: formatRate(row.tax_rate),
      tax: money.format(row.tax),
      total: money.format(row.total),
      tax_inclusive: row.tax_inclusive === 1,
      tax_rule: row.tax_rule,
      tax_note: row.tax_rule === 'reverse_charge' ? REVERSE_CHARGE_MENTION : null,
      tax_evidence: parseJson(row.tax_evidence) as TaxEvidence | null,
      credit_applied: money.format(row.credit_applied),
      amount_due: money.format(row.status === 'unpaid' ? row.total - row.credit_applied : 0),
      due_at: row.due_at,
      paid_at: row.paid_at,
      created_at: row.created_at,
      items: items.map((item) => ({
        title: item.title,
        order_id: item.order_id,
        task: item.task,
        quantity: item.quantity,
        price: money.format(item.price),
        total: money.format(item.total),
        credited: money.format(credit?.byItem.get(item.id) ?? 0),
        tax_rule: item.tax_rule,
      })),
      credited: money.format(credit?.total ?? 0),
      credit_notes: (credit?.notes ?? []).map((note) => ({ ...note, total: money.format(note.total) })),
    };
  }

  async function withItems(trx: Kysely<Database>, rows: InvoiceRow[]): Promise<InvoiceRecord[]> {
    if (rows.length === 0) return [];
    const items = await trx
      .selectFrom('invoice_items')
      .selectAll()
      .where(
        'invoice_id',
        'in',
        rows.map((row) => row.id),
      )
      .orderBy('id')
      .execute();
    const credits = await creditNotes.ofInvoices(trx, rows.map((row) => row.id));
    return rows.map((row) => toRecord(row, items.filter((item) => item.invoice_id === row.id), credits.get(row.id)));
  }

  async function requireRow(trx: Kysely<Database>, id: number, clientId?: number): Promise<InvoiceRow> {
    let query = trx.selectFrom('invoices').selectAll().where('id', '=', id);
    if (clientId !== undefined) query = query.where('client_id', '=', clientId);
    const row = await query.executeTakeFirst();
    if (row === undefined) throw errors.notFound('Invoice');
    return row;
  }

  const eventOf = (row: InvoiceRow) => ({ invoiceId: row.id, clientId: row.client_id, total: row.total });

  /**
   * Creates an unpaid invoice inside `trx`: the seller and buyer as they are now, the discount taken off the
   * subtotal, then the buyer's tax on the rest, rounded half up once for the whole invoice.
   */
  async function create(
    trx: Kysely<Database>,
    clientId: number,
    lines: InvoiceLine[],
    options: { now?: Date; dueAt?: string | null; discount?: InvoiceDiscount | null; taxed?: boolean; ipCountry?: string | null } = {},
  ): Promise<InvoiceRow> {
    const now = isoSeconds(options.now ?? new Date());
    const subtotal = lines.reduce((sum, line) => sum + line.total, 0);
    if (!Number.isSafeInteger(subtotal)) throw errors.invalid('quantity', 'makes the invoice total too large');
    const discount = Math.min(Math.max(options.discount?.amount ?? 0, 0), subtotal);
    const client = await trx.selectFrom('clients').selectAll().where('id', '=', clientId).executeTakeFirstOrThrow();
    // The client's currency (fixed by their first order) and the rate in force now, stored once on the invoice.
    const saleCurrency = await selling.useForClient(trx, clientId);
    const buyer: Buyer = {
      name: [client.first_name, client.last_name].filter(Boolean).join(' '),
      email: client.email,
      company: client.company,
      address_1: client.address_1,
      address_2: client.address_2,
      city: client.city,
      state: client.state,
      postcode: client.postcode,
      country: client.country,
      vat_number: client.vat_number,
    };
    // A top-up is not taxed (`taxed: false`): the invoices its credit pays carry the tax.
    const sale = await saleTax.decide(trx, client, { taxed: options.taxed !== false, ipCountry: options.ipCountry ?? null, now: options.now ?? new Date() });
    const { tax, total } = taxOn(subtotal - discount, sale.rate, sale.inclusive);
    const row = await trx
      .insertInto('invoices')
      .values({
        hash: randomString(32),
        client_id: clientId,
        status: 'unpaid',
        currency: saleCurrency.code,
        currency_rate: saleCurrency.rate,
        currency_rate_at: saleCurrency.rateAt,
        currency_base: saleCurrency.defaultCode,
        subtotal,
        discount,
        promo_code: discount > 0 ? (options.discount?.code ?? null) : null,
        tax_name: sale.name,
        tax_rate: sale.rate,
        tax,
        tax_rule: sale.rule,
        tax_inclusive: sale.inclusive ? 1 : 0,
        tax_evidence: sale.evidence === null ? null : JSON.stringify(sale.evidence),
        seller: JSON.stringify(await settings.company(trx)),
        buyer: JSON.stringify(buyer),
        total,
        due_at: options.dueAt ?? now,
        paid_at: null,
        created_at: now,
        updated_at: now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    await trx
      .insertInto('invoice_items')
      .values(
        lines.map((line) => ({
          invoice_id: row.id,
          order_id: line.orderId,
          task: line.task,
          title: line.title.slice(0, 255),
          period: line.period,
          quantity: line.quantity,
          price: line.price,
          total: line.total,
          product_id: line.productId ?? null,
          credit: line.credit ?? 0,
          priced_until: line.pricedUntil ?? null,
          executed: 0,
          tax_rule: sale.rule,
        })),
      )
      .execute();
    await events.emit('invoice.created', eventOf(row), trx);
    return row;
  }

  // Deleting an order cancels the unpaid invoices that were only for it.
  events.on('order.deleted', async ({ orderId }, trx) => {
    const invoiceIds = await trx
      .selectFrom('invoice_items')
      .innerJoin('invoices', 'invoices.id', 'invoice_items.invoice_id')
      .select('invoices.id')
      .where('invoice_items.order_id', '=', orderId)
      .where('invoices.status', '=', 'unpaid')
      .execute();
    for (const { id } of invoiceIds) {
      const others = await trx
        .selectFrom('invoice_items')
        .select('id')
        .where('invoice_id', '=', id)
        .where((eb) => eb.or([eb('order_id', '!=', orderId), eb('order_id', 'is', null)]))
        .executeTakeFirst();
      if (others === undefined) {
        await trx.updateTable('invoices').set({ status: 'canceled', updated_at: nowText() }).where('id', '=', id).where('status', '=', 'unpaid').execute();
      }
    }
  });

  function nowText(): string {
    return isoSeconds(new Date());
  }

  /** Compare-and-set of the status: 409 when the invoice is not in `from` (also when a concurrent call won). */
  /** The balance's part of an unpaid invoice goes back to the balance (`invoice.credit_released`); credit_applied is 0 again. */
  async function releaseCredit(trx: Kysely<Database>, row: InvoiceRow): Promise<void> {
    const current = await trx.selectFrom('invoices').select('credit_applied').where('id', '=', row.id).executeTakeFirstOrThrow();
    if (current.credit_applied <= 0) return;
    await trx.updateTable('invoices').set({ credit_applied: 0 }).where('id', '=', row.id).where('credit_applied', '=', current.credit_applied).execute();
    await events.emit('invoice.credit_released', { invoiceId: row.id, clientId: row.client_id, amount: current.credit_applied, currency: row.currency }, trx);
  }

  async function setStatus(trx: Kysely<Database>, row: InvoiceRow, from: InvoiceStatus, to: InvoiceStatus, now: Date, verb: string) {
    if (row.status !== from) throw errors.conflict(`The invoice is ${row.status}; it cannot be ${verb}`);
    const result = await trx
      .updateTable('invoices')
      .set({ status: to, updated_at: isoSeconds(now), ...(to === 'paid' && { paid_at: isoSeconds(now) }) })
      .where('id', '=', row.id)
      .where('status', '=', from)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) !== 1) throw errors.conflict(`The invoice is no longer ${from}; it cannot be ${verb}`);
    // An unpaid invoice canceled (by staff, voided, stale) gives back what the balance had paid of it, in this transaction.
    if (from === 'unpaid' && to === 'canceled') await releaseCredit(trx, row);
    // The per-status totals of the staff list (src/db/search.ts) count again once this is committed.
    // The number is taken in the same transaction as the compare-and-set that won, so only a paid invoice has one
    // and a payment that rolls back returns its number (CONTRACT §8: unique and gapless).
    if (to === 'paid' && row.number === null) {
      await trx.updateTable('invoices').set({ number: await settings.nextInvoiceNumber(trx) }).where('id', '=', row.id).execute();
    }
  }

  /**
   * The one compare-and-set of payment (mark_as_paid and gateway payments alike): unpaid → paid, the transaction
   * recorded and, with `execute`, the orders activated or renewed, all inside `trx`. 409 when it is not unpaid.
   */
  async function payInTransaction(
    trx: Kysely<Database>,
    id: number,
    input: PaymentInput & { gatewayCode?: string | undefined },
    now: Date,
  ): Promise<void> {
    const row = await requireRow(trx, id);
    // A renewal or plan change the order has moved past is refused, never applied (order-tasks.ts).
    const stale = row.status === 'unpaid' && input.execute !== false ? await tasks.unpayableReason(trx, id, now) : null;
    if (stale !== null) throw errors.conflict(`The invoice cannot be paid: ${stale}. Cancel it; a new one is issued for what the order needs now`);
    await setStatus(trx, row, 'unpaid', 'paid', now, 'paid');
    const transaction = await trx
      .insertInto('transactions')
      .values({
        invoice_id: id,
        client_id: row.client_id,
        gateway_id: input.gatewayId ?? null,
        gateway: input.gatewayCode ?? null,
        transaction_id: input.transactionId === undefined || input.transactionId === '' ? null : input.transactionId,
        // What this payment paid: the part the balance paid before (credit_applied) is not paid twice.
        amount: row.total - row.credit_applied,
        currency: row.currency,
        type: 'payment',
        status: 'processed',
        message: null,
        created_at: isoSeconds(now),
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    if (input.execute !== false) await tasks.execute(trx, id, now);
    await events.emit('invoice.paid', { ...eventOf(row), transactionId: transaction.id }, trx);
  }

  const tasks = createOrderTasks({ orders });
  async function cancelIn(trx: Kysely<Database>, id: number, now: Date): Promise<void> {
    const row = await requireRow(trx, id);
    await setStatus(trx, row, 'unpaid', 'canceled', now, 'canceled');
    await events.emit('invoice.canceled', eventOf(row), trx);
  }

  const renewals = createRenewals({ db, events, orders, promos, selling, create, setStatus });

  return {
    create,
    execute: tasks.execute,
    unpayableReason: tasks.unpayableReason,
    renewalFor: renewals.renewalFor,
    voidLapsedPlanChanges: renewals.voidLapsedPlanChanges,
    paidForCurrentPeriod,

    payInTransaction,
    releaseCredit,

    /**
     * Records `amount` more paid of the unpaid invoice `id` from the balance (the caller debits the balance in `trx`),
     * leaving the rest due: a compare-and-set on the `credit_applied` the caller read (`before`), so two applies that
     * raced cannot both count. Only part of what is due: paying all of it is a payment (payInTransaction). 409 otherwise.
     */
    async applyCredit(trx: Kysely<Database>, id: number, amount: number, before: number, now: Date): Promise<void> {
      const result = await trx
        .updateTable('invoices')
        .set({ credit_applied: before + amount, updated_at: isoSeconds(now) })
        .where('id', '=', id)
        .where('status', '=', 'unpaid')
        .where('credit_applied', '=', before)
        .where((eb) => eb(eb('total', '-', eb.ref('credit_applied')), '>', amount))
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) !== 1) throw errors.conflict('The invoice was paid or changed meanwhile; nothing was taken from the balance');
    },

    /** admin/invoice/mark_as_paid: `gatewayCode` names the gateway `gatewayId` stands for (the payment module resolves it). */
    async markAsPaid(id: number, input: PaymentInput & { gatewayCode?: string | undefined } = {}, now = new Date()): Promise<void> {
      await inTransaction(db, (trx) => payInTransaction(trx, id, input, now));
    },

    async cancel(id: number, now = new Date()): Promise<void> {
      await inTransaction(db, (trx) => cancelIn(trx, id, now));
    },

    /** Cancels the unpaid invoice `id` inside the caller's transaction (auto-recharge turned off cancels its own). */
    cancelInTransaction: (trx: Kysely<Database>, id: number, now: Date): Promise<void> => cancelIn(trx, id, now),

    /** The row, 404 when missing (or not the client's). */
    requireRow,
    setStatus,

    /** The currency of an invoice (404 when there is none): amounts staff give for it are read in its decimals. */
    async currencyOf(id: number): Promise<string> {
      return (await requireRow(db, id)).currency;
    },

    async get(id: number, clientId?: number): Promise<InvoiceRecord> {
      const [record] = await withItems(db, [await requireRow(db, id, clientId)]);
      return record!;
    },

    /** The invoice as a PDF document (seller, buyer, number or "Proforma", lines, discount, tax, totals, status). */
    async pdf(invoiceId: number): Promise<Buffer> {
      const [record] = await withItems(db, [await requireRow(db, invoiceId)]);
      return renderInvoicePdf(record!);
    },

    async getByHash(hash: string): Promise<InvoiceRecord> {
      const row = await db.selectFrom('invoices').selectAll().where('hash', '=', hash).executeTakeFirst();
      if (row === undefined) throw errors.notFound('Invoice');
      const [record] = await withItems(db, [row]);
      return record!;
    },

    async list(filters: InvoiceFilters, clientId?: number): Promise<Page<InvoiceRecord>> {
      const request = pageRequest(filters);
      const staff = clientId === undefined;
      let query = db.selectFrom('invoices');
      const owner = clientId ?? filters.client_id;
      if (owner !== undefined) query = query.where('client_id', '=', owner);
      if (filters.status !== undefined) query = query.where('status', '=', filters.status);
      const { rows, total } = await newestPage(db, 'invoices', query, {
        request,
        created: staff ? createdRange(filters) : {},
        text: staff ? searchText(filters.search) : null,
        searched: { table: 'invoices', column: 'number', fts: 'invoices_search' },
        clients,
        narrowed: owner !== undefined,
        status: filters.status,
      });
      const records = await withItems(db, rows);
      if (staff) addContacts(records, await clients.contacts(rows.map((row) => row.client_id)));
      return toPage(request, total.n, records, total.capped);
    },

    /** The unpaid renewal invoice of the caller's recurrent order, issued now if there is none. */
    async renewalInvoice(orderId: number, clientId: number, now = new Date()): Promise<number> {
      return inTransaction(db, async (trx) => {
        const order = await orders.requireRow(trx, orderId, clientId);
        if (order.period === null) throw errors.conflict('The order is not recurrent; it has no renewals');
        // A free order renews itself at expiry (scheduled jobs); an invoice for 0.00 would only confuse the client.
        if (order.price === 0) throw errors.conflict('The order is free; it renews without an invoice');
        if (order.status !== 'active' && order.status !== 'suspended') {
          throw errors.conflict(`The order is ${order.status}; only active or suspended orders can be renewed`);
        }
        return (await renewals.renewalFor(trx, order, now)).id;
      });
    },

    /**
     * Issues, inside `trx`, the invoice of one usage period's overage (CONTRACT §12, issue 23): one `usage` line per
     * meter billed (`lines`, in order; or a single `title` and `amount`) on an invoice of its own, due now; auto-pay
     * charges it like a renewal (payment/charges.ts). Each amount is already rounded, in minor units.
     */
    async issueUsageInvoice(trx: Kysely<Database>, usage: UsageInvoice, now: Date): Promise<number> {
      const lines = 'lines' in usage ? usage.lines : [{ title: usage.title, amount: usage.amount }];
      if (lines.length === 0) throw errors.invalid('lines', 'an overage invoice needs at least one line');
      for (const line of lines) if (!Number.isSafeInteger(line.amount) || line.amount < 0) throw errors.invalid('amount', 'must be a whole number of minor units, not negative');
      const items: InvoiceLine[] = lines.map((line) => ({ orderId: usage.orderId, task: 'usage', title: line.title, period: null, quantity: 1, price: line.amount, total: line.amount }));
      return (await create(trx, usage.clientId, items, { now })).id;
    },
  };
}

export type InvoiceService = ReturnType<typeof createInvoiceService>;
