// Auto-recharge across processes (issue 24): one charge per crossing. (1) This test's app and a second Tollgate process
// share one database and debit one balance past the threshold twenty times at once: one crossing, one charge, one
// `top_up`. (2) A real sender process is SIGKILLed after Stripe charged the card but before the payment reached the
// ledger (the stand-in charges and never answers); two new sender processes take the item over once its lease runs
// out: the same idempotency key is sent again, Stripe answers the first charge, and the wallet is credited once. On a
// SQLite file both processes open and, with TEST_DATABASE_URL, PostgreSQL.
import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { expectLedgerConsistent } from '../helpers/credit-ledger.ts';
import { startPeer, type Peer } from '../helpers/peer.ts';
import { asClient } from '../helpers/selling-fixtures.ts';
import { SenderProcesses } from '../helpers/sender-process.ts';
import { deliver, payByCard, type StripeStand } from '../helpers/stripe-fixtures.ts';
import { StripeStandIn } from '../helpers/stripe-server.ts';

const LEASE_SECONDS = 2;
const file = `/tmp/tollgate-recharge-${process.pid}-${Date.now()}.db`;

let stand: StripeStand;
let t: TestApp;
let peer: Peer;
const senders = new SenderProcesses(LEASE_SECONDS);

async function waitFor(condition: () => Promise<boolean> | boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

beforeAll(async () => {
  const stripe = new StripeStandIn();
  await stripe.start();
  t = await createTestApp(stripe.env({ PUBLIC_URL: 'https://billing.example.com', REDIS_URL: '', ...(process.env.TEST_DATABASE_URL ? {} : { DATABASE_URL: `sqlite:${file}` }) }));
  stand = {
    t,
    stripe,
    async close() {
      await t.close();
      await stripe.stop();
    },
  };
  peer = await startPeer(t, false);
}, 120_000);

afterAll(async () => {
  senders.killAll();
  await peer?.stop();
  await stand?.close();
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true });
});

const total = async (token: string) => (await asClient(t, token, 'client/balance_get_total')).result as string;
const recharges = (clientId: number) => t.services.db.selectFrom('credit_recharges').selectAll().where('client_id', '=', clientId).orderBy('crossing').execute();
const topUpsOf = (invoiceId: number) => t.services.db.selectFrom('credit_entries').selectAll().where('invoice_id', '=', invoiceId).where('kind', '=', 'top_up').execute();
const intentRequests = (invoiceId: number) =>
  stand.stripe.requestsTo('POST', '/v1/payment_intents').filter((request) => (request.body.metadata as { invoice_id: string }).invoice_id === String(invoiceId));
const intentsCharged = (invoiceId: number) => [...stand.stripe.intents.values()].filter((intent) => (intent.metadata as { invoice_id?: string }).invoice_id === String(invoiceId));

/** A client with `amount` in the wallet bought by card (the card saved) and auto-recharge of 20.00 under 5.00. */
async function rechargingClient(amount: string) {
  const client = await t.createClient();
  const hash = (await asClient(t, client.token, 'invoice/funds_invoice', { amount })).result as string;
  await payByCard(stand, hash);
  expect((await asClient(t, client.token, 'credit/auto_recharge_set', { enabled: true, threshold: '5', amount: '20' })).body.error).toBeNull();
  return client;
}

describe('auto-recharge across processes', () => {
  it('crosses once when two processes debit past the threshold at once', async () => {
    const client = await rechargingClient('10.00');
    const debits = Array.from({ length: 20 }, (_, i) => {
      const params = { id: client.id, amount: '-0.50', description: `Usage ${i}` };
      return i % 2 === 0 ? t.admin('client/balance_add_funds', params).then((reply) => reply.status) : peer.call('admin/client/balance_add_funds', params, t.adminToken).then((reply) => reply.status);
    });
    expect(await Promise.all(debits)).toEqual(Array.from({ length: 20 }, () => 200));
    expect(await total(client.token)).toBe('0.00');
    expect((await recharges(client.id)).map((row) => row.crossing)).toEqual([1]);
    await t.services.outbox.runDue(new Date());
    await t.services.outbox.runDue(new Date());
    const [row] = await recharges(client.id);
    expect(intentRequests(row!.invoice_id!)).toHaveLength(1);
    expect(await topUpsOf(row!.invoice_id!)).toHaveLength(1);
    expect(await total(client.token)).toBe('20.00');
    await expectLedgerConsistent(t.services.db);
  }, 60_000);

  it('charges once and credits once when the sender is killed between the charge and its ledger entry', async () => {
    const client = await rechargingClient('10.00');
    expect((await t.admin('client/balance_add_funds', { id: client.id, amount: '-6', description: 'Usage' })).body.error).toBeNull();
    stand.stripe.chargeQueue.push('charge_then_hang');
    // The sender waits on Stripe far longer than the test does: it is killed while waiting.
    const stripeEnv = stand.stripe.env({ STRIPE_TIMEOUT_MS: '60000' });
    const first: ChildProcess = await senders.start(t, stripeEnv);
    let invoiceId = 0;
    await waitFor(async () => {
      invoiceId = (await recharges(client.id))[0]?.invoice_id ?? 0;
      return invoiceId > 0 && intentRequests(invoiceId).length === 1;
    }, 30_000);
    await senders.stop(first, 'SIGKILL');
    // Stripe charged the card; the ledger knows nothing of it yet.
    expect(intentsCharged(invoiceId)).toHaveLength(1);
    expect(await topUpsOf(invoiceId)).toEqual([]);
    expect(await t.services.charges.attemptsOf(invoiceId)).toMatchObject([{ attempt: 1, status: 'processing' }]);

    // Two senders take over once the lease runs out.
    await Promise.all([senders.start(t, stripeEnv), senders.start(t, stripeEnv)]);
    await waitFor(async () => (await topUpsOf(invoiceId)).length > 0, 30_000);
    expect(intentRequests(invoiceId).map((request) => request.idempotencyKey)).toEqual([`tollgate-invoice-${invoiceId}-attempt-1`, `tollgate-invoice-${invoiceId}-attempt-1`]);
    expect(intentsCharged(invoiceId)).toHaveLength(1);
    expect(await t.services.charges.attemptsOf(invoiceId)).toMatchObject([{ attempt: 1, status: 'succeeded' }]);
    // Stripe's own event of that charge arrives as well: nothing changes.
    const succeeded = stand.stripe.events.filter((event) => event.type === 'payment_intent.succeeded' && (event.data.object.metadata as { invoice_id?: string }).invoice_id === String(invoiceId));
    for (const event of succeeded) expect((await deliver(stand, event)).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await topUpsOf(invoiceId)).toHaveLength(1);
    expect(await recharges(client.id)).toHaveLength(1);
    expect(await total(client.token)).toBe('24.00');
    await expectLedgerConsistent(t.services.db);
  }, 90_000);
});
