// The low-balance alert (issue 24 item 6): a client-chosen amount; each time a debit takes the balance from at or
// above it to below it, one `wallet.low_balance` webhook delivery and one `wallet_low_balance` mail, written in the
// debit's transaction — also when ten debits race past it. Debits that stay below, or above, send nothing; the
// balance must rise to the amount again before it can cross again. Refusals of bad amounts; null turns it off. Runs on
// SQLite, and on PostgreSQL + Redis when TEST_* are set.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectInvalid } from '../../helpers/assertions.ts';
import { expectLedgerConsistent } from '../../helpers/credit-ledger.ts';
import { asClient } from '../../helpers/selling-fixtures.ts';

describe('the low-balance alert', () => {
  let t: TestApp;
  let webhookId: number;
  beforeAll(async () => {
    t = await createTestApp({ WEBHOOK_ALLOW_PRIVATE: 'true' });
    const created = await t.admin('webhook/create', { url: 'http://127.0.0.1:9/hook', events: ['wallet.low_balance'] });
    expect(created.body.error).toBeNull();
    webhookId = created.result.id as number;
  });
  afterEach(async () => {
    await expectLedgerConsistent(t.services.db);
  });
  afterAll(async () => {
    await t.close();
  });

  const fund = async (clientId: number, amount: string) =>
    expect((await t.admin('client/balance_add_funds', { id: clientId, amount, description: 'Funds' })).body.error).toBeNull();
  /** The webhook deliveries' data for this client, oldest first. */
  async function alerts(clientId: number) {
    const rows = await t.services.db.selectFrom('webhook_deliveries').select(['event_type', 'body']).where('webhook_id', '=', webhookId).orderBy('id').execute();
    return rows.map((row) => ({ type: row.event_type, ...(JSON.parse(row.body) as { data: Record<string, unknown> }) })).filter((row) => row.data.client_id === clientId);
  }
  const mails = async (clientId: number) =>
    ((await t.admin('email/email_get_list', { client_id: clientId })).result.list as Array<{ template: string; subject: string }>).filter((mail) => mail.template === 'wallet_low_balance');

  it('refuses bad amounts and turns off with null', async () => {
    const client = await t.createClient();
    const set = (amount: unknown) => asClient(t, client.token, 'credit/low_balance_set', { amount });
    expect((await asClient(t, client.token, 'credit/low_balance_get')).result).toEqual({ amount: null, currency: 'USD' });
    expectInvalid(await set('0'), 'amount');
    expectInvalid(await set('-2'), 'amount');
    expectInvalid(await set('2.005'), 'amount');
    expect((await set('2.5')).result).toEqual({ amount: '2.50', currency: 'USD' });
    expect((await asClient(t, client.token, 'credit/low_balance_get')).result).toEqual({ amount: '2.50', currency: 'USD' });
    const off = await set(null);
    expect(off.body).toEqual({ result: { amount: null, currency: 'USD' }, error: null });
    await fund(client.id, '5');
    await fund(client.id, '-4');
    expect(await alerts(client.id)).toEqual([]);
  });

  it('alerts once per crossing, by webhook and mail', async () => {
    const client = await t.createClient();
    expect((await asClient(t, client.token, 'credit/low_balance_set', { amount: '5' })).body.error).toBeNull();
    await fund(client.id, '10');
    await fund(client.id, '-4'); // 6.00: still above
    expect(await alerts(client.id)).toEqual([]);
    // Ten debits race past the amount: one alert.
    await Promise.all(Array.from({ length: 10 }, () => t.admin('client/balance_add_funds', { id: client.id, amount: '-0.50', description: 'Usage' })));
    expect((await asClient(t, client.token, 'client/balance_get_total')).result).toBe('1.00');
    expect(await alerts(client.id)).toEqual([{ type: 'wallet.low_balance', timestamp: expect.any(String), data: { client_id: client.id, currency: 'USD', balance: expect.any(Number), threshold: 500 } }]);
    expect((await alerts(client.id))[0]!.data.balance).toBeLessThan(500);
    const [mail] = await mails(client.id);
    expect(mail?.subject).toBe('Your balance is below 5.00 USD');
    expect(await mails(client.id)).toHaveLength(1);
    // Still below: nothing more. Back above and down again: a second crossing.
    await fund(client.id, '-0.5');
    expect(await alerts(client.id)).toHaveLength(1);
    await fund(client.id, '10'); // 10.50
    await fund(client.id, '-6'); // 4.50
    expect((await alerts(client.id)).map((alert) => alert.data.balance)).toEqual([expect.any(Number), 450]);
    expect(await mails(client.id)).toHaveLength(2);
    // An expiring grant lapsing below the amount is a crossing too.
    await fund(client.id, '-4.5');
    await t.admin('client/balance_add_funds', { id: client.id, amount: '8', description: 'Promo', type: 'grant', expires_at: new Date(Date.now() + 60_000).toISOString() });
    expect(await alerts(client.id)).toHaveLength(2);
    await t.services.credits.expireDue(new Date(Date.now() + 120_000));
    expect((await alerts(client.id)).map((alert) => alert.data.balance)).toEqual([expect.any(Number), 450, 0]);
  });
});
