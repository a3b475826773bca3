// Amounts on an instance whose currency has no minor unit (JPY, issue 24 "Bad input and safety"): every action of
// credits, packs, auto-recharge, the low-balance alert, refunds and credit notes refuses a negative or zero amount
// where one is meaningless and any decimal at all ("100.5" yen) with a 422 naming the field, and writes nothing; whole
// yen are taken as they are. On SQLite, and on PostgreSQL + Redis when TEST_* are set.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectInvalid } from '../../helpers/assertions.ts';
import { expectLedgerConsistent } from '../../helpers/credit-ledger.ts';
import { asClient, makeProduct } from '../../helpers/selling-fixtures.ts';

describe('amounts in a currency without decimals (JPY)', () => {
  let t: TestApp;
  let client: { id: number; token: string };
  beforeAll(async () => {
    t = await createTestApp({ CURRENCY: 'JPY' });
    client = await t.createClient();
  });
  afterAll(async () => {
    await t.close();
  });

  const total = async () => (await asClient(t, client.token, 'client/balance_get_total')).result as string;
  const entries = async () => (await t.services.db.selectFrom('credit_entries').select('id').where('client_id', '=', client.id).execute()).length;

  it('takes whole yen and shows them without decimals', async () => {
    expect((await t.admin('client/balance_add_funds', { id: client.id, amount: '1500', description: 'Funds' })).result).toBe(true);
    expect(await total()).toBe('1500');
    const hash = (await asClient(t, client.token, 'invoice/funds_invoice', { amount: '1000' })).result as string;
    expect((await t.call('/api/guest/invoice/get', { hash })).result).toMatchObject({ total: '1000', currency: 'JPY' });
  });

  it('refuses decimals, zero and negative amounts with 422 naming the field, writing nothing', async () => {
    const before = await entries();
    const invoicesBefore = (await asClient(t, client.token, 'invoice/get_list', {})).result.total as number;
    for (const amount of ['100.5', '0.1', '0', '-100', '1e3']) {
      expectInvalid(await asClient(t, client.token, 'invoice/funds_invoice', { amount }), 'amount');
    }
    for (const amount of ['100.5', '0', '0.0']) {
      expectInvalid(await t.admin('client/balance_add_funds', { id: client.id, amount, description: 'Bad' }), 'amount');
    }
    for (const amount of ['1000.5', '0', '-1000']) expectInvalid(await t.admin('credit/pack_create', { title: 'Pack', amount }), 'amount');
    expectInvalid(await t.admin('credit/pack_create', { title: 'Pack', amount: '1000', bonus: '10.5' }), 'bonus');
    expectInvalid(await asClient(t, client.token, 'credit/low_balance_set', { amount: '99.5' }), 'amount');
    expectInvalid(await asClient(t, client.token, 'credit/low_balance_set', { amount: '-1' }), 'amount');
    expectInvalid(await asClient(t, client.token, 'credit/auto_recharge_set', { enabled: false, threshold: '200.5' }), 'threshold');
    expectInvalid(await asClient(t, client.token, 'credit/auto_recharge_set', { enabled: false, amount: '1000.5' }), 'amount');
    expectInvalid(await asClient(t, client.token, 'credit/auto_recharge_set', { enabled: false, amount: '0' }), 'amount');
    expect(await entries()).toBe(before);
    expect(await total()).toBe('1500');
    expect((await asClient(t, client.token, 'invoice/get_list', {})).result.total).toBe(invoicesBefore);
    expect((await t.admin('credit/pack_get_list')).result.list).toEqual([]);
  });

  it('refunds and credit notes of a paid invoice refuse decimals, zero and negative amounts; whole yen go through', async () => {
    const hash = (await asClient(t, client.token, 'invoice/funds_invoice', { amount: '3000' })).result as string;
    const topUp = (await t.call('/api/guest/invoice/get', { hash })).result as { id: number };
    expect((await t.admin('invoice/mark_as_paid', { id: topUp.id })).result).toBe(true);
    expect(await total()).toBe('4500');
    for (const amount of ['100.5', '0', '-100']) expectInvalid(await t.admin('invoice/refund', { id: topUp.id, amount }), 'amount');
    expect(await total()).toBe('4500');
    expect((await t.admin('invoice/refund', { id: topUp.id, amount: '500', reason: 'Part' })).result).toBe(true);
    expect((await t.admin('invoice/credit_note_get_list', { invoice_id: topUp.id })).result.list).toEqual([expect.objectContaining({ total: '500' })]);
    expect(await total()).toBe('4000');

    // A plan's paid invoice credited to the balance.
    const plan = await makeProduct(t, { title: 'Plan', pricing: { type: 'recurrent', recurrent: { '1M': { price: '3000', setup: '0', enabled: true } } } });
    expect((await asClient(t, client.token, 'cart/add_item', { id: plan, period: '1M' })).body.error).toBeNull();
    const invoiceId = (await asClient(t, client.token, 'cart/checkout')).result.invoice_id as number;
    expect((await t.admin('invoice/mark_as_paid', { id: invoiceId })).result).toBe(true);
    for (const amount of ['100.5', '0', '-100']) {
      expectInvalid(await t.admin('invoice/credit_note_create', { invoice_id: invoiceId, reason: 'Bad', amount }), 'amount');
    }
    expect((await t.admin('invoice/credit_note_get_list', { invoice_id: invoiceId })).result.list).toEqual([]);
    expect(await total()).toBe('4000');
    expect((await t.admin('invoice/credit_note_create', { invoice_id: invoiceId, reason: 'Goodwill', amount: '1000' })).body.error).toBeNull();
    expect(await total()).toBe('5000');
    await expectLedgerConsistent(t.services.db);
  });
});
