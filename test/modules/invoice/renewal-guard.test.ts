// Issue 20, H1, M2 and L6: one unpaid invoice buys an order time. A renewal is refused (409) while a plan change is
// unpaid and for an order canceled at period end; a renewal line records the plan it renews and a payment for a plan
// the order is no longer on is refused (staff: 409; a provider's payment or an off-session charge: recorded or
// skipped, the invoice voided, nothing applied); an unpaid plan change lapses at the end of the period it was priced
// for. Runs on SQLite, and on PostgreSQL + Redis when TEST_* are set.
import { Migrator, sql, type Kysely, type Migration } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../../../src/db/database.ts';
import { migrations } from '../../../src/db/migrations/index.ts';
import { inTransaction } from '../../../src/platform/transaction.ts';
import { staleReason } from '../../../src/modules/invoice/order-tasks.ts';
import { freshPostgresDatabase } from '../../helpers/app.ts';
import { expectError, expectInvalid } from '../../helpers/assertions.ts';
import { asClient, makeProduct } from '../../helpers/selling-fixtures.ts';
import { deliver, payByCard, purchase, startCardPayment, stripeStand, transactionsOf, type StripeStand } from '../../helpers/stripe-fixtures.ts';

const DAY = 86_400_000;
const monthly = (price: string) => ({ type: 'recurrent', recurrent: { '1M': { price, setup: '0', enabled: true } } });

describe('renewals and plan changes of one order (issue 20: H1, M2, L6)', () => {
  let stand: StripeStand;
  let planA: number;
  let planB: number;

  beforeAll(async () => {
    stand = await stripeStand();
    planA = await makeProduct(stand.t, { title: 'Plan A', setup: 'after_payment', pricing: monthly('10.00') });
    planB = await makeProduct(stand.t, { title: 'Plan B', setup: 'after_payment', pricing: monthly('20.00') });
  });
  afterAll(async () => {
    await stand.close();
  });

  const t = () => stand.t;
  const order = async (id: number) => (await t().admin('order/get', { id })).result;
  const invoice = async (id: number) => (await t().admin('invoice/get', { id })).result;
  const lines = (invoiceId: number) => t().services.db.selectFrom('invoice_items').selectAll().where('invoice_id', '=', invoiceId).execute();

  /** A client (paying by hand, no card) with an active order on plan A, its first invoice paid. */
  async function orderOnA(): Promise<{ token: string; clientId: number; orderId: number }> {
    const client = await t().createClient();
    await asClient(t(), client.token, 'cart/add_item', { id: planA, period: '1M' });
    const checkout = (await asClient(t(), client.token, 'cart/checkout')).result;
    expect((await t().admin('invoice/mark_as_paid', { id: checkout.invoice_id })).result).toBe(true);
    return { token: client.token, clientId: client.id, orderId: checkout.order_id };
  }

  async function upgrade(token: string, orderId: number): Promise<number> {
    const reply = await asClient(t(), token, 'order/change_plan', { id: orderId, product_id: planB, period: '1M' });
    expect(reply.body.error).toBeNull();
    expect(reply.result).toMatchObject({ change: 'upgrade', effective: 'on_payment' });
    return reply.result.invoice_id as number;
  }

  /** Moves the order onto plan B behind the services' back: the state H1 used to leave (a renewal of A unpaid). */
  async function forcePlanB(orderId: number): Promise<void> {
    await t().services.db.updateTable('orders').set({ product_id: planB, title: 'Plan B', price: 2000 }).where('id', '=', orderId).execute();
  }

  it('H1: refuses a renewal invoice while an upgrade invoice is unpaid; after the upgrade the renewal is priced on B', async () => {
    const { token, orderId } = await orderOnA();
    const upgradeId = await upgrade(token, orderId);
    expectError(await asClient(t(), token, 'invoice/renewal_invoice', { order_id: orderId }), 409);
    // Nothing was issued by the refused call.
    expect((await order(orderId)).unpaid_invoice_id).toBe(upgradeId);
    expect((await t().admin('invoice/mark_as_paid', { id: upgradeId })).result).toBe(true);
    const before = await order(orderId);
    expect(before).toMatchObject({ product_id: planB, price: '20.00' });
    const renewal = (await asClient(t(), token, 'invoice/renewal_invoice', { order_id: orderId })).result as number;
    expect(await invoice(renewal)).toMatchObject({ subtotal: '20.00', items: [{ task: 'renew', price: '20.00', title: expect.stringContaining('Plan B') }] });
    expect(await lines(renewal)).toMatchObject([{ task: 'renew', product_id: planB, period: '1M', price: 2000 }]);
    await t().admin('invoice/mark_as_paid', { id: renewal });
    expect(Date.parse((await order(orderId)).expires_at)).toBeGreaterThan(Date.parse(before.expires_at));
  });

  it('H1: once staff cancel an unwanted upgrade invoice, the renewal is issued on the current plan', async () => {
    const { token, orderId } = await orderOnA();
    const upgradeId = await upgrade(token, orderId);
    expectError(await asClient(t(), token, 'invoice/renewal_invoice', { order_id: orderId }), 409);
    expect((await t().admin('invoice/cancel', { id: upgradeId })).result).toBe(true);
    const renewal = (await asClient(t(), token, 'invoice/renewal_invoice', { order_id: orderId })).result as number;
    expect(await lines(renewal)).toMatchObject([{ task: 'renew', product_id: planA, price: 1000 }]);
  });

  it('H1, vice versa: refuses a plan change while a renewal is unpaid', async () => {
    const { token, orderId } = await orderOnA();
    const renewal = (await asClient(t(), token, 'invoice/renewal_invoice', { order_id: orderId })).result as number;
    expect(await lines(renewal)).toMatchObject([{ task: 'renew', product_id: planA, price: 1000 }]);
    expectError(await asClient(t(), token, 'order/change_plan', { id: orderId, product_id: planB, period: '1M' }), 409);
    expect((await order(orderId)).product_id).toBe(planA);
  });

  it('H1: a renewal of plan A is never applied to an order on plan B (staff 409, provider payment recorded, invoice voided)', async () => {
    const { token, orderId } = await orderOnA();
    const renewal = (await asClient(t(), token, 'invoice/renewal_invoice', { order_id: orderId })).result as number;
    await forcePlanB(orderId);
    const before = await order(orderId);
    expectError(await t().admin('invoice/mark_as_paid', { id: renewal }), 409);
    expect(await invoice(renewal)).toMatchObject({ status: 'unpaid' });
    // A provider's payment of it arriving anyway: recorded for staff to refund, never applied; the invoice is voided.
    const gateway = t().services.gateways.byCode('custom')!;
    const outcome = await inTransaction(t().services.db, (trx) =>
      t().services.gatewayPayments.applyPayment(trx, gateway, { invoiceId: renewal, ref: 'late-1', amount: 1000, currency: 'USD' }, new Date()),
    );
    expect(outcome).toBe('error');
    expect(await transactionsOf(t(), renewal)).toMatchObject([{ type: 'payment', status: 'error', amount: 1000, message: expect.stringContaining('refunded') }]);
    expect(await invoice(renewal)).toMatchObject({ status: 'canceled' });
    expect(await order(orderId)).toMatchObject({ expires_at: before.expires_at, product_id: planB });
  });

  it('H1: staff moving the order to another price cancels the renewal issued for the old one', async () => {
    const { token, orderId } = await orderOnA();
    const renewal = (await asClient(t(), token, 'invoice/renewal_invoice', { order_id: orderId })).result as number;
    expect((await t().admin('order/update', { id: orderId, price: '25.00' })).result).toBe(true);
    expect(await invoice(renewal)).toMatchObject({ status: 'canceled' });
    const next = (await asClient(t(), token, 'invoice/renewal_invoice', { order_id: orderId })).result as number;
    expect(next).not.toBe(renewal);
    expect(await invoice(next)).toMatchObject({ subtotal: '25.00' });
    // Notes alone leave the renewal as it is.
    await t().admin('order/update', { id: orderId, notes: 'VIP' });
    expect(await invoice(next)).toMatchObject({ status: 'unpaid' });
  });

  it('H1: the scheduler issues no renewal while an upgrade is unpaid, and issues it once the upgrade lapses', async () => {
    const { token, orderId } = await orderOnA();
    const upgradeId = await upgrade(token, orderId);
    const expires = Date.parse((await order(orderId)).expires_at);
    const report = await t().services.cron.run(new Date(expires - DAY));
    expect(report.failed).toBe(0);
    expect((await order(orderId)).unpaid_invoice_id).toBe(upgradeId);
    const after = await t().services.cron.run(new Date(expires + 1000));
    expect(after.plan_changes_voided).toBeGreaterThanOrEqual(1);
    expect(await invoice(upgradeId)).toMatchObject({ status: 'canceled' });
    const renewalId = (await order(orderId)).unpaid_invoice_id as number;
    expect(renewalId).not.toBe(upgradeId);
    expect(await invoice(renewalId)).toMatchObject({ subtotal: '10.00', items: [{ task: 'renew' }] });
  });

  it('H1: of a renewal and a plan change asked at once, exactly one is issued', async () => {
    // Sent in both orders: whichever is served first wins and the other answers 409.
    for (let round = 0; round < 4; round++) {
      const { token, orderId } = await orderOnA();
      const renew = () => asClient(t(), token, 'invoice/renewal_invoice', { order_id: orderId });
      const change = () => asClient(t(), token, 'order/change_plan', { id: orderId, product_id: planB, period: '1M' });
      const replies = await Promise.all(round % 2 === 0 ? [renew(), change()] : [change(), renew()]);
      expect(replies.map((reply) => reply.status).toSorted((a, b) => a - b)).toEqual([200, 409]);
      const unpaid = await t()
        .services.db.selectFrom('invoice_items')
        .innerJoin('invoices', 'invoices.id', 'invoice_items.invoice_id')
        .select('invoices.id')
        .where('invoice_items.order_id', '=', orderId)
        .where('invoices.status', '=', 'unpaid')
        .execute();
      expect(unpaid).toHaveLength(1);
    }
  });

  it('M2: an unpaid upgrade is voided at the end of the period it was priced for; paying it then is never applied', async () => {
    const { token, orderId } = await orderOnA();
    const upgradeId = await upgrade(token, orderId);
    expect(await lines(upgradeId)).toMatchObject([{ task: 'change', product_id: planB, priced_until: (await order(orderId)).expires_at, credit: expect.any(Number) }]);
    const expires = Date.parse((await order(orderId)).expires_at);
    // Still payable inside the period: the scheduler leaves it.
    expect((await t().services.cron.run(new Date(expires - 1000))).failed).toBe(0);
    expect(await invoice(upgradeId)).toMatchObject({ status: 'unpaid' });
    await t().services.cron.run(new Date(expires + 1000));
    expect(await invoice(upgradeId)).toMatchObject({ status: 'canceled' });
    expectError(await t().admin('invoice/mark_as_paid', { id: upgradeId }), 409);
    const gateway = t().services.gateways.byCode('custom')!;
    const total = Math.round(Number((await invoice(upgradeId)).total) * 100);
    const outcome = await inTransaction(t().services.db, (trx) =>
      t().services.gatewayPayments.applyPayment(trx, gateway, { invoiceId: upgradeId, ref: 'late-2', amount: total, currency: 'USD' }, new Date(expires + 2000)),
    );
    expect(outcome).toBe('error');
    expect(await order(orderId)).toMatchObject({ product_id: planA, status: 'suspended' });
  });

  it('M2: without the scheduler, a payment after the priced period is refused (staff) and not applied (provider)', async () => {
    const { token, orderId } = await orderOnA();
    const upgradeId = await upgrade(token, orderId);
    const expires = Date.parse((await order(orderId)).expires_at);
    await expect(t().services.invoices.markAsPaid(upgradeId, {}, new Date(expires + 1000))).rejects.toMatchObject({ status: 409 });
    const gateway = t().services.gateways.byCode('custom')!;
    const total = Math.round(Number((await invoice(upgradeId)).total) * 100);
    const outcome = await inTransaction(t().services.db, (trx) =>
      t().services.gatewayPayments.applyPayment(trx, gateway, { invoiceId: upgradeId, ref: 'late-3', amount: total, currency: 'USD' }, new Date(expires + 1000)),
    );
    expect(outcome).toBe('error');
    expect(await invoice(upgradeId)).toMatchObject({ status: 'canceled' });
    expect(await transactionsOf(t(), upgradeId)).toMatchObject([{ status: 'error', message: expect.stringContaining('lapsed') }]);
    expect(await order(orderId)).toMatchObject({ product_id: planA, expires_at: new Date(expires).toISOString().replace(/\.\d{3}Z$/, 'Z') });
  });

  it('M2: a card payment of an upgrade completed after it lapsed is recorded as an error, not applied', async () => {
    const bought = await purchase(t(), planA);
    await payByCard(stand, bought.hash);
    const reply = await asClient(t(), bought.token, 'order/change_plan', { id: bought.orderId, product_id: planB, period: '1M' });
    const upgradeId = reply.result.invoice_id as number;
    const session = await startCardPayment(stand, (await invoice(upgradeId)).hash);
    // The priced period ends before the card payment completes (as if the scheduler had not run yet).
    await t().services.db.updateTable('invoice_items').set({ priced_until: '2000-01-01T00:00:00Z' }).where('invoice_id', '=', upgradeId).execute();
    for (const event of stand.stripe.completeSession(session)) expect((await deliver(stand, event)).status).toBe(200);
    expect(await order(bought.orderId)).toMatchObject({ product_id: planA });
    expect(await invoice(upgradeId)).toMatchObject({ status: 'canceled' });
    expect((await transactionsOf(t(), upgradeId)).map((row) => row.status)).toEqual(['error']);
  });

  it('L6: no renewal invoice for an order canceled at period end until uncancel', async () => {
    const { token, orderId } = await orderOnA();
    expect((await asClient(t(), token, 'order/cancel', { id: orderId })).result).toBe(true);
    expectError(await asClient(t(), token, 'invoice/renewal_invoice', { order_id: orderId }), 409);
    const expires = Date.parse((await order(orderId)).expires_at);
    expect((await t().services.cron.run(new Date(expires - DAY))).failed).toBe(0);
    expect((await order(orderId)).unpaid_invoice_id).toBeNull();
    expect((await asClient(t(), token, 'order/uncancel', { id: orderId })).result).toBe(true);
    const renewal = await asClient(t(), token, 'invoice/renewal_invoice', { order_id: orderId });
    expect(renewal.body.error).toBeNull();
    // Canceling again cancels that renewal, and a payment of it is refused.
    await asClient(t(), token, 'order/cancel', { id: orderId });
    expect(await invoice(renewal.result)).toMatchObject({ status: 'canceled' });
    expectError(await t().admin('invoice/mark_as_paid', { id: renewal.result }), 409);
  });

  it('L6: a renewal left unpaid for an order canceled at period end is refused at payment', async () => {
    const { token, orderId } = await orderOnA();
    const renewal = (await asClient(t(), token, 'invoice/renewal_invoice', { order_id: orderId })).result as number;
    // The cancellation recorded without its event (as before this fix): the invoice is still unpaid.
    await t().services.db.updateTable('orders').set({ cancel_at_period_end: 1 }).where('id', '=', orderId).execute();
    const before = await order(orderId);
    expectError(await t().admin('invoice/mark_as_paid', { id: renewal }), 409);
    expect((await order(orderId)).expires_at).toBe(before.expires_at);
  });

  it('L6 and H1: auto-pay charges no card for a renewal the order no longer takes', async () => {
    const run = () => t().services.outbox.runDue(new Date());
    const intents = (invoiceId: number) => stand.stripe.requestsTo('POST', '/v1/payment_intents').filter((request) => (request.body.metadata as { invoice_id: string }).invoice_id === String(invoiceId));
    for (const spoil of ['canceled at period end', 'moved to plan B'] as const) {
      const bought = await purchase(t(), planA);
      await payByCard(stand, bought.hash);
      const renewal = (await asClient(t(), bought.token, 'invoice/renewal_invoice', { order_id: bought.orderId })).result as number;
      const before = await order(bought.orderId);
      if (spoil === 'canceled at period end') await t().services.db.updateTable('orders').set({ cancel_at_period_end: 1 }).where('id', '=', bought.orderId).execute();
      else await forcePlanB(bought.orderId);
      await run();
      expect(intents(renewal), spoil).toHaveLength(0);
      expect(await invoice(renewal)).toMatchObject({ status: 'canceled' });
      expect((await order(bought.orderId)).expires_at).toBe(before.expires_at);
    }
    // The same customer's renewal that is still valid is charged: the guard refuses only stale ones.
    const bought = await purchase(t(), planA);
    await payByCard(stand, bought.hash);
    const renewal = (await asClient(t(), bought.token, 'invoice/renewal_invoice', { order_id: bought.orderId })).result as number;
    await run();
    expect(intents(renewal)).toHaveLength(1);
    expect(await invoice(renewal)).toMatchObject({ status: 'paid' });
  });

  it('answers the failure paths in the envelope', async () => {
    const { token, orderId } = await orderOnA();
    const other = await t().createClient();
    expectError(await asClient(t(), other.token, 'invoice/renewal_invoice', { order_id: orderId }), 404);
    expectInvalid(await asClient(t(), token, 'invoice/renewal_invoice', {}), 'order_id');
    expectInvalid(await asClient(t(), token, 'invoice/renewal_invoice', { order_id: 'x' }), 'order_id');
    expectError(await t().call('/api/client/invoice/renewal_invoice', { order_id: orderId }), 201, 401);
    expectError(await asClient(t(), token, 'invoice/renewal_invoice', { order_id: 999_999 }), 404);
  });
});

describe('migration 017_plan_changes on a database with unpaid renewals and plan changes', () => {
  const PG = process.env.TEST_DATABASE_URL ?? '';
  const NOW = '2026-11-22T10:00:00Z';
  const opened: Array<{ handle: DatabaseHandle; drop?: () => Promise<void> }> = [];
  afterAll(async () => {
    for (const { handle, drop } of opened) {
      await handle.close();
      await drop?.();
    }
  });

  it('records the plan each unpaid renewal renews, the period each plan change was priced for, and what bought each expiry', async () => {
    const postgres = PG === '' ? null : await freshPostgresDatabase(PG);
    const handle = openDatabase(postgres?.url ?? 'sqlite::memory:');
    opened.push({ handle, ...(postgres !== null && { drop: postgres.drop }) });
    // Migrations take Kysely<any>; so does this test, which writes tables as they were before 017.
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const db = handle.db as unknown as Kysely<any>;
    const migrator = new Migrator({ db, provider: { getMigrations: (): Promise<Record<string, Migration>> => Promise.resolve(migrations) } });
    expect((await migrator.migrateTo('016_search_speed')).error).toBeUndefined();

    await sql`INSERT INTO clients (email, first_name, status, api_token_hash, api_token_enc, created_at, updated_at) VALUES ('a@example.com', 'A', 'active', 'h1', 'e1', ${NOW}, ${NOW})`.execute(db);
    for (const [id, title] of [[1, 'A'], [2, 'B']] as const) {
      await sql`INSERT INTO products (id, title, slug, type, status, setup, pricing, created_at, updated_at) VALUES (${id}, ${title}, ${title}, 'custom', 'enabled', 'after_payment', '{}', ${NOW}, ${NOW})`.execute(db);
    }
    // Orders: 1 on A; 2 moved to B while a renewal of A was unpaid (H1); 3 with a downgrade to B waiting; 4 with an
    // unpaid upgrade; 5 activated and renewed by paid invoices.
    const orders: Array<[number, number, number, string | null]> = [[1, 1, 1000, null], [2, 2, 2000, null], [3, 1, 1000, 'B'], [4, 1, 1000, null], [5, 1, 1000, null]];
    for (const [id, product, price, next] of orders) {
      await sql`INSERT INTO orders (id, client_id, product_id, title, type, period, quantity, price, currency, status, expires_at, created_at, updated_at, next_product_id, next_period, next_price)
        VALUES (${id}, 1, ${product}, 'P', 'custom', '1M', 1, ${price}, 'USD', 'active', ${`2026-12-0${id}T10:00:00Z`}, ${NOW}, ${NOW}, ${next === null ? null : 2}, ${next === null ? null : '1M'}, ${next === null ? null : 500})`.execute(db);
    }
    const invoice = async (id: number, status: string) =>
      sql`INSERT INTO invoices (id, hash, client_id, status, currency, subtotal, total, created_at, updated_at) VALUES (${id}, ${`hash-${id}`}, 1, ${status}, 'USD', 1000, 1000, ${NOW}, ${NOW})`.execute(db);
    const item = async (id: number, invoiceId: number, orderId: number, task: string, price: number, executed: number) =>
      sql`INSERT INTO invoice_items (id, invoice_id, order_id, task, title, period, quantity, price, total, executed, product_id) VALUES (${id}, ${invoiceId}, ${orderId}, ${task}, 'line', '1M', 1, ${price}, ${price}, ${executed}, ${task === 'change' ? 2 : null})`.execute(db);
    for (const [id, status] of [[1, 'unpaid'], [2, 'unpaid'], [3, 'unpaid'], [4, 'unpaid'], [5, 'paid'], [6, 'paid']] as const) await invoice(id, status);
    await item(1, 1, 1, 'renew', 1000, 0);
    await item(2, 2, 2, 'renew', 1000, 0);
    await item(3, 3, 3, 'renew', 500, 0);
    await item(4, 4, 4, 'change', 1500, 0);
    await item(5, 5, 5, 'activate', 1000, 1);
    await item(6, 6, 5, 'renew', 1000, 1);

    const after = await migrator.migrateToLatest();
    expect(after.error).toBeUndefined();
    const lines = await db.selectFrom('invoice_items').select(['id', 'product_id', 'credit', 'priced_until', 'covers_until']).orderBy('id').execute();
    expect(lines).toEqual([
      { id: 1, product_id: 1, credit: 0, priced_until: null, covers_until: null },
      // The renewal of A on an order now on B names no plan: paying it is refused.
      { id: 2, product_id: null, credit: 0, priced_until: null, covers_until: null },
      { id: 3, product_id: 2, credit: 0, priced_until: null, covers_until: null },
      { id: 4, product_id: 2, credit: 0, priced_until: '2026-12-04T10:00:00Z', covers_until: null },
      { id: 5, product_id: null, credit: 0, priced_until: null, covers_until: null },
      { id: 6, product_id: null, credit: 0, priced_until: null, covers_until: '2026-12-05T10:00:00Z' },
    ]);
    const line = (await db.selectFrom('invoice_items').selectAll().where('id', '=', 2).executeTakeFirstOrThrow()) as Parameters<typeof staleReason>[0];
    const order = (await db.selectFrom('orders').selectAll().where('id', '=', 2).executeTakeFirstOrThrow()) as Parameters<typeof staleReason>[1];
    expect(staleReason(line, order, new Date(NOW))).toContain('changed');
  });
});
