// Webhooks (CONTRACT §11) against real receivers on 127.0.0.1 (WEBHOOK_ALLOW_PRIVATE=true for them), each delivery
// verified with the `standardwebhooks` library: the actions and their failure paths, every event from the service
// that owns the change, no key in any body, the retry schedule (500, down, slow past the timeout, redirect), 410
// disabling the endpoint, delivery_retry and send_test. The outbox is driven by runDue(now), so the schedule's hours
// pass in no time. On SQLite and, with TEST_DATABASE_URL/TEST_REDIS_URL, PostgreSQL + Redis.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { inTransaction } from '../../../src/platform/transaction.ts';
import { WEBHOOK_RETRY_DELAYS_MS } from '../../../src/modules/webhook/service.ts';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectError, expectInvalid } from '../../helpers/assertions.ts';
import { Receiver } from '../../helpers/webhook-receiver.ts';
import { asClient, asStaff, makeProduct, staffWith } from '../../helpers/selling-fixtures.ts';

// Long enough for a busy CI machine to answer a fast receiver in time; the slow receiver answers 10× later.
const TIMEOUT_MS = 2000;
let t: TestApp;
const receiver = new Receiver();
const other = new Receiver();

beforeAll(async () => {
  t = await createTestApp({ WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS) });
  await receiver.start();
  await other.start();
}, 60_000);

afterAll(async () => {
  await t?.close();
  await receiver.stop();
  await other.stop();
});

beforeEach(async () => {
  // Each test starts with no endpoints, nothing queued and an answering receiver.
  await t.services.outbox.runDue(new Date(Date.now() + 365 * 86_400_000));
  await t.services.db.deleteFrom('webhooks').execute();
  receiver.received.length = 0;
  other.received.length = 0;
  receiver.behaviour = { kind: 'status', status: 200 };
  other.behaviour = { kind: 'status', status: 200 };
});

async function createHook(events: string[] = ['*'], target: Receiver = receiver): Promise<number> {
  const created = await t.admin('webhook/create', { url: target.url, events, description: 'test' });
  expect(created.body.error).toBeNull();
  target.secret = created.result.secret as string;
  return created.result.id as number;
}

async function deliveries(params: Record<string, unknown> = {}) {
  const reply = await t.admin('webhook/delivery_get_list', { per_page: 100, ...params });
  expect(reply.body.error).toBeNull();
  return reply.result.list as Array<Record<string, any>>; // eslint-disable-line @typescript-eslint/no-explicit-any -- test reads
}

const runDue = (at: Date = new Date()) => t.services.outbox.runDue(at);

describe('webhook endpoints', () => {
  it('create returns the id and a whsec_ secret of 24 random bytes; get and get_list never show it', async () => {
    const created = await t.admin('webhook/create', { url: receiver.url, events: ['order.created', 'order.created', 'invoice.paid'] });
    expect(created.body.error).toBeNull();
    const { id, secret } = created.result as { id: number; secret: string };
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(24);
    const got = (await t.admin('webhook/get', { id })).result;
    expect(got).toEqual({
      id,
      url: receiver.url,
      description: null,
      events: ['order.created', 'invoice.paid'],
      enabled: true,
      disabled_reason: null,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const list = await t.admin('webhook/get_list', {});
    expect(list.result.list.map((row: { id: number }) => row.id)).toEqual([id]);
    expect(JSON.stringify([got, list.result])).not.toContain(secret.slice(6));
    // Stored sealed, not in the clear.
    const row = await t.services.db.selectFrom('webhooks').select('secret_enc').where('id', '=', id).executeTakeFirstOrThrow();
    expect(row.secret_enc).not.toContain(secret.slice(6));
    const second = (await t.admin('webhook/create', { url: receiver.url, events: ['*'] })).result;
    expect(second.secret).not.toBe(secret);
  });

  it('refuses bad parameters with 422 naming them', async () => {
    expectInvalid(await t.admin('webhook/create', { events: ['*'] }), 'url');
    expectInvalid(await t.admin('webhook/create', { url: receiver.url }), 'events');
    expectInvalid(await t.admin('webhook/create', { url: 42, events: ['*'] }), 'url');
    expectInvalid(await t.admin('webhook/create', { url: receiver.url, events: 'order.created' }), 'events');
    expectInvalid(await t.admin('webhook/create', { url: receiver.url, events: [] }), 'events');
    expectInvalid(await t.admin('webhook/create', { url: receiver.url, events: ['order.exploded'] }), 'events');
    expectInvalid(await t.admin('webhook/create', { url: receiver.url, events: ['*', 'order.created'] }), 'events');
    expectInvalid(await t.admin('webhook/create', { url: receiver.url, events: ['*'], description: 'x'.repeat(256) }), 'description');
    for (const url of ['ftp://example.com/hook', 'not a url', 'javascript:alert(1)', 'http://user:pass@example.com/', '/relative']) {
      expectInvalid(await t.admin('webhook/create', { url, events: ['*'] }), 'url');
    }
    expect(await t.services.db.selectFrom('webhooks').select('id').execute()).toEqual([]);
    const id = await createHook();
    expectInvalid(await t.admin('webhook/update', { id, events: ['nope'] }), 'events');
    expectInvalid(await t.admin('webhook/update', { id, url: 'gopher://x' }), 'url');
    expectInvalid(await t.admin('webhook/update', { id: 'x' }), 'id');
    expectInvalid(await t.admin('webhook/delivery_get_list', { status: 'sent' }), 'status');
    expectInvalid(await t.admin('webhook/delivery_retry', {}), 'id');
  });

  it('answers 404 for an unknown endpoint or delivery', async () => {
    for (const action of ['get', 'delete', 'rotate_secret', 'send_test', 'delivery_retry', 'delivery_get']) {
      expectError(await t.admin(`webhook/${action}`, { id: 999_999 }), 404);
    }
    expectError(await t.admin('webhook/update', { id: 999_999, description: 'x' }), 404);
  });

  it('needs webhook.manage: a client is refused (401) and staff without the permission get 403', async () => {
    const id = await createHook();
    const client = await t.createClient();
    expectError(await asClient(t, client.token, 'webhook/get_list'), 740, 404);
    expectError(await t.call('/api/admin/webhook/get_list', {}, { basic: ['admin', client.token] }), 205, 401);
    const nobody = await staffWith(t, ['email.view']);
    for (const [action, params] of [
      ['create', { url: receiver.url, events: ['*'] }],
      ['get_list', {}],
      ['get', { id }],
      ['update', { id, description: 'x' }],
      ['delete', { id }],
      ['rotate_secret', { id }],
      ['send_test', { id }],
      ['delivery_get_list', {}],
      ['delivery_retry', { id: 1 }],
    ] as const) {
      expectError(await asStaff(t, nobody, `webhook/${action}`, params), 403);
    }
    const allowed = await staffWith(t, ['webhook.manage']);
    expect((await asStaff(t, allowed, 'webhook/get', { id })).result.id).toBe(id);
  });

  it('update changes events, url and description; delete removes the endpoint but keeps its log', async () => {
    const id = await createHook(['order.created']);
    const updated = await t.admin('webhook/update', { id, events: ['client.created'], url: other.url, description: 'moved' });
    expect(updated.result).toMatchObject({ id, events: ['client.created'], url: other.url, description: 'moved', enabled: true });
    other.secret = receiver.secret;
    await t.createClient();
    await runDue();
    expect(other.received).toHaveLength(1);
    expect(receiver.received).toHaveLength(0);
    expect((await t.admin('webhook/delete', { id })).result).toBe(true);
    expectError(await t.admin('webhook/get', { id }), 404);
    expect(await deliveries({ webhook_id: id })).toHaveLength(1);
    await t.createClient();
    await runDue();
    expect(other.received).toHaveLength(1);
  });

  it('rotate_secret: later deliveries verify with the new secret only', async () => {
    const id = await createHook(['client.created']);
    const old = receiver.secret;
    const rotated = (await t.admin('webhook/rotate_secret', { id })).result;
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(old);
    receiver.secret = rotated.secret;
    await t.createClient();
    await runDue();
    expect(receiver.received).toHaveLength(1);
    expect(receiver.received[0]!.verifyError).toBeNull();
    receiver.secret = old;
    await t.createClient();
    await runDue();
    expect(receiver.received[1]!.verified).toBeNull();
    expect(receiver.received[1]!.verifyError).toMatch(/signature/i);
  });
});

describe('deliveries', () => {
  it('every event of the list reaches a "*" endpoint from the service that owns the change, signed, never with a key', async () => {
    const id = await createHook(['*']);
    const client = await t.createClient();
    const plan = (await t.admin('product/prepare', { title: 'API plan', type: 'apikey' })).result as number;
    expect((await t.admin('product/update', { id: plan, status: 'enabled', pricing: { type: 'free' } })).body.error).toBeNull();
    const orderId = (await t.admin('order/create', { client_id: client.id, product_id: plan, activate: true })).result as number;
    const firstKey = (await t.admin('serviceapikey/get', { order_id: orderId })).result.api_key as string;
    const secondKey = (await t.admin('serviceapikey/reset', { order_id: orderId })).result as string;
    await t.admin('serviceapikey/update', { order_id: orderId, valid: false });
    await t.admin('serviceapikey/update', { order_id: orderId, valid: true });
    await t.admin('serviceapikey/update', { order_id: orderId, config: { monthlyLimit: 5 } });
    const product = await makeProduct(t);
    const paidOrder = (await t.admin('order/create', { client_id: client.id, product_id: product, period: '1M', invoice_option: 'issue-invoice' })).result;
    expect(paidOrder).toEqual(expect.any(Number));
    const invoice = await t.services.db.selectFrom('invoices').select('id').where('client_id', '=', client.id).orderBy('id', 'desc').executeTakeFirstOrThrow();
    expect((await t.admin('invoice/mark_as_paid', { id: invoice.id, transaction_id: 'TX-W', gateway_id: 1 })).body.error).toBeNull();
    for (const transition of ['renew', 'suspend', 'unsuspend', 'cancel']) {
      expect((await t.admin(`order/${transition}`, { id: paidOrder })).body.error, transition).toBeNull();
    }
    expect((await t.admin('invoice/refund', { id: invoice.id })).body.error).toBeNull();
    await runDue();

    expect(receiver.received.every((r) => r.verifyError === null)).toBe(true);
    const types = receiver.received.map((r) => r.verified!.type);
    for (const type of [
      'client.created',
      'order.created',
      'order.activated',
      'apikey.issued',
      'apikey.reset',
      'apikey.disabled',
      'apikey.enabled',
      'apikey.updated',
      'order.renewed',
      'order.suspended',
      'order.unsuspended',
      'order.canceled',
      'invoice.created',
      'invoice.paid',
      'invoice.refunded',
    ]) {
      expect(types, type).toContain(type);
    }
    const byType = (type: string) => receiver.received.find((r) => r.verified!.type === type)!.verified!;
    expect(byType('client.created').data).toEqual({ client_id: client.id });
    expect(byType('apikey.reset').data).toMatchObject({ order_id: orderId, client_id: client.id, key_id: expect.any(Number) });
    expect(byType('order.suspended').data).toMatchObject({ order_id: paidOrder, client_id: client.id, status: 'suspended' });
    expect(byType('invoice.paid').data).toMatchObject({ invoice_id: invoice.id, client_id: client.id });
    expect(byType('order.created').timestamp).toMatch(/^\d{4}-\d\d-\d\dT/);
    // No body and no header carries either key or the client's API token.
    const everything = JSON.stringify(receiver.received.map((r) => [r.body, r.headers]));
    for (const secret of [firstKey, secondKey, client.token]) expect(everything).not.toContain(secret);
    // Each delivery has its own webhook-id; the log shows them delivered with the receiver's 200.
    expect(new Set(receiver.received.map((r) => r.id)).size).toBe(receiver.received.length);
    const log = await deliveries({ webhook_id: id });
    expect(log).toHaveLength(receiver.received.length);
    expect(log.every((d) => d.status === 'delivered' && d.attempts === 1 && d.last_status_code === 200 && d.next_attempt_at === null)).toBe(true);
  });

  it('invoice.payment_failed (emitted by the card payment module, on another branch) reaches its subscribers with the message', async () => {
    const id = await createHook(['invoice.payment_failed']);
    const client = await t.createClient();
    // The card payment module emits it inside its transaction; here the test plays that module.
    await inTransaction(t.services.db, (trx) => t.services.events.emit('invoice.payment_failed', { invoiceId: 7, clientId: client.id, message: 'Your card was declined.' }, trx));
    await runDue();
    expect(receiver.received.map((r) => r.verified)).toEqual([
      { type: 'invoice.payment_failed', timestamp: expect.any(String), data: { invoice_id: 7, client_id: client.id, message: 'Your card was declined.' } },
    ]);
    expect(await deliveries({ webhook_id: id })).toHaveLength(1);
  });

  it('an endpoint gets only the events it subscribed to; a disabled one gets nothing', async () => {
    await createHook(['order.created']);
    const off = await createHook(['client.created'], other);
    await t.admin('webhook/update', { id: off, enabled: false });
    const client = await t.createClient();
    await t.admin('order/create', { client_id: client.id, product_id: await makeProduct(t), period: '1M' });
    await runDue();
    expect(receiver.received.map((r) => r.verified!.type)).toEqual(['order.created']);
    expect(other.received).toEqual([]);
  });

  it('an event whose change rolls back leaves no delivery', async () => {
    const id = await createHook(['client.created']);
    const client = await t.createClient();
    await runDue();
    const before = receiver.received.length;
    // The same e-mail again: the insert fails, the transaction (and its delivery) rolls back.
    expectError(await t.admin('client/create', { email: client.email, first_name: 'Again' }), 409);
    await runDue();
    expect(receiver.received).toHaveLength(before);
    expect(await deliveries({ webhook_id: id })).toHaveLength(1);
  });

  it('a receiver answering 500 is retried after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h with the same webhook-id, then failed', async () => {
    const id = await createHook(['client.created']);
    receiver.behaviour = { kind: 'status', status: 500 };
    await t.createClient();
    let now = Date.now();
    await runDue(new Date(now));
    for (const delay of WEBHOOK_RETRY_DELAYS_MS) {
      const [pending] = await deliveries({ webhook_id: id });
      expect(pending).toMatchObject({ status: 'pending', last_status_code: 500, last_error: 'HTTP 500' });
      const due = Date.parse(pending!.next_attempt_at as string);
      expect(due - now).toBe(delay);
      // Not a moment early.
      await runDue(new Date(due - 1));
      now = due;
      await runDue(new Date(now));
    }
    expect(WEBHOOK_RETRY_DELAYS_MS).toEqual([5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]);
    const [failed] = await deliveries({ webhook_id: id });
    expect(failed).toMatchObject({ status: 'failed', attempts: 8, next_attempt_at: null });
    expect(receiver.received).toHaveLength(8);
    expect(new Set(receiver.received.map((r) => r.id)).size).toBe(1);
    expect(receiver.received.every((r) => r.verifyError === null)).toBe(true);
    expect(await deliveries({ status: 'failed' })).toHaveLength(1);
    expect(await deliveries({ status: 'pending' })).toHaveLength(0);
    const detail = (await t.admin('webhook/delivery_get', { id: failed!.id })).result;
    expect(detail.attempt_log).toHaveLength(8);
    expect(detail.attempt_log[0]).toMatchObject({ status_code: 500, error: null, duration_ms: expect.any(Number) });
    expect(JSON.parse(detail.body as string)).toMatchObject({ type: 'client.created' });
  });

  it('a 410 disables the endpoint at once: no retry, no further deliveries', async () => {
    const id = await createHook(['client.created']);
    receiver.behaviour = { kind: 'status', status: 410 };
    await t.createClient();
    await runDue();
    await runDue(new Date(Date.now() + 86_400_000));
    expect(receiver.received).toHaveLength(1);
    const [delivery] = await deliveries({ webhook_id: id });
    expect(delivery).toMatchObject({ status: 'failed', last_status_code: 410, attempts: 1 });
    const endpoint = (await t.admin('webhook/get', { id })).result;
    expect(endpoint.enabled).toBe(false);
    expect(endpoint.disabled_reason).toMatch(/410/);
    await t.createClient();
    await runDue();
    expect(receiver.received).toHaveLength(1);
    expectError(await t.admin('webhook/send_test', { id }), 409);
    expectError(await t.admin('webhook/delivery_retry', { id: delivery!.id }), 409);
    // Switched on again, it receives again.
    receiver.behaviour = { kind: 'status', status: 200 };
    expect((await t.admin('webhook/update', { id, enabled: true })).result).toMatchObject({ enabled: true, disabled_reason: null });
    await t.createClient();
    await runDue();
    expect(receiver.received).toHaveLength(2);
  });

  it('a redirect is not followed: the target gets nothing and the delivery is retried', async () => {
    const id = await createHook(['client.created']);
    other.secret = receiver.secret;
    receiver.behaviour = { kind: 'status', status: 302, location: other.url };
    await t.createClient();
    await runDue();
    expect(receiver.received).toHaveLength(1);
    expect(other.received).toHaveLength(0);
    const [delivery] = await deliveries({ webhook_id: id });
    expect(delivery).toMatchObject({ status: 'pending', last_status_code: 302, last_error: 'HTTP 302 (redirects are not followed)' });
    receiver.behaviour = { kind: 'status', status: 200 };
    await runDue(new Date(Date.now() + 5_000));
    expect((await deliveries({ webhook_id: id }))[0]).toMatchObject({ status: 'delivered', attempts: 2 });
    expect(other.received).toHaveLength(0);
  });

  it('a receiver that is down, or slower than the timeout, is retried', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const down = (await t.admin('webhook/create', { url: `http://127.0.0.1:${port}/hook`, events: ['client.created'] })).result.id as number;
    const slow = await createHook(['client.created']);
    receiver.behaviour = { kind: 'slow', ms: TIMEOUT_MS * 10 };
    await t.createClient();
    const hungUpBefore = receiver.hungUpOn;
    await runDue();
    // The slow one was cut at the timeout: the sender hung up before the receiver's answer (10× later) was due —
    // seen by the receiver, not inferred from a wall clock on a shared machine.
    await vi.waitFor(() => expect(receiver.hungUpOn).toBe(hungUpBefore + 1), { timeout: TIMEOUT_MS * 4 });
    expect(receiver.answeredLate).toBe(0);
    const [unreachable] = await deliveries({ webhook_id: down });
    expect(unreachable).toMatchObject({ status: 'pending', last_status_code: null, last_error: expect.stringMatching(/ECONNREFUSED/) });
    const [late] = await deliveries({ webhook_id: slow });
    expect(late).toMatchObject({ status: 'pending', last_status_code: null, last_error: `timed out after ${TIMEOUT_MS} ms` });
    const detail = (await t.admin('webhook/delivery_get', { id: late!.id })).result;
    // It waited the whole timeout (a lower bound: a busy machine only makes it longer).
    expect(detail.attempt_log[0].duration_ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 5);
    // The receiver got the request in time to verify it, but its late answer does not count.
    expect(receiver.received).toHaveLength(1);
    receiver.behaviour = { kind: 'status', status: 204 };
    await runDue(new Date(Date.now() + 5_000));
    expect((await deliveries({ webhook_id: slow }))[0]).toMatchObject({ status: 'delivered', last_status_code: 204 });
    expect(receiver.received[1]!.id).toBe(receiver.received[0]!.id);
  });

  it('delivery_retry sends a failed delivery again with the same webhook-id; 409 while pending or twice at once', async () => {
    const id = await createHook(['client.created']);
    receiver.behaviour = { kind: 'status', status: 503 };
    await t.createClient();
    await runDue();
    const [delivery] = await deliveries({ webhook_id: id });
    expectError(await t.admin('webhook/delivery_retry', { id: delivery!.id }), 409);
    // Run the schedule out.
    await runDue(new Date(Date.now() + 100 * 3_600_000));
    for (let n = 0; n < 8; n++) await runDue(new Date(Date.now() + (n + 2) * 100 * 3_600_000));
    expect((await deliveries({ webhook_id: id }))[0]!.status).toBe('failed');
    receiver.behaviour = { kind: 'status', status: 200 };
    const twice = await Promise.all([t.admin('webhook/delivery_retry', { id: delivery!.id }), t.admin('webhook/delivery_retry', { id: delivery!.id })]);
    const ok = twice.filter((reply) => reply.status === 200);
    expect(ok).toHaveLength(1);
    expect(ok[0]!.result).toBe(true);
    for (const reply of twice.filter((r) => r.status !== 200)) expectError(reply, 409);
    await runDue();
    const after = (await deliveries({ webhook_id: id }))[0]!;
    expect(after).toMatchObject({ status: 'delivered', attempts: 9, last_status_code: 200 });
    const ids = new Set(receiver.received.map((r) => r.id));
    expect(ids.size).toBe(1);
    expect(receiver.received.at(-1)!.verifyError).toBeNull();
    // A delivered one may be sent again too (a receiver that lost it).
    expect((await t.admin('webhook/delivery_retry', { id: delivery!.id })).result).toBe(true);
    await runDue();
    expect(receiver.received.at(-1)!.id).toBe(after.message_id);
  });

  it('a pending delivery of a deleted endpoint is dropped when it comes due, and cannot be retried', async () => {
    const id = await createHook(['client.created']);
    receiver.behaviour = { kind: 'status', status: 500 };
    await t.createClient();
    await runDue();
    expect((await t.admin('webhook/delete', { id })).result).toBe(true);
    await runDue(new Date(Date.now() + 5_000));
    const [delivery] = await deliveries({ webhook_id: id });
    expect(delivery).toMatchObject({ status: 'failed', attempts: 1, last_error: 'the endpoint was deleted' });
    expect(receiver.received).toHaveLength(1);
    expectError(await t.admin('webhook/delivery_retry', { id: delivery!.id }), 409);
  });

  it('send_test queues a signed webhook.test delivery to that endpoint only', async () => {
    const id = await createHook(['order.created']);
    await createHook(['*'], other);
    const deliveryId = (await t.admin('webhook/send_test', { id })).result as number;
    expect(deliveryId).toEqual(expect.any(Number));
    await runDue();
    expect(other.received).toHaveLength(0);
    expect(receiver.received).toHaveLength(1);
    expect(receiver.received[0]!.verified).toMatchObject({ type: 'webhook.test', data: { webhook_id: id } });
    expect((await t.admin('webhook/delivery_get', { id: deliveryId })).result).toMatchObject({ status: 'delivered', event_type: 'webhook.test' });
  });
});
