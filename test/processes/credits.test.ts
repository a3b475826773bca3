// Spending one balance from two processes (issue 24): this test's app and a second Tollgate process (test/helpers/
// peer.ts) share one PostgreSQL database; staff in both pay five invoices from a balance that covers two, and confirm
// one top-up invoice, many times at once over several connections each. The account lock keeps the balance from
// being overdrawn and the top-up from being credited twice. Runs only where TEST_DATABASE_URL is set.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { expectLedgerConsistent } from '../helpers/credit-ledger.ts';
import { startPeer, type Peer } from '../helpers/peer.ts';
import { asClient, makeProduct } from '../helpers/selling-fixtures.ts';

const PG = process.env.TEST_DATABASE_URL ?? '';

describe.skipIf(PG === '')('a balance spent from two processes on PostgreSQL', () => {
  let t: TestApp;
  let peer: Peer;
  let monthly: number;
  beforeAll(async () => {
    t = await createTestApp({ REDIS_URL: '' });
    peer = await startPeer(t, false);
    monthly = await makeProduct(t);
  }, 120_000);
  afterAll(async () => {
    await peer?.stop();
    await t?.close();
  });

  it('pays only what the balance covers, whichever process asks', async () => {
    const client = await t.createClient();
    const invoices: number[] = [];
    for (let i = 0; i < 5; i += 1) {
      await asClient(t, client.token, 'cart/add_item', { id: monthly, period: '1M' });
      invoices.push((await asClient(t, client.token, 'cart/checkout')).result.invoice_id as number);
    }
    expect((await t.admin('client/balance_add_funds', { id: client.id, amount: '25', description: 'Funds' })).result).toBe(true);
    const attempts = invoices.flatMap((id) => [
      t.admin('invoice/pay_with_credits', { id }).then((reply) => reply.status),
      t.admin('invoice/pay_with_credits', { id }).then((reply) => reply.status),
      peer.call('admin/invoice/pay_with_credits', { id }, t.adminToken).then((reply) => reply.status),
      peer.call('admin/invoice/pay_with_credits', { id }, t.adminToken).then((reply) => reply.status),
    ]);
    const statuses = await Promise.all(attempts);
    expect(statuses.filter((status) => status === 200)).toHaveLength(2);
    expect(statuses.filter((status) => status !== 200).every((status) => status === 409)).toBe(true);
    expect((await asClient(t, client.token, 'client/balance_get_total')).result).toBe('5.00');
    await expectLedgerConsistent(t.services.db);
  });

  it('credits a top-up once under 20 confirmations from both processes', async () => {
    const client = await t.createClient();
    const hash = (await asClient(t, client.token, 'invoice/funds_invoice', { amount: '30' })).result as string;
    const invoice = (await t.call('/api/guest/invoice/get', { hash })).result as { id: number };
    const statuses = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        i % 2 === 0 ? t.admin('invoice/mark_as_paid', { id: invoice.id }).then((reply) => reply.status) : peer.call('admin/invoice/mark_as_paid', { id: invoice.id }, t.adminToken).then((reply) => reply.status),
      ),
    );
    expect(statuses.filter((status) => status === 200)).toHaveLength(1);
    expect((await asClient(t, client.token, 'client/balance_get_total')).result).toBe('30.00');
    const entries = await t.services.db.selectFrom('credit_entries').select('kind').where('client_id', '=', client.id).execute();
    expect(entries).toEqual([{ kind: 'top_up' }]);
    await expectLedgerConsistent(t.services.db);
  });
});
