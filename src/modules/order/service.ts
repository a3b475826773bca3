// Orders: one purchased product of one client, and its status machine (CONTRACT §6 orders). The only writer of
// `orders` and `order_history`. Every change runs in a transaction, checks the current status with compare-and-set,
// records history, calls the product type's hook and emits its event there, so a failure anywhere undoes it all.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { EventBus } from '../../platform/events.ts';
import { errors } from '../../platform/errors.ts';
import { moneyFor } from '../../lib/money.ts';
import { addContacts, createdRange, searchText } from '../../platform/list-filters.ts';
import { pageRequest, toPage, type Page } from '../../lib/paginator.ts';
import { addPeriod, parsePeriod } from '../../lib/periods.ts';
import { isoSeconds, timeOf } from '../../lib/time.ts';
import { usageTermsText } from '../../lib/usage-terms.ts';
import type { OrderSnapshot, ProductType } from '../product/product-type.ts';
import { quote } from '../product/pricing.ts';
import { readConfig, type ProductService } from '../product/service.ts';
import type { ProductTypeRegistry } from '../product/types-registry.ts';
import type { ClientService } from '../client/service.ts';
import type { OrderEvent } from './events.ts';
import { newestPage } from '../../db/newest-page.ts';
import { inTransaction } from '../../platform/transaction.ts';
import { parseExpiry, storableExpiry } from './expiry.ts';
import type { StartedTrial } from './trials.ts';
import { ALLOWED_FROM, type NewOrder, type OrderFilters, type OrderRecord, type OrderRow, type OrderUpdate, type Transition } from './types.ts';

// Where other modules have always found them.
export { ALLOWED_FROM, parseExpiry };
export type { NewOrder, OrderFilters, OrderRecord, OrderRow, OrderUpdate, Transition };

export interface OrderServiceDeps {
  db: Kysely<Database>;
  events: EventBus;
  productTypes: Pick<ProductTypeRegistry, 'get'>;
  products: Pick<ProductService, 'typeOf' | 'pricingOf'>;
  /** The admin list's `search` over the client's e-mail and name, and the client shown beside each order. */
  clients: Pick<ClientService, 'idsMatching' | 'matches' | 'contacts'>;
}

export function snapshotOf(row: OrderRow): OrderSnapshot {
  return {
    id: row.id,
    client_id: row.client_id,
    product_id: row.product_id,
    period: row.period,
    quantity: row.quantity,
    status: row.status,
    expires_at: row.expires_at,
    config: readConfig(row.config),
  };
}

function eventOf(row: OrderRow): OrderEvent {
  return { orderId: row.id, clientId: row.client_id, productId: row.product_id, status: row.status };
}

/** The fields that move an order onto another plan (product, period, unit price), clearing any pending change. */
async function planChanges(trx: Kysely<Database>, productId: number, period: string, price: number): Promise<Partial<OrderRow>> {
  const product = await trx.selectFrom('products').select(['title', 'config']).where('id', '=', productId).executeTakeFirst();
  if (product === undefined) throw errors.conflict('The new plan no longer exists');
  return { product_id: productId, title: product.title, period, price, config: product.config, next_product_id: null, next_period: null, next_price: null };
}

/** The downgrade waiting for the order's next renewal, as the changes that apply it, or null. */
async function pendingPlan(trx: Kysely<Database>, row: OrderRow): Promise<{ period: string; changes: Partial<OrderRow> } | null> {
  if (row.next_product_id === null || row.next_period === null || row.next_price === null) return null;
  return { period: row.next_period, changes: await planChanges(trx, row.next_product_id, row.next_period, row.next_price) };
}

export function createOrderService({ db, events, productTypes, products, clients }: OrderServiceDeps) {
  function typeOf(row: OrderRow): ProductType {
    const type = productTypes.get(row.type);
    if (type === undefined) throw new Error(`Order ${row.id} has the unregistered product type "${row.type}"`);
    return type;
  }

  async function unpaidInvoiceIds(trx: Kysely<Database>, orderIds: number[]): Promise<Map<number, number>> {
    if (orderIds.length === 0) return new Map();
    const rows = await trx
      .selectFrom('invoice_items')
      .innerJoin('invoices', 'invoices.id', 'invoice_items.invoice_id')
      .select(['invoice_items.order_id as order_id', (eb) => eb.fn.min('invoices.id').as('invoice_id')])
      .where('invoices.status', '=', 'unpaid')
      .where('invoice_items.order_id', 'in', orderIds)
      .groupBy('invoice_items.order_id')
      .execute();
    return new Map(rows.map((row) => [row.order_id ?? 0, row.invoice_id]));
  }

  /** Staff see whether the client has a saved card (read, never written, here: a trial ends with or without one). */
  async function clientsWithCard(trx: Kysely<Database>, clientIds: number[], staff: boolean): Promise<Set<number>> {
    if (!staff || clientIds.length === 0) return new Set();
    const rows = await trx.selectFrom('payment_methods').select('client_id').distinct().where('client_id', 'in', [...new Set(clientIds)]).execute();
    return new Set(rows.map((row) => row.client_id));
  }

  function toRecord(row: OrderRow, unpaid: Map<number, number>, staff: boolean, cards: Set<number> = new Set()): OrderRecord {
    return {
      id: row.id,
      client_id: row.client_id,
      product_id: row.product_id,
      title: row.title,
      type: row.type,
      period: row.period,
      quantity: row.quantity,
      price: moneyFor(row.currency).format(row.price), currency: row.currency,
      status: row.status,
      reason: row.reason,
      expires_at: row.expires_at,
      activated_at: row.activated_at,
      suspended_at: row.suspended_at,
      canceled_at: row.canceled_at,
      unpaid_invoice_id: unpaid.get(row.id) ?? null,
      cancel_at_period_end: row.cancel_at_period_end === 1,
      next_product_id: row.next_product_id, next_period: row.next_period,
      trial_ends_at: row.trial_ends_at, on_trial: row.trial_state === 'running', trial_awaiting_card: row.trial_state === 'awaiting_card',
      usage_terms: usageTermsText(typeOf(row).publicConfig(readConfig(row.config)), row.currency),
      created_at: row.created_at, updated_at: row.updated_at,
      ...(staff && { notes: row.notes, card_on_file: cards.has(row.client_id) }),
    };
  }

  /** The order, or 404; with `clientId`, another client's order is 404 too. */
  async function requireRow(trx: Kysely<Database>, id: number, clientId?: number): Promise<OrderRow> {
    let query = trx.selectFrom('orders').selectAll().where('id', '=', id);
    if (clientId !== undefined) query = query.where('client_id', '=', clientId);
    const row = await query.executeTakeFirst();
    if (row === undefined) throw errors.notFound('Order');
    return row;
  }

  async function history(trx: Kysely<Database>, orderId: number, from: string | null, to: string, note: string | null, now: Date) {
    await trx
      .insertInto('order_history')
      .values({ order_id: orderId, from_status: from, to_status: to, note: note?.slice(0, 255) ?? null, created_at: isoSeconds(now) })
      .execute();
  }

  /**
   * Moves an order along the status machine inside `trx`. 409 when the current status does not allow it, also when
   * a concurrent change got there first.
   */
  async function transition(
    trx: Kysely<Database>,
    id: number,
    action: Transition,
    options: { reason?: string | null | undefined; now?: Date; trial?: StartedTrial | undefined } = {},
  ): Promise<OrderSnapshot> {
    const now = options.now ?? new Date();
    const nowText = isoSeconds(now);
    const row = await requireRow(trx, id);
    if (!ALLOWED_FROM[action].includes(row.status)) {
      throw errors.conflict(`The order is ${row.status}: "${action}" is not allowed from that status`);
    }
    const reason = options.reason === undefined || options.reason === null || options.reason === '' ? null : options.reason;
    let changes: Partial<OrderRow>;
    switch (action) {
      case 'activate': {
        let config = row.config;
        if (row.activated_at === null) {
          const product = await trx.selectFrom('products').select('config').where('id', '=', row.product_id).executeTakeFirst();
          if (product !== undefined) config = product.config;
        }
        changes = {
          status: 'active',
          activated_at: nowText,
          expires_at: row.period === null ? null : storableExpiry(addPeriod(now, row.period)),
          reason: null,
          suspended_at: null,
          config,
        };
        // A free trial runs until its end on the trial's config; the scheduler then issues the first invoice.
        const trial = options.trial;
        if (trial !== undefined) Object.assign(changes, { expires_at: storableExpiry(trial.endsAt), trial_ends_at: storableExpiry(trial.endsAt), trial_state: 'running', config: trial.config });
        break;
      }
      case 'renew': {
        if (row.period === null) throw errors.conflict('The order is not recurrent; it cannot be renewed');
        // Compared as moments, not text: the stored form must never decide whether the order is still running.
        const from = row.expires_at !== null && timeOf(row.expires_at) > now.getTime() ? new Date(timeOf(row.expires_at)) : now;
        // A downgrade waiting for this renewal applies now: the order renews on the new plan, period and price.
        const next = await pendingPlan(trx, row);
        changes = { expires_at: storableExpiry(addPeriod(from, next?.period ?? row.period)), ...(next !== null && next.changes) };
        break;
      }
      case 'suspend':
        changes = { status: 'suspended', suspended_at: nowText, reason };
        break;
      case 'unsuspend':
        changes = { status: 'active', suspended_at: null, reason: null };
        break;
      case 'cancel':
        changes = { status: 'canceled', canceled_at: nowText, reason, cancel_at_period_end: 0 };
        break;
      default:
        // An order canceled while suspended comes back active, so its suspension goes with the cancellation.
        changes = { status: row.activated_at === null ? 'pending_setup' : 'active', canceled_at: null, suspended_at: null, reason: null };
    }
    let update = trx
      .updateTable('orders')
      .set({ ...changes, updated_at: nowText })
      .where('id', '=', id)
      .where('status', '=', row.status);
    if (action === 'renew') update = update.where('expires_at', row.expires_at === null ? 'is' : '=', row.expires_at);
    const result = await update.executeTakeFirst();
    if (Number(result.numUpdatedRows) !== 1) throw errors.conflict('The order was changed by another request; try again');
    // The per-status totals of the staff list (src/db/search.ts) count again once this is committed.

    const next: OrderRow = { ...row, ...changes, updated_at: nowText };
    const note = action === 'renew' ? `renewed until ${next.expires_at}` : (reason ?? action);
    await history(trx, id, row.status, next.status, note, now);
    const snapshot = snapshotOf(next);
    await typeOf(next)[action](trx, snapshot);
    const event = eventOf(next);
    if (action === 'renew' && next.product_id !== row.product_id) {
      await events.emit('order.plan_changed', { ...event, fromProductId: row.product_id, config: snapshot.config }, trx);
    }
    switch (action) {
      case 'activate':
        await events.emit('order.activated', event, trx);
        break;
      case 'renew':
        await events.emit('order.renewed', { ...event, expiresAt: next.expires_at }, trx);
        break;
      case 'suspend':
        await events.emit('order.suspended', { ...event, reason }, trx);
        break;
      case 'unsuspend':
        await events.emit('order.unsuspended', event, trx);
        break;
      case 'cancel':
        await events.emit('order.canceled', { ...event, reason }, trx);
        break;
      default:
        await events.emit('order.uncanceled', event, trx);
    }
    return snapshot;
  }

  // A client with orders or invoices cannot be deleted: cancel and keep the records instead.
  events.on('client.deleted', async ({ clientId }, trx) => {
    const order = await trx.selectFrom('orders').select('id').where('client_id', '=', clientId).limit(1).executeTakeFirst();
    const invoice = await trx.selectFrom('invoices').select('id').where('client_id', '=', clientId).limit(1).executeTakeFirst();
    if (order !== undefined || invoice !== undefined) {
      throw errors.conflict('The client has orders or invoices; cancel the account instead of deleting it');
    }
  });

  return {
    transition,
    requireRow,
    typeOf,

    /**
     * Moves an active order onto another plan now (a paid upgrade), inside `trx`: new product, period and price, a
     * new period starting now, the new plan's config; the product type hears it through `order.plan_changed` (the
     * API key keeps its key and takes the new custom parameters). A suspended order changes too and is unsuspended,
     * though a paid invoice never brings one here (invoice/order-tasks.ts refuses a change once the order is not
     * active: issue 20, M2). An order canceled or not yet active is left alone (false).
     */
    async applyPlanChange(trx: Kysely<Database>, id: number, plan: { productId: number; period: string; price: number }, now = new Date()): Promise<boolean> {
      const row = await requireRow(trx, id);
      if (row.status !== 'active' && row.status !== 'suspended') return false;
      const nowText = isoSeconds(now);
      const changes: Partial<OrderRow> = { ...(await planChanges(trx, plan.productId, plan.period, plan.price)), expires_at: isoSeconds(addPeriod(now, plan.period)) };
      const result = await trx
        .updateTable('orders')
        .set({ ...changes, updated_at: nowText })
        .where('id', '=', id)
        .where('status', '=', row.status)
        .where('updated_at', '=', row.updated_at)
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) !== 1) throw errors.conflict('The order was changed by another request; try again');
      const next: OrderRow = { ...row, ...changes, updated_at: nowText };
      await history(trx, id, row.status, next.status, `plan changed to ${next.title} (${plan.period})`, now);
      const snapshot = snapshotOf(next);
      await typeOf(next).update(trx, snapshot);
      await events.emit('order.plan_changed', { ...eventOf(next), fromProductId: row.product_id, config: snapshot.config }, trx);
      if (row.status === 'suspended') await transition(trx, id, 'unsuspend', { now });
      return true;
    },

    /** Self-service fields (CONTRACT §8) written by the order module's self-service, inside `trx`, checked by status. */
    async setSelfService(
      trx: Kysely<Database>,
      row: OrderRow,
      fields: Partial<Pick<OrderRow, 'cancel_at_period_end' | 'next_product_id' | 'next_period' | 'next_price'>>,
      note: string,
      now = new Date(),
    ): Promise<void> {
      const nowText = isoSeconds(now);
      const result = await trx
        .updateTable('orders')
        .set({ ...fields, updated_at: nowText })
        .where('id', '=', row.id)
        .where('status', '=', row.status)
        .where('updated_at', '=', row.updated_at)
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) !== 1) throw errors.conflict('The order was changed by another request; try again');
      await history(trx, row.id, row.status, row.status, note, now);
    },

    /**
     * Serialises work on one order until `trx` ends: a no-op update takes the row lock on PostgreSQL (SQLite runs
     * one write transaction at a time anyway).
     */
    async lock(trx: Kysely<Database>, id: number): Promise<void> {
      await trx
        .updateTable('orders')
        .set((eb) => ({ updated_at: eb.ref('updated_at') }))
        .where('id', '=', id)
        .execute();
    },

    /** Inserts a `pending_setup` order inside `trx` and runs the type's `create` hook. */
    async create(trx: Kysely<Database>, input: NewOrder, now = new Date()): Promise<OrderRow> {
      const type = products.typeOf(input.product);
      const nowText = isoSeconds(now);
      const row = await trx
        .insertInto('orders')
        .values({
          client_id: input.clientId,
          product_id: input.product.id,
          title: input.product.title,
          type: type.code,
          period: input.period,
          quantity: input.quantity,
          price: input.price,
          currency: input.currency,
          status: 'pending_setup',
          reason: null,
          notes: null,
          config: input.product.config,
          promo_id: input.promoId ?? null,
          expires_at: null,
          activated_at: null,
          suspended_at: null,
          canceled_at: null,
          created_at: nowText,
          updated_at: nowText,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      await history(trx, row.id, null, 'pending_setup', 'created', now);
      await type.create(trx, snapshotOf(row));
      await events.emit('order.created', eventOf(row), trx);
      return row;
    },

    /** Runs one transition in its own transaction. */
    async change(id: number, action: Transition, options: { reason?: string | undefined; now?: Date } = {}): Promise<void> {
      await inTransaction(db, (trx) => transition(trx, id, action, options));
    },

    async update(id: number, fields: OrderUpdate, now = new Date()): Promise<void> {
      await inTransaction(db, async (trx) => {
        const row = await requireRow(trx, id);
        const changes: Partial<OrderRow> = {};
        if (fields.expires_at !== undefined) changes.expires_at = parseExpiry(fields.expires_at);
        if (fields.period !== undefined) {
          if (row.period === null) throw errors.invalid('period', 'cannot be set on an order that is not recurrent');
          if (parsePeriod(fields.period) === null) throw errors.invalid('period', 'is not a period code');
          const product = await trx.selectFrom('products').selectAll().where('id', '=', row.product_id).executeTakeFirstOrThrow();
          quote(products.pricingOf(product), fields.period, { allowDisabled: true });
          changes.period = fields.period;
        }
        if (fields.price !== undefined) changes.price = moneyFor(row.currency).parse(fields.price, 'price');
        if (fields.notes !== undefined) changes.notes = fields.notes === '' ? null : fields.notes;
        const nowText = isoSeconds(now);
        await trx.updateTable('orders').set({ ...changes, updated_at: nowText }).where('id', '=', id).execute();
        const next: OrderRow = { ...row, ...changes, updated_at: nowText };
        await typeOf(next).update(trx, snapshotOf(next));
        await events.emit('order.updated', eventOf(next), trx);
      });
    },

    /** The order's expiry was moved in `trx` (a trial extended or ended by staff): its product type and listeners hear it. */
    async expiryMoved(trx: Kysely<Database>, id: number): Promise<void> {
      const row = await requireRow(trx, id);
      await typeOf(row).update(trx, snapshotOf(row));
      await events.emit('order.updated', eventOf(row), trx);
    },

    async delete(id: number): Promise<void> {
      await inTransaction(db, async (trx) => {
        const row = await requireRow(trx, id);
        await typeOf(row).delete(trx, snapshotOf(row));
        await events.emit('order.deleted', eventOf(row), trx);
        await trx.deleteFrom('order_history').where('order_id', '=', id).execute();
        await trx.deleteFrom('orders').where('id', '=', id).execute();
      });
    },

    async get(id: number, clientId?: number): Promise<OrderRecord> {
      const row = await requireRow(db, id, clientId);
      return toRecord(row, await unpaidInvoiceIds(db, [row.id]), clientId === undefined, await clientsWithCard(db, [row.client_id], clientId === undefined));
    },

    /** The order merged with its product type's service fields (e.g. the API key). */
    async service(id: number, clientId?: number): Promise<Record<string, unknown>> {
      return inTransaction(db, async (trx) => {
        const row = await requireRow(trx, id, clientId);
        const extra = await typeOf(row).service(trx, snapshotOf(row));
        const cards = await clientsWithCard(trx, [row.client_id], clientId === undefined);
        return { ...toRecord(row, await unpaidInvoiceIds(trx, [row.id]), clientId === undefined, cards), ...extra };
      });
    },

    async list(filters: OrderFilters, clientId?: number): Promise<Page<OrderRecord>> {
      const request = pageRequest(filters);
      const staff = clientId === undefined;
      let query = db.selectFrom('orders');
      const owner = clientId ?? filters.client_id;
      if (owner !== undefined) query = query.where('client_id', '=', owner);
      if (filters.status !== undefined) query = query.where('status', '=', filters.status);
      if (filters.product_id !== undefined) query = query.where('product_id', '=', filters.product_id);
      if (filters.type !== undefined) query = query.where('type', '=', filters.type);
      const { rows, total } = await newestPage(db, 'orders', query, {
        request,
        created: staff ? createdRange(filters) : {},
        text: staff ? searchText(filters.search) : null,
        searched: { table: 'orders', column: 'title', fts: 'orders_search' },
        clients,
        narrowed: owner !== undefined || filters.product_id !== undefined || filters.type !== undefined,
        status: filters.status,
      });
      const unpaid = await unpaidInvoiceIds(db, rows.map((row) => row.id));
      const cards = await clientsWithCard(db, rows.map((row) => row.client_id), staff);
      const records = rows.map((row) => toRecord(row, unpaid, staff, cards));
      if (staff) addContacts(records, await clients.contacts(rows.map((row) => row.client_id)));
      return toPage(request, total.n, records, total.capped);
    },

    async history(id: number): Promise<Array<{ from_status: string | null; to_status: string; note: string | null; created_at: string }>> {
      await requireRow(db, id);
      return db
        .selectFrom('order_history')
        .select(['from_status', 'to_status', 'note', 'created_at'])
        .where('order_id', '=', id)
        .orderBy('id')
        .execute();
    },
  };
}

export type OrderService = ReturnType<typeof createOrderService>;
