// Invoices: what a client owes for new or renewed orders, and their payment. The only writer of `invoices`,
// `invoice_items` and `transactions`. Paying is a compare-and-set on the status inside one transaction that also
// records the transaction and executes the items, so an invoice is paid, and its orders activated, exactly once.
import type { Kysely, Selectable } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { InvoiceItemTable, InvoiceStatus, InvoiceTable, InvoiceTask } from '../../db/tables/selling.ts';
import type { EventBus } from '../../events.ts';
import { errors } from '../../http/errors.ts';
import { randomString } from '../../lib/crypto.ts';
import type { Money } from '../../lib/money.ts';
import { pageRequest, toPage, type Page } from '../../lib/paginator.ts';
import { periodLabel } from '../../lib/periods.ts';
import { isoSeconds } from '../../lib/time.ts';
import type { OrderRow, OrderService } from '../order/service.ts';
import type { GatewayRegistry } from './gateways.ts';
import { cachedTotal, forgetTotal } from '../../db/search.ts';
import { afterTransaction, inTransaction } from '../../db/transaction.ts';

export type InvoiceRow = Selectable<InvoiceTable>;
type ItemRow = Selectable<InvoiceItemTable>;

export interface InvoiceLine {
  orderId: number;
  task: InvoiceTask;
  title: string;
  period: string | null;
  quantity: number;
  /** Unit price, minor units. */
  price: number;
  /** Line total, minor units. */
  total: number;
}

/** CONTRACT §6 invoices: exactly these fields (the period is part of the title; it is stored for reports). */
export interface InvoiceItemRecord {
  title: string;
  order_id: number | null;
  task: InvoiceTask;
  quantity: number;
  price: string;
  total: string;
}

export interface InvoiceRecord {
  id: number;
  hash: string;
  client_id: number;
  status: InvoiceStatus;
  currency: string;
  subtotal: string;
  total: string;
  due_at: string | null;
  paid_at: string | null;
  created_at: string;
  items: InvoiceItemRecord[];
}

export interface InvoiceFilters {
  status?: InvoiceStatus | undefined;
  client_id?: number | undefined;
  page?: number | undefined;
  per_page?: number | undefined;
}

export interface PaymentInput {
  transactionId?: string | undefined;
  gatewayId?: number | undefined;
  /** Activate or renew the invoice's orders now (default true). */
  execute?: boolean | undefined;
}

export interface InvoiceServiceDeps {
  db: Kysely<Database>;
  events: EventBus;
  orders: OrderService;
  gateways: GatewayRegistry;
  money: Money;
}

/** Line title of a renewal: "Pro plan — renewal (Every month)". */
export function renewalTitle(order: Pick<OrderRow, 'title' | 'period'>): string {
  return `${order.title} — renewal${order.period === null ? '' : ` (${periodLabel(order.period)})`}`.slice(0, 255);
}

export function createInvoiceService({ db, events, orders, gateways, money }: InvoiceServiceDeps) {
  function toRecord(row: InvoiceRow, items: ItemRow[]): InvoiceRecord {
    return {
      id: row.id,
      hash: row.hash,
      client_id: row.client_id,
      status: row.status,
      currency: row.currency,
      subtotal: money.format(row.subtotal),
      total: money.format(row.total),
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
      })),
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
    return rows.map((row) => toRecord(row, items.filter((item) => item.invoice_id === row.id)));
  }

  async function requireRow(trx: Kysely<Database>, id: number, clientId?: number): Promise<InvoiceRow> {
    let query = trx.selectFrom('invoices').selectAll().where('id', '=', id);
    if (clientId !== undefined) query = query.where('client_id', '=', clientId);
    const row = await query.executeTakeFirst();
    if (row === undefined) throw errors.notFound('Invoice');
    return row;
  }

  const eventOf = (row: InvoiceRow) => ({ invoiceId: row.id, clientId: row.client_id, total: row.total });

  /** Creates an unpaid invoice inside `trx`. */
  async function create(
    trx: Kysely<Database>,
    clientId: number,
    lines: InvoiceLine[],
    options: { now?: Date; dueAt?: string | null } = {},
  ): Promise<InvoiceRow> {
    const now = isoSeconds(options.now ?? new Date());
    const total = lines.reduce((sum, line) => sum + line.total, 0);
    if (!Number.isSafeInteger(total)) throw errors.invalid('quantity', 'makes the invoice total too large');
    afterTransaction(trx, () => forgetTotal('invoices'));
    const row = await trx
      .insertInto('invoices')
      .values({
        hash: randomString(32),
        client_id: clientId,
        status: 'unpaid',
        currency: money.currency,
        subtotal: total,
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
          executed: 0,
        })),
      )
      .execute();
    await events.emit('invoice.created', eventOf(row), trx);
    return row;
  }

  /** Runs the invoice's activate and renew tasks that have not run yet. */
  async function execute(trx: Kysely<Database>, invoiceId: number, now: Date): Promise<void> {
    const items = await trx.selectFrom('invoice_items').selectAll().where('invoice_id', '=', invoiceId).where('executed', '=', 0).orderBy('id').execute();
    for (const item of items) {
      if (item.order_id !== null) {
        const order = await trx.selectFrom('orders').selectAll().where('id', '=', item.order_id).executeTakeFirst();
        if (order !== undefined) {
          if (item.task === 'activate' && (order.status === 'pending_setup' || order.status === 'failed_setup')) {
            const product = await trx.selectFrom('products').select('setup').where('id', '=', order.product_id).executeTakeFirst();
            if (product?.setup !== 'manual') await orders.transition(trx, order.id, 'activate', { now });
          } else if (item.task === 'renew' && (order.status === 'active' || order.status === 'suspended')) {
            await orders.transition(trx, order.id, 'renew', { now });
            if (order.status === 'suspended') await orders.transition(trx, order.id, 'unsuspend', { now });
          }
        }
      }
      await trx.updateTable('invoice_items').set({ executed: 1 }).where('id', '=', item.id).execute();
    }
  }

  /** Finds the unpaid renewal invoice of an order, or issues one, inside `trx`. Returns its id and whether it is new. */
  async function renewalFor(trx: Kysely<Database>, order: OrderRow, now: Date): Promise<{ id: number; created: boolean }> {
    // Lock the order first, so two concurrent callers cannot both issue one.
    await orders.lock(trx, order.id);
    const existing = await trx
      .selectFrom('invoice_items')
      .innerJoin('invoices', 'invoices.id', 'invoice_items.invoice_id')
      .select('invoices.id')
      .where('invoice_items.order_id', '=', order.id)
      .where('invoice_items.task', '=', 'renew')
      .where('invoices.status', '=', 'unpaid')
      .orderBy('invoices.id')
      .executeTakeFirst();
    if (existing !== undefined) return { id: existing.id, created: false };
    const price = order.price;
    const invoice = await create(
      trx,
      order.client_id,
      [
        {
          orderId: order.id,
          task: 'renew',
          title: renewalTitle(order),
          period: order.period,
          quantity: order.quantity,
          price,
          total: price * order.quantity,
        },
      ],
      { now, dueAt: order.expires_at ?? isoSeconds(now) },
    );
    return { id: invoice.id, created: true };
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

  // An order canceled for good (e.g. by the scheduler) no longer owes its renewal.
  events.on('order.canceled', async ({ orderId }, trx) => {
    const ids = await trx
      .selectFrom('invoice_items')
      .innerJoin('invoices', 'invoices.id', 'invoice_items.invoice_id')
      .select('invoices.id')
      .where('invoice_items.order_id', '=', orderId)
      .where('invoice_items.task', '=', 'renew')
      .where('invoices.status', '=', 'unpaid')
      .execute();
    for (const { id } of ids) {
      const others = await trx.selectFrom('invoice_items').select('id').where('invoice_id', '=', id).where('order_id', '!=', orderId).executeTakeFirst();
      if (others === undefined) {
        await trx.updateTable('invoices').set({ status: 'canceled', updated_at: nowText() }).where('id', '=', id).where('status', '=', 'unpaid').execute();
      }
    }
  });

  function nowText(): string {
    return isoSeconds(new Date());
  }

  /** Compare-and-set of the status: 409 when the invoice is not in `from` (also when a concurrent call won). */
  async function setStatus(trx: Kysely<Database>, row: InvoiceRow, from: InvoiceStatus, to: InvoiceStatus, now: Date, verb: string) {
    if (row.status !== from) throw errors.conflict(`The invoice is ${row.status}; it cannot be ${verb}`);
    const result = await trx
      .updateTable('invoices')
      .set({ status: to, updated_at: isoSeconds(now), ...(to === 'paid' && { paid_at: isoSeconds(now) }) })
      .where('id', '=', row.id)
      .where('status', '=', from)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) !== 1) throw errors.conflict(`The invoice is no longer ${from}; it cannot be ${verb}`);
  }

  return {
    create,
    execute,
    renewalFor,

    async markAsPaid(id: number, input: PaymentInput = {}, now = new Date()): Promise<void> {
      if (input.gatewayId !== undefined) gateways.require(input.gatewayId);
      await inTransaction(db, async (trx) => {
        const row = await requireRow(trx, id);
        await setStatus(trx, row, 'unpaid', 'paid', now, 'paid');
        const transaction = await trx
          .insertInto('transactions')
          .values({
            invoice_id: id,
            gateway_id: input.gatewayId ?? null,
            transaction_id: input.transactionId === undefined || input.transactionId === '' ? null : input.transactionId,
            amount: row.total,
            currency: row.currency,
            type: 'paid',
            created_at: isoSeconds(now),
          })
          .returning('id')
          .executeTakeFirstOrThrow();
        if (input.execute !== false) await execute(trx, id, now);
        await events.emit('invoice.paid', { ...eventOf(row), transactionId: transaction.id }, trx);
      });
    },

    async cancel(id: number, now = new Date()): Promise<void> {
      await inTransaction(db, async (trx) => {
        const row = await requireRow(trx, id);
        await setStatus(trx, row, 'unpaid', 'canceled', now, 'canceled');
        await events.emit('invoice.canceled', eventOf(row), trx);
      });
    },

    async refund(id: number, now = new Date()): Promise<void> {
      await inTransaction(db, async (trx) => {
        const row = await requireRow(trx, id);
        await setStatus(trx, row, 'paid', 'refunded', now, 'refunded');
        await trx
          .insertInto('transactions')
          .values({
            invoice_id: id,
            gateway_id: null,
            transaction_id: null,
            amount: -row.total,
            currency: row.currency,
            type: 'refunded',
            created_at: isoSeconds(now),
          })
          .execute();
        await events.emit('invoice.refunded', eventOf(row), trx);
      });
    },

    async get(id: number, clientId?: number): Promise<InvoiceRecord> {
      const [record] = await withItems(db, [await requireRow(db, id, clientId)]);
      return record!;
    },

    async getByHash(hash: string): Promise<InvoiceRecord> {
      const row = await db.selectFrom('invoices').selectAll().where('hash', '=', hash).executeTakeFirst();
      if (row === undefined) throw errors.notFound('Invoice');
      const [record] = await withItems(db, [row]);
      return record!;
    },

    async list(filters: InvoiceFilters, clientId?: number): Promise<Page<InvoiceRecord>> {
      const request = pageRequest(filters);
      let query = db.selectFrom('invoices');
      const owner = clientId ?? filters.client_id;
      if (owner !== undefined) query = query.where('client_id', '=', owner);
      if (filters.status !== undefined) query = query.where('status', '=', filters.status);
      const count = async (): Promise<number> => (await query.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n;
      const unfiltered = owner === undefined && filters.status === undefined;
      const total = { n: unfiltered ? await cachedTotal(db, 'invoices', count) : await count() };
      const rows = await query.selectAll().orderBy('id', 'desc').limit(request.perPage).offset(request.offset).execute();
      return toPage(request, total.n, await withItems(db, rows));
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
        return (await renewalFor(trx, order, now)).id;
      });
    },

    gateways(): Array<{ id: number; code: string; title: string; instructions: string | null }> {
      return gateways.list().map((gateway) => ({ id: gateway.id, code: gateway.code, title: gateway.title, instructions: gateway.instructions(null) }));
    },
  };
}

export type InvoiceService = ReturnType<typeof createInvoiceService>;
