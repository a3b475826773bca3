// Invoices and payments: mark_as_paid exactly once (also under concurrency), execute=false, cancel and refund, the
// guest view by hash, gateways, client isolation, renewal invoices, and a payment that crashes half-way.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { customType } from '../../../src/modules/product/custom-type.ts';
import type { ProductType } from '../../../src/modules/product/product-type.ts';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { asClient, asStaff, expectError, makeProduct, staffWith } from '../../helpers/selling-fixtures.ts';

let failActivation = false;
// A product type whose provisioning fails while `failActivation` is set: a payment must then leave nothing behind.
const flakyType: ProductType = {
  ...customType,
  code: 'flaky',
  activate: async (trx, order) => {
    if (failActivation) throw new Error('provisioning failed');
    await customType.activate(trx, order);
  },
};

describe('invoices and payments', () => {
  let t: TestApp;
  let monthly: number;
  let activations = 0;
  beforeAll(async () => {
    t = await createTestApp();
    t.services.productTypes.register(flakyType);
    t.services.events.on('order.activated', () => {
      activations += 1;
    });
    monthly = await makeProduct(t);
  });
  afterAll(async () => {
    await t.close();
  });

  async function buy(token: string, productId = monthly): Promise<{ order_id: number; invoice_id: number; invoice_hash: string }> {
    expect((await asClient(t, token, 'cart/add_item', { id: productId, period: '1M' })).body.error).toBeNull();
    const checkout = await asClient(t, token, 'cart/checkout');
    expect(checkout.body.error).toBeNull();
    return checkout.result;
  }

  async function transactions(invoiceId: number) {
    return t.services.db.selectFrom('transactions').selectAll().where('invoice_id', '=', invoiceId).orderBy('id').execute();
  }

  it('pays once: records the transaction, activates the order, and answers 409 the second time', async () => {
    const client = await t.createClient();
    const { order_id, invoice_id } = await buy(client.token);
    const invoice = (await t.admin('invoice/get', { id: invoice_id })).result;
    expect(invoice).toMatchObject({ status: 'unpaid', client_id: client.id, currency: 'USD', subtotal: '10.00', total: '10.00', paid_at: null });
    expect(Object.keys(invoice).toSorted()).toEqual(
      ['id', 'hash', 'number', 'client_id', 'status', 'currency', 'currency_rate', 'currency_rate_at', 'currency_base', 'seller', 'buyer', 'subtotal', 'discount', 'promocode', 'tax_name', 'tax_rate', 'tax', 'total', 'tax_inclusive', 'tax_rule', 'tax_note', 'tax_evidence', 'credit_applied', 'amount_due', 'due_at', 'paid_at', 'created_at', 'items', 'credited', 'credit_notes'].toSorted(),
    );
    expect((await t.admin('invoice/mark_as_paid', { id: invoice_id, transaction_id: 'TX-1', gateway_id: 1 })).result).toBe(true);
    const paid = (await t.admin('invoice/get', { id: invoice_id })).result;
    expect(paid.status).toBe('paid');
    expect(paid.paid_at).toEqual(expect.any(String));
    expect((await t.admin('order/get', { id: order_id })).result.status).toBe('active');
    expect(await transactions(invoice_id)).toMatchObject([{ transaction_id: 'TX-1', gateway_id: 1, gateway: 'custom', client_id: client.id, amount: 1000, type: 'payment', status: 'processed' }]);

    expectError(await t.admin('invoice/mark_as_paid', { id: invoice_id }), 409);
    expect(await transactions(invoice_id)).toHaveLength(1);
    expectError(await t.admin('invoice/mark_as_paid', { id: 999_999 }), 404);
    expectError(await t.admin('invoice/mark_as_paid', {}), 422);
    expectError(await t.admin('invoice/mark_as_paid', { id: invoice_id, gateway_id: 42 }), 422);
  });

  it('lets exactly one of two concurrent payments win; the order is activated once', async () => {
    const client = await t.createClient();
    const { order_id, invoice_id } = await buy(client.token);
    const before = activations;
    const replies = await Promise.all([
      t.admin('invoice/mark_as_paid', { id: invoice_id, transaction_id: 'A' }),
      t.admin('invoice/mark_as_paid', { id: invoice_id, transaction_id: 'B' }),
    ]);
    expect(replies.map((reply) => reply.status).toSorted((a, b) => a - b)).toEqual([200, 409]);
    expect(activations - before).toBe(1);
    expect(await transactions(invoice_id)).toHaveLength(1);
    const history = (await t.admin('order/history', { id: order_id })).result as Array<{ to_status: string }>;
    expect(history.filter((row) => row.to_status === 'active')).toHaveLength(1);
  });

  it('records a payment without executing when execute is false', async () => {
    const client = await t.createClient();
    const { order_id, invoice_id } = await buy(client.token);
    expect((await t.admin('invoice/mark_as_paid', { id: invoice_id, execute: false })).result).toBe(true);
    expect((await t.admin('invoice/get', { id: invoice_id })).result.status).toBe('paid');
    expect((await t.admin('order/get', { id: order_id })).result.status).toBe('pending_setup');
    expect((await t.admin('invoice/mark_as_paid', { id: invoice_id, execute: '0' })).status).toBe(409);
  });

  it('cancels unpaid invoices and refunds paid ones, 409 otherwise', async () => {
    const client = await t.createClient();
    const first = await buy(client.token);
    expect((await t.admin('invoice/cancel', { id: first.invoice_id })).result).toBe(true);
    expect((await t.admin('invoice/get', { id: first.invoice_id })).result.status).toBe('canceled');
    expectError(await t.admin('invoice/cancel', { id: first.invoice_id }), 409);
    expectError(await t.admin('invoice/mark_as_paid', { id: first.invoice_id }), 409);
    expectError(await t.admin('invoice/refund', { id: first.invoice_id }), 409);

    const second = await buy(client.token);
    expectError(await t.admin('invoice/refund', { id: second.invoice_id }), 409);
    await t.admin('invoice/mark_as_paid', { id: second.invoice_id });
    expectError(await t.admin('invoice/cancel', { id: second.invoice_id }), 409);
    expect((await t.admin('invoice/refund', { id: second.invoice_id })).result).toBe(true);
    expect((await t.admin('invoice/get', { id: second.invoice_id })).result.status).toBe('refunded');
    expect((await transactions(second.invoice_id)).map((row) => [row.type, row.amount])).toEqual([
      ['payment', 1000],
      ['refund', 1000],
    ]);
    // Refunding suspends nothing by itself.
    expect((await t.admin('order/get', { id: second.order_id })).result.status).toBe('active');
    expectError(await t.admin('invoice/refund', { id: second.invoice_id }), 409);
  });

  it('shows an invoice to guests by its hash only', async () => {
    const client = await t.createClient();
    const { invoice_id, invoice_hash } = await buy(client.token);
    expect((await t.call('/api/guest/invoice/get', { hash: invoice_hash }, { method: 'GET' })).result.id).toBe(invoice_id);
    expectError(await t.call('/api/guest/invoice/get', { hash: 'x'.repeat(32) }), 404);
    expectError(await t.call('/api/guest/invoice/get', { hash: invoice_hash.toLowerCase() === invoice_hash ? invoice_hash.toUpperCase() : invoice_hash.toLowerCase() }), 404);
    expectError(await t.call('/api/guest/invoice/get', {}), 422);
    expectError(await t.call('/api/guest/invoice/get', { hash: 'x'.repeat(65) }), 422);
    const other = await buy((await t.createClient()).token);
    expect(other.invoice_hash).not.toBe(invoice_hash);
  });

  it('lists the payment gateways', async () => {
    const gateways = await t.call('/api/guest/invoice/gateways', {}, { method: 'GET' });
    expect(gateways.result).toEqual([{ id: 1, code: 'custom', title: 'Manual payment', instructions: t.services.config.paymentInstructions }]);
  });

  it('keeps clients to their own invoices and renewals', async () => {
    const alice = await t.createClient();
    const bob = await t.createClient();
    const mine = await buy(alice.token);
    const theirs = await buy(bob.token);
    expect((await asClient(t, alice.token, 'invoice/get', { id: mine.invoice_id })).result.id).toBe(mine.invoice_id);
    expectError(await asClient(t, alice.token, 'invoice/get', { id: theirs.invoice_id }), 404);
    const list = (await asClient(t, alice.token, 'invoice/get_list')).result;
    expect(list.list.map((invoice: { id: number }) => invoice.id)).toEqual([mine.invoice_id]);
    expectError(await asClient(t, alice.token, 'invoice/mark_as_paid', { id: mine.invoice_id }), 740, 404);
    expectError(await asClient(t, alice.token, 'invoice/renewal_invoice', { order_id: theirs.order_id }), 404);
    // Another client's cart cannot be checked out either: checkout only ever reads the caller's cart.
    expectError(await asClient(t, alice.token, 'cart/checkout'), 409);
  });

  it('issues one renewal invoice per order on request, only for active or suspended recurrent orders', async () => {
    const client = await t.createClient();
    const { order_id, invoice_id } = await buy(client.token);
    expectError(await asClient(t, client.token, 'invoice/renewal_invoice', { order_id }), 409);
    await t.admin('invoice/mark_as_paid', { id: invoice_id });
    const expiry = (await t.admin('order/get', { id: order_id })).result.expires_at;
    const renewal = (await asClient(t, client.token, 'invoice/renewal_invoice', { order_id })).result;
    expect((await asClient(t, client.token, 'invoice/renewal_invoice', { order_id })).result).toBe(renewal);
    const invoice = (await asClient(t, client.token, 'invoice/get', { id: renewal })).result;
    expect(invoice).toMatchObject({ status: 'unpaid', total: '10.00', due_at: expiry });
    expect(invoice.items).toMatchObject([{ order_id, task: 'renew', quantity: 1, price: '10.00', total: '10.00' }]);
    expectError(await asClient(t, client.token, 'invoice/renewal_invoice', { order_id: 999_999 }), 404);
    expectError(await asClient(t, client.token, 'invoice/renewal_invoice', {}), 422);

    const once = await makeProduct(t, { pricing: { type: 'once', once: { price: 5 } }, setup: 'after_order' });
    await asClient(t, client.token, 'cart/add_item', { id: once });
    const oneOff = (await asClient(t, client.token, 'cart/checkout')).result;
    expectError(await asClient(t, client.token, 'invoice/renewal_invoice', { order_id: oneOff.order_id }), 409);
  });

  it('leaves the invoice unpaid and writes nothing when a payment crashes half-way', async () => {
    const product = await makeProduct(t, { type: 'flaky' });
    const client = await t.createClient();
    const { order_id, invoice_id } = await buy(client.token, product);
    failActivation = true;
    try {
      expectError(await t.admin('invoice/mark_as_paid', { id: invoice_id }), 500);
    } finally {
      failActivation = false;
    }
    expect((await t.admin('invoice/get', { id: invoice_id })).result).toMatchObject({ status: 'unpaid', paid_at: null });
    expect(await transactions(invoice_id)).toEqual([]);
    expect((await t.admin('order/get', { id: order_id })).result.status).toBe('pending_setup');
    expect((await t.admin('invoice/mark_as_paid', { id: invoice_id })).result).toBe(true);
    expect((await t.admin('order/get', { id: order_id })).result.status).toBe('active');
  });

  it('checks invoice permissions', async () => {
    const client = await t.createClient();
    const { invoice_id } = await buy(client.token);
    const viewer = await staffWith(t, ['invoice.view']);
    expect((await asStaff(t, viewer, 'invoice/get', { id: invoice_id })).status).toBe(200);
    expect((await asStaff(t, viewer, 'invoice/get_list', { status: 'unpaid', client_id: client.id })).result.total).toBe(1);
    expectError(await asStaff(t, viewer, 'invoice/mark_as_paid', { id: invoice_id }), 403);
    expectError(await asStaff(t, viewer, 'cron/run'), 403);
    expectError(await t.call('/api/admin/invoice/get', { id: invoice_id }, { basic: ['client', client.token] }), 203, 401);
  });
});
