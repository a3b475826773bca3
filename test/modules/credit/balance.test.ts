// The client balance actions (issue 24, FOSSBilling's Client module names): staff add funds, list and remove lines
// (a compensating adjust), clients read their own lines and total; grants burn first and expire; every failure path.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectInvalid } from '../../helpers/assertions.ts';
import { expectLedgerConsistent } from '../../helpers/credit-ledger.ts';
import { asClient, asStaff, expectError, staffWith } from '../../helpers/selling-fixtures.ts';

describe('client balance', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterEach(async () => {
    await expectLedgerConsistent(t.services.db);
  });
  afterAll(async () => {
    await t.close();
  });

  const addFunds = (params: Record<string, unknown>) => t.admin('client/balance_add_funds', params);
  const total = async (token: string) => (await asClient(t, token, 'client/balance_get_total')).result as string;

  it('adds funds as an adjust line with the description, and the client reads its lines and total', async () => {
    const client = await t.createClient();
    expect((await addFunds({ id: client.id, amount: '12.50', description: 'Goodwill' })).result).toBe(true);
    expect((await addFunds({ id: client.id, amount: 2, description: 'More' })).result).toBe(true);
    expect(await total(client.token)).toBe('14.50');
    const list = await asClient(t, client.token, 'client/balance_get_list');
    expect(list.result.total).toBe(2);
    expect(list.result.list[0]).toMatchObject({ type: 'adjust', description: 'More', amount: '2.00', currency: 'USD', client_id: client.id, expires_at: null, reverses_id: null });
    expect(list.result.list[1]).toMatchObject({ description: 'Goodwill', amount: '12.50' });
    expect(list.result.list[0].staff_id).toEqual(expect.any(Number));
    // A negative amount takes funds away, never below zero.
    expect((await addFunds({ id: client.id, amount: '-4.50', description: 'Correction' })).result).toBe(true);
    expect(await total(client.token)).toBe('10.00');
    expectError(await addFunds({ id: client.id, amount: '-10.01', description: 'Too much' }), 409);
    expect(await total(client.token)).toBe('10.00');
  });

  it('refuses missing, wrong-typed and out-of-range parameters with 422 naming them', async () => {
    const client = await t.createClient();
    expectInvalid(await addFunds({ amount: '1', description: 'x' }), 'id');
    expectInvalid(await addFunds({ id: client.id, description: 'x' }), 'amount');
    expectInvalid(await addFunds({ id: client.id, amount: '1' }), 'description');
    expectInvalid(await addFunds({ id: 'abc', amount: '1', description: 'x' }), 'id');
    expectInvalid(await addFunds({ id: client.id, amount: 'ten', description: 'x' }), 'amount');
    expectInvalid(await addFunds({ id: client.id, amount: { value: 1 }, description: 'x' }), 'amount');
    expectInvalid(await addFunds({ id: client.id, amount: '0', description: 'x' }), 'amount');
    expectInvalid(await addFunds({ id: client.id, amount: '-0', description: 'x' }), 'amount');
    expectInvalid(await addFunds({ id: client.id, amount: '1.001', description: 'x' }), 'amount');
    expectInvalid(await addFunds({ id: client.id, amount: '1', description: '' }), 'description');
    expectInvalid(await addFunds({ id: client.id, amount: '1', description: 'x', type: 'gift' }), 'type');
    expectInvalid(await addFunds({ id: client.id, amount: '1', description: 'x', expires_at: '2020-01-01T00:00:00Z' }), 'expires_at');
    expectInvalid(await addFunds({ id: client.id, amount: '1', description: 'x', expires_at: 'soon' }), 'expires_at');
    expectInvalid(await addFunds({ id: client.id, amount: '1', description: 'x', type: 'adjust', expires_at: '2099-01-01T00:00:00Z' }), 'expires_at');
    expectInvalid(await addFunds({ id: client.id, amount: '-1', description: 'x', type: 'grant' }), 'amount');
    expectError(await addFunds({ id: 99_999_999, amount: '1', description: 'x' }), 404);
    expect(await total(client.token)).toBe('0.00');
    expectInvalid(await t.admin('client/balance_get_list', { client_id: 'x' }), 'client_id');
    expectInvalid(await t.admin('client/balance_get_list', { date_from: 'yesterday' }), 'date_from');
    expectInvalid(await asClient(t, client.token, 'client/balance_get_list', { per_page: 0 }), 'per_page');
  });

  it('writes once per idempotency key, also under 20 concurrent calls', async () => {
    const client = await t.createClient();
    const calls = Array.from({ length: 20 }, () => addFunds({ id: client.id, amount: '3.00', description: 'Once', idempotency_key: 'promo-42' }));
    const replies = await Promise.all(calls);
    expect(replies.filter((reply) => reply.status !== 200)).toEqual([]);
    expect(await total(client.token)).toBe('3.00');
    // Another client's key space is its own.
    const other = await t.createClient();
    expect((await addFunds({ id: other.id, amount: '1', description: 'x', idempotency_key: 'promo-42' })).result).toBe(true);
    expect(await total(other.token)).toBe('1.00');
  });

  it('lets only staff with client.manage_balance, and never a client, touch a balance', async () => {
    const client = await t.createClient();
    const viewer = await staffWith(t, ['client.view']);
    expectError(await asStaff(t, viewer, 'client/balance_add_funds', { id: client.id, amount: '1', description: 'x' }), 403);
    expectError(await asStaff(t, viewer, 'client/balance_get_list', {}), 403);
    expectError(await asStaff(t, viewer, 'client/balance_delete', { id: 1 }), 403);
    const cashier = await staffWith(t, ['client.manage_balance']);
    expect((await asStaff(t, cashier, 'client/balance_add_funds', { id: client.id, amount: '1', description: 'x' })).result).toBe(true);
    expectError(await t.call('/api/admin/client/balance_add_funds', { id: client.id, amount: '1', description: 'x' }, { basic: ['client', client.token] }), 203, 401);
    expectError(await t.call('/api/client/client/balance_get_total', {}), 201, 401);
    expectError(await t.call('/api/guest/client/balance_get_total', {}), 740, 404);
    expect(await total(client.token)).toBe('1.00');
  });

  it("shows a client only its own lines; staff filter by client", async () => {
    const a = await t.createClient();
    const b = await t.createClient();
    await addFunds({ id: a.id, amount: '1', description: 'a' });
    await addFunds({ id: b.id, amount: '2', description: 'b' });
    const mine = await asClient(t, a.token, 'client/balance_get_list');
    expect(mine.result.list.map((line: { client_id: number }) => line.client_id)).toEqual([a.id]);
    // A client cannot widen its list to another client's lines.
    const widened = await asClient(t, a.token, 'client/balance_get_list', { client_id: b.id });
    expect(widened.result.list.map((line: { client_id: number }) => line.client_id)).toEqual([a.id]);
    const staffView = await t.admin('client/balance_get_list', { client_id: b.id });
    expect(staffView.result.list.map((line: { amount: string }) => line.amount)).toEqual(['2.00']);
    const byDate = await t.admin('client/balance_get_list', { client_id: b.id, date_from: '2000-01-01', date_to: '2000-01-02' });
    expect(byDate.result.total).toBe(0);
  });

  it('removes a line by writing a compensating adjust, once', async () => {
    const client = await t.createClient();
    await addFunds({ id: client.id, amount: '5', description: 'Mistake' });
    await addFunds({ id: client.id, amount: '7', description: 'Right' });
    const [right, mistake] = (await t.admin('client/balance_get_list', { client_id: client.id })).result.list;
    expect((await t.admin('client/balance_delete', { id: mistake.id })).result).toBe(true);
    expect(await total(client.token)).toBe('7.00');
    const lines = (await t.admin('client/balance_get_list', { client_id: client.id })).result.list;
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatchObject({ type: 'adjust', amount: '-5.00', reverses_id: mistake.id, reversed_by: null });
    expect(lines[2]).toMatchObject({ id: mistake.id, reversed_by: lines[0].id });
    expect((await t.admin('client/balance_get_total', { id: client.id })).result).toBe('7.00');
    expectError(await t.admin('client/balance_get_total', { id: 99_999_999 }), 404);
    expectInvalid(await t.admin('client/balance_get_total', {}), 'id');
    // Twice, a reversal itself, an unknown line, a wrong-typed id.
    expectError(await t.admin('client/balance_delete', { id: mistake.id }), 409);
    expectError(await t.admin('client/balance_delete', { id: lines[0].id }), 409);
    expectError(await t.admin('client/balance_delete', { id: 99_999_999 }), 404);
    expectInvalid(await t.admin('client/balance_delete', {}), 'id');
    expectInvalid(await t.admin('client/balance_delete', { id: 'one' }), 'id');
    // Removing a debit gives the amount back.
    await addFunds({ id: client.id, amount: '-2', description: 'Fee' });
    const fee = (await t.admin('client/balance_get_list', { client_id: client.id })).result.list[0];
    expect((await t.admin('client/balance_delete', { id: fee.id })).result).toBe(true);
    expect(await total(client.token)).toBe('7.00');
    // A credit already spent cannot be taken back past the balance.
    await addFunds({ id: client.id, amount: '-6', description: 'Spent' });
    expectError(await t.admin('client/balance_delete', { id: right.id }), 409);
    expect(await total(client.token)).toBe('1.00');
  });

  it('keeps a client with balance lines from being deleted', async () => {
    const client = await t.createClient();
    await addFunds({ id: client.id, amount: '1', description: 'x' });
    expectError(await t.admin('client/delete', { id: client.id }), 409);
    expect(await total(client.token)).toBe('1.00');
    const fresh = await t.createClient();
    expect((await t.admin('client/delete', { id: fresh.id })).result).toBe(true);
  });

  it('removing the same line 10 times at once writes one adjust', async () => {
    const client = await t.createClient();
    await addFunds({ id: client.id, amount: '5', description: 'Once' });
    const [line] = (await t.admin('client/balance_get_list', { client_id: client.id })).result.list;
    const replies = await Promise.all(Array.from({ length: 10 }, () => t.admin('client/balance_delete', { id: line.id })));
    expect(replies.filter((reply) => reply.status === 200)).toHaveLength(1);
    expect(replies.filter((reply) => reply.status !== 200).every((reply) => reply.status === 409)).toBe(true);
    expect(await total(client.token)).toBe('0.00');
  });

  it('spends soonest-expiring credit first and promotional before paid; expiry takes only what is left', async () => {
    const client = await t.createClient();
    const soon = new Date(Date.now() + 3_600_000).toISOString();
    const later = new Date(Date.now() + 7_200_000).toISOString();
    await addFunds({ id: client.id, amount: '10', description: 'Paid' });
    await addFunds({ id: client.id, amount: '4', description: 'Promo, later', expires_at: later });
    await addFunds({ id: client.id, amount: '3', description: 'Promo, soon', expires_at: soon });
    await addFunds({ id: client.id, amount: '2', description: 'Promo, never', type: 'grant' });
    // 5.00 taken: the 3.00 expiring soonest, then 2.00 of the one expiring later.
    await addFunds({ id: client.id, amount: '-5', description: 'Usage' });
    expect(await total(client.token)).toBe('14.00');
    // At the later expiry both dated grants have lapsed: only the 2.00 left of "later" expires, "soon" was used up.
    const report = await t.services.cron.run(new Date(Date.now() + 7_300_000));
    expect(report.credits_expired).toBe(1);
    expect(await total(client.token)).toBe('12.00');
    const expired = (await t.admin('client/balance_get_list', { client_id: client.id, type: 'expire' })).result.list;
    expect(expired).toHaveLength(1);
    expect(expired[0].amount).toBe('-2.00');
    // Idempotent: a second pass expires nothing.
    expect((await t.services.cron.run(new Date(Date.now() + 7_400_000))).credits_expired).toBe(0);
    // The undated grant goes before paid credit.
    await addFunds({ id: client.id, amount: '-1', description: 'Usage' });
    const lots = await t.services.db.selectFrom('credit_allocations').innerJoin('credit_entries', 'credit_entries.id', 'credit_allocations.lot_id').select(['credit_entries.note', 'credit_allocations.amount']).where('credit_entries.client_id', '=', client.id).orderBy('credit_allocations.id', 'desc').executeTakeFirstOrThrow();
    expect(lots).toEqual({ note: 'Promo, never', amount: 100 });
  });

  it('does not spend a grant past its expiry before the pass has run', async () => {
    const client = await t.createClient();
    await addFunds({ id: client.id, amount: '3', description: 'Promo', expires_at: new Date(Date.now() + 2_000).toISOString() });
    await new Promise((resolve) => setTimeout(resolve, 2_100));
    expect(await total(client.token)).toBe('3.00');
    expectError(await addFunds({ id: client.id, amount: '-1', description: 'Usage' }), 409);
    expect((await t.services.cron.run(new Date())).credits_expired).toBe(1);
    expect(await total(client.token)).toBe('0.00');
  });
});
