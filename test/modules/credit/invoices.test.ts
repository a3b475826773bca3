// Top-up invoices and paying from the balance (issue 24): funds_invoice and its refusals, a paid top-up credits the
// wallet once (also under 20 concurrent confirmations), pay_with_credits for clients and staff with every failure
// path, concurrent spending never overdraws, credits_pay_invoices pays renewals as they are issued, refunds follow
// the money back.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectInvalid } from '../../helpers/assertions.ts';
import { expectLedgerConsistent } from '../../helpers/credit-ledger.ts';
import { asClient, asStaff, expectError, makeProduct, staffWith } from '../../helpers/selling-fixtures.ts';

describe('top-up invoices and paying from the balance', () => {
  let t: TestApp;
  let monthly: number;
  beforeAll(async () => {
    t = await createTestApp();
    monthly = await makeProduct(t);
  });
  afterEach(async () => {
    await expectLedgerConsistent(t.services.db);
    expect((await t.admin('system/settings_update', { funds_min_amount: '', funds_max_amount: '', credits_pay_invoices: false })).body.error).toBeNull();
  });
  afterAll(async () => {
    await t.close();
  });

  const total = async (token: string) => (await asClient(t, token, 'client/balance_get_total')).result as string;
  const invoiceByHash = async (hash: string) => (await t.call('/api/guest/invoice/get', { hash })).result;
  const fund = async (clientId: number, amount: string) => expect((await t.admin('client/balance_add_funds', { id: clientId, amount, description: 'Funds' })).result).toBe(true);

  async function buy(token: string): Promise<{ order_id: number; invoice_id: number; invoice_hash: string }> {
    expect((await asClient(t, token, 'cart/add_item', { id: monthly, period: '1M' })).body.error).toBeNull();
    const checkout = await asClient(t, token, 'cart/checkout');
    expect(checkout.body.error).toBeNull();
    return checkout.result;
  }

  it('issues an untaxed top-up invoice whose payment credits the wallet once', async () => {
    expect((await t.admin('invoice/tax_create', { name: 'VAT', rate: '20' })).body.error).toBeNull();
    const client = await t.createClient();
    const hash = (await asClient(t, client.token, 'invoice/funds_invoice', { amount: '25.00' })).result as string;
    expect(hash).toMatch(/^[A-Za-z0-9]{32}$/);
    const invoice = await invoiceByHash(hash);
    expect(invoice).toMatchObject({ client_id: client.id, status: 'unpaid', total: '25.00', tax: '0.00', number: null });
    expect(invoice.items).toEqual([expect.objectContaining({ task: 'deposit', order_id: null, total: '25.00' })]);
    // Its PDF renders like any invoice's.
    const pdf = await t.app.inject({ method: 'GET', url: `/api/guest/invoice/pdf?hash=${hash}` });
    expect([pdf.statusCode, pdf.headers['content-type'], pdf.body.startsWith('%PDF')]).toEqual([200, 'application/pdf', true]);
    expect(await total(client.token)).toBe('0.00');
    // 20 concurrent confirmations: one payment, one top_up.
    const replies = await Promise.all(Array.from({ length: 20 }, () => t.admin('invoice/mark_as_paid', { id: invoice.id })));
    expect(replies.filter((reply) => reply.status === 200)).toHaveLength(1);
    expect(replies.filter((reply) => reply.status !== 200).every((reply) => reply.status === 409)).toBe(true);
    expect(await total(client.token)).toBe('25.00');
    const lines = (await asClient(t, client.token, 'client/balance_get_list')).result.list;
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ type: 'top_up', amount: '25.00', invoice_id: invoice.id });
    expect(lines[0].description).toContain((await invoiceByHash(hash)).number);
    // A top-up invoice is never paid from the balance it adds to.
    const second = await invoiceByHash((await asClient(t, client.token, 'invoice/funds_invoice', { amount: 5 })).result);
    expectError(await asClient(t, client.token, 'invoice/pay_with_credits', { id: second.id }), 409);
    expect((await t.admin('invoice/tax_delete', { id: (await t.admin('invoice/tax_get_list')).result.list[0].id })).body.error).toBeNull();
  });

  it('refuses bad top-up amounts with a clear 422 and never writes a debit', async () => {
    const client = await t.createClient();
    await fund(client.id, '3');
    const funds = (amount: unknown) => asClient(t, client.token, 'invoice/funds_invoice', amount === undefined ? {} : { amount });
    expectInvalid(await funds(undefined), 'amount');
    for (const amount of ['0', 0, '0.00', '-5', -5, '-0.01', '1.001', 'ten', '', '1e3', { value: 1 }, [1], true]) {
      expectInvalid(await funds(amount), 'amount');
    }
    expect((await t.admin('system/settings_update', { funds_min_amount: '5', funds_max_amount: '100.50' })).body.error).toBeNull();
    const low = await funds('4.99');
    expectInvalid(low, 'amount');
    expect(low.body.error!.message).toContain('5.00');
    const high = await funds('100.51');
    expectInvalid(high, 'amount');
    expect(high.body.error!.message).toContain('100.50');
    expect((await funds('5')).status).toBe(200);
    expect((await funds('100.50')).status).toBe(200);
    expectInvalid(await t.admin('system/settings_update', { funds_min_amount: 'five' }), 'funds_min_amount');
    expectInvalid(await t.admin('system/settings_update', { funds_max_amount: '-1' }), 'funds_max_amount');
    // Roles: staff and guests have no funds_invoice; no credentials → 401.
    expectError(await t.admin('invoice/funds_invoice', { amount: '5' }), 740, 404);
    expectError(await t.call('/api/guest/invoice/funds_invoice', { amount: '5' }), 740, 404);
    expectError(await t.call('/api/client/invoice/funds_invoice', { amount: '5' }), 201, 401);
    expect(await total(client.token)).toBe('3.00');
    const lines = (await asClient(t, client.token, 'client/balance_get_list')).result.list;
    expect(lines.map((line: { amount: string }) => line.amount)).toEqual(['3.00']);
  });

  it('pays an own unpaid invoice from the balance (by id or hash), activating its order', async () => {
    const client = await t.createClient();
    const bought = await buy(client.token);
    await fund(client.id, '15');
    expect((await asClient(t, client.token, 'invoice/pay_with_credits', { id: bought.invoice_id })).result).toBe(true);
    expect(await total(client.token)).toBe('5.00');
    const invoice = await invoiceByHash(bought.invoice_hash);
    expect(invoice.status).toBe('paid');
    expect(invoice.number).not.toBeNull();
    expect((await asClient(t, client.token, 'order/get', { id: bought.order_id })).result.status).toBe('active');
    const [consume] = (await asClient(t, client.token, 'client/balance_get_list')).result.list;
    expect(consume).toMatchObject({ type: 'consume', amount: '-10.00', invoice_id: bought.invoice_id, description: `Payment of invoice ${invoice.number}` });
    const transactions = (await t.admin('invoice/transaction_get_list', { invoice_id: bought.invoice_id })).result.list;
    expect(transactions).toEqual([expect.objectContaining({ gateway: 'credits', amount: '10.00', status: 'processed', txn_id: `balance-invoice-${bought.invoice_id}` })]);
    // Paid already → 409, nothing more taken.
    expectError(await asClient(t, client.token, 'invoice/pay_with_credits', { hash: bought.invoice_hash }), 409);
    expect(await total(client.token)).toBe('5.00');
    // By hash.
    const next = await buy(client.token);
    await fund(client.id, '5');
    expect((await asClient(t, client.token, 'invoice/pay_with_credits', { hash: next.invoice_hash })).result).toBe(true);
    expect(await total(client.token)).toBe('0.00');
  });

  it('refuses pay_with_credits without enough balance, for another client, a canceled invoice, or bad parameters', async () => {
    const client = await t.createClient();
    const other = await t.createClient();
    const bought = await buy(client.token);
    await fund(client.id, '9.99');
    const short = await asClient(t, client.token, 'invoice/pay_with_credits', { id: bought.invoice_id });
    expectError(short, 409);
    expect(short.body.error!.message).toContain('10.00');
    expect((await invoiceByHash(bought.invoice_hash)).status).toBe('unpaid');
    expect(await total(client.token)).toBe('9.99');
    // Another client's invoice, by id or hash, is not found (and its owner's balance is untouched).
    await fund(other.id, '50');
    expectError(await asClient(t, other.token, 'invoice/pay_with_credits', { id: bought.invoice_id }), 404);
    expectError(await asClient(t, other.token, 'invoice/pay_with_credits', { hash: bought.invoice_hash }), 404);
    expectError(await asClient(t, other.token, 'invoice/pay_with_credits', { id: 99_999_999 }), 404);
    expectError(await asClient(t, other.token, 'invoice/pay_with_credits', { hash: 'nope' }), 404);
    expect(await total(other.token)).toBe('50.00');
    expectInvalid(await asClient(t, client.token, 'invoice/pay_with_credits', {}), 'id');
    expectInvalid(await asClient(t, client.token, 'invoice/pay_with_credits', { id: 'x' }), 'id');
    expectInvalid(await asClient(t, client.token, 'invoice/pay_with_credits', { hash: 5 }), 'hash');
    expectError(await t.call('/api/client/invoice/pay_with_credits', { id: bought.invoice_id }), 201, 401);
    expectError(await t.call('/api/guest/invoice/pay_with_credits', { id: bought.invoice_id }), 740, 404);
    // Canceled → 409.
    await fund(client.id, '1');
    expect((await t.admin('invoice/cancel', { id: bought.invoice_id })).body.error).toBeNull();
    expectError(await asClient(t, client.token, 'invoice/pay_with_credits', { id: bought.invoice_id }), 409);
    expect(await total(client.token)).toBe('10.99');
  });

  it("lets staff with invoice.manage pay a client's invoice from its balance (FOSSBilling's admin/invoice/pay_with_credits)", async () => {
    const client = await t.createClient();
    const bought = await buy(client.token);
    await fund(client.id, '10');
    const viewer = await staffWith(t, ['invoice.view']);
    expectError(await asStaff(t, viewer, 'invoice/pay_with_credits', { id: bought.invoice_id }), 403);
    expectInvalid(await t.admin('invoice/pay_with_credits', {}), 'id');
    expectError(await t.admin('invoice/pay_with_credits', { id: 99_999_999 }), 404);
    expect((await t.admin('invoice/pay_with_credits', { id: bought.invoice_id })).result).toBe(true);
    expect(await total(client.token)).toBe('0.00');
    expectError(await t.admin('invoice/pay_with_credits', { id: bought.invoice_id }), 409);
  });

  it('never overdraws under concurrent payments from one balance', async () => {
    const client = await t.createClient();
    // Five invoices of 10.00 (one cart, so bought one after another); the balance covers two.
    const invoices: number[] = [];
    for (let i = 0; i < 5; i += 1) invoices.push((await buy(client.token)).invoice_id);
    await fund(client.id, '25');
    const attempts = invoices.flatMap((id) => [asClient(t, client.token, 'invoice/pay_with_credits', { id }), t.admin('invoice/pay_with_credits', { id })]);
    const replies = await Promise.all(attempts);
    expect(replies.filter((reply) => reply.status === 200)).toHaveLength(2);
    expect(replies.filter((reply) => reply.status !== 200).every((reply) => reply.status === 409)).toBe(true);
    expect(await total(client.token)).toBe('5.00');
  });

  it('with credits_pay_invoices on, pays a renewal invoice from the balance as it is issued, when it covers it', async () => {
    const client = await t.createClient();
    const bought = await buy(client.token);
    expect((await t.admin('invoice/mark_as_paid', { id: bought.invoice_id })).body.error).toBeNull();
    const before = (await asClient(t, client.token, 'order/get', { id: bought.order_id })).result.expires_at as string;
    // Off: the renewal invoice waits for payment.
    await fund(client.id, '10');
    const waiting = (await asClient(t, client.token, 'invoice/renewal_invoice', { order_id: bought.order_id })).result as number;
    expect((await t.admin('invoice/get', { id: waiting })).result.status).toBe('unpaid');
    expect((await t.admin('invoice/cancel', { id: waiting })).body.error).toBeNull();
    // On, with too little balance: what the balance holds is applied, the rest stays due; canceling gives it back.
    expect((await t.admin('system/settings_update', { credits_pay_invoices: true })).body.error).toBeNull();
    await fund(client.id, '-5');
    const unpaid = (await asClient(t, client.token, 'invoice/renewal_invoice', { order_id: bought.order_id })).result as number;
    expect((await t.admin('invoice/get', { id: unpaid })).result).toMatchObject({ status: 'unpaid', credit_applied: '5.00', amount_due: '5.00' });
    expect(await total(client.token)).toBe('0.00');
    expect((await t.admin('invoice/cancel', { id: unpaid })).body.error).toBeNull();
    expect(await total(client.token)).toBe('5.00');
    // On, covered: paid at once and the order renewed.
    await fund(client.id, '5');
    const renewal = (await asClient(t, client.token, 'invoice/renewal_invoice', { order_id: bought.order_id })).result as number;
    expect((await t.admin('invoice/get', { id: renewal })).result.status).toBe('paid');
    expect(await total(client.token)).toBe('0.00');
    const after = (await asClient(t, client.token, 'order/get', { id: bought.order_id })).result.expires_at as string;
    expect(Date.parse(after)).toBeGreaterThan(Date.parse(before));
    // A first order's invoice is not drawn on: only renewals and overage are.
    await fund(client.id, '10');
    const fresh = await buy(client.token);
    expect((await invoiceByHash(fresh.invoice_hash)).status).toBe('unpaid');
    expect(await total(client.token)).toBe('10.00');
  });

  it('with credits_pay_invoices on, the scheduler pays the renewals the balance covers and applies the rest of it to the next', async () => {
    const client = await t.createClient();
    const orders: number[] = [];
    for (let i = 0; i < 3; i += 1) {
      const bought = await buy(client.token);
      expect((await t.admin('invoice/mark_as_paid', { id: bought.invoice_id })).body.error).toBeNull();
      orders.push(bought.order_id);
    }
    await fund(client.id, '25');
    expect((await t.admin('system/settings_update', { credits_pay_invoices: true })).body.error).toBeNull();
    // 25 days on: each order is within the 7 days before expiry and gets a renewal invoice of 10.00.
    // (Other tests' orders renew too; only this client's invoices are looked at.)
    await t.services.cron.run(new Date(Date.now() + 25 * 86_400_000));
    const renewals = (await t.admin('invoice/get_list', { client_id: client.id, per_page: 10 })).result.list.filter((invoice: { items: Array<{ task: string }> }) => invoice.items[0]!.task === 'renew');
    expect(renewals.map((invoice: { status: string; credit_applied: string }) => `${invoice.status} ${invoice.credit_applied}`).toSorted()).toEqual(['paid 0.00', 'paid 0.00', 'unpaid 5.00']);
    expect(await total(client.token)).toBe('0.00');
  });

  it('gives a refunded invoice paid from the balance back as credit, and takes back a refunded top-up', async () => {
    const client = await t.createClient();
    const bought = await buy(client.token);
    await fund(client.id, '10');
    expect((await asClient(t, client.token, 'invoice/pay_with_credits', { id: bought.invoice_id })).result).toBe(true);
    expect((await t.admin('invoice/refund', { id: bought.invoice_id, amount: '4' })).body.error).toBeNull();
    expect(await total(client.token)).toBe('4.00');
    expect((await t.admin('invoice/refund', { id: bought.invoice_id })).body.error).toBeNull();
    expect(await total(client.token)).toBe('10.00');
    const refunds = (await asClient(t, client.token, 'client/balance_get_list', { type: 'refund' })).result.list;
    expect(refunds.map((line: { amount: string }) => line.amount)).toEqual(['6.00', '4.00']);
    // A refunded top-up takes back what is left of its credit.
    const hash = (await asClient(t, client.token, 'invoice/funds_invoice', { amount: '20' })).result as string;
    const topUp = await invoiceByHash(hash);
    expect((await t.admin('invoice/mark_as_paid', { id: topUp.id })).body.error).toBeNull();
    expect(await total(client.token)).toBe('30.00');
    expect((await t.admin('invoice/refund', { id: topUp.id, amount: '5' })).body.error).toBeNull();
    expect(await total(client.token)).toBe('25.00');
    // Spent meanwhile: only what the balance still holds is taken back, never below zero.
    await fund(client.id, '-22');
    expect((await t.admin('invoice/refund', { id: topUp.id })).body.error).toBeNull();
    expect(await total(client.token)).toBe('0.00');
  });
});
