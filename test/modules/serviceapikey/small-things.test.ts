// Issue 21 item 9, the server side of the small things: notices about the same key's validity coalesce (toggling a
// key 30 times sent 31 mails) — one delayed outbox item per key, at most one mail per key per hour, carrying the
// latest state; and order/service tells the pages how many keys a plan allows (no "Add a key" on a one-key plan).
// The pages' own checks are in browser/buyer.test.ts. Runs on SQLite, and on PostgreSQL + Redis when TEST_* are set.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEY_NOTICE_DELAY_MS, KEY_NOTICE_KIND, KEY_NOTICE_SPACING_MS } from '../../../src/modules/email/key-notices.ts';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectError } from '../../helpers/assertions.ts';
import { asClient, asStaff, makeProduct, staffWith } from '../../helpers/selling-fixtures.ts';

describe('key validity notices', () => {
  let t: TestApp;
  let product: number;

  beforeAll(async () => {
    t = await createTestApp();
    product = await makeProduct(t, { title: 'Keyed', type: 'apikey', config: { max_keys: 3 } });
  });
  afterAll(async () => {
    await t.close();
  });

  async function order(): Promise<{ orderId: number; clientId: number; token: string }> {
    const client = await t.createClient();
    const orderId = (await t.admin('order/create', { client_id: client.id, product_id: product, period: '1M', activate: true })).result as number;
    return { orderId, clientId: client.id, token: client.token };
  }
  const toggle = async (orderId: number, valid: boolean) => expect((await t.admin('serviceapikey/update', { order_id: orderId, valid })).body.error).toBeNull();
  const mails = async (clientId: number) =>
    (await t.services.db.selectFrom('emails').select('template').where('client_id', '=', clientId).where('template', '=', 'apikey_disabled').execute()).length;
  const notices = () => t.services.db.selectFrom('outbox_messages').select(['id', 'status', 'run_at', 'dedupe_key']).where('kind', '=', KEY_NOTICE_KIND).orderBy('id').execute();
  /** Runs the outbox as if `ms` had passed (this file's items only are due then). */
  const later = (ms: number) => t.services.outbox.runDue(new Date(Date.now() + ms));

  it('toggling a key 31 times queues one notice and, a minute later, one mail with the latest state', async () => {
    const { orderId, clientId } = await order();
    const before = (await notices()).length;
    for (let i = 0; i < 31; i++) await toggle(orderId, i % 2 === 1);
    const waiting = (await notices()).slice(before);
    expect(waiting).toHaveLength(1);
    expect(waiting[0]!.status).toBe('pending');
    expect(Date.parse(waiting[0]!.run_at)).toBeGreaterThan(Date.now() + KEY_NOTICE_DELAY_MS - 10_000);
    // Not yet due: nothing sent.
    await t.services.outbox.runDue();
    expect(await mails(clientId)).toBe(0);
    await later(KEY_NOTICE_DELAY_MS + 1000);
    // The 31st switch left the key off: one "disabled" mail.
    expect(await mails(clientId)).toBe(1);
    // Delivered again (a retry after a crash, say): still one.
    await later(KEY_NOTICE_DELAY_MS + 2000);
    expect(await mails(clientId)).toBe(1);
  });

  it('a key switched off and straight back on sends nothing', async () => {
    const { orderId, clientId } = await order();
    await toggle(orderId, false);
    await toggle(orderId, true);
    await later(KEY_NOTICE_DELAY_MS + 1000);
    expect(await mails(clientId)).toBe(0);
  });

  it('after a notice went, the next about the same key waits an hour from it, and carries the state then', async () => {
    const { orderId, clientId } = await order();
    await toggle(orderId, false);
    await later(KEY_NOTICE_DELAY_MS + 1000);
    expect(await mails(clientId)).toBe(1);
    const first = (await notices()).at(-1)!;
    // Switched on, off, on again: the customer last heard "disabled" and the key works again, so nothing is said;
    // switched off once more within the hour: one more "disabled", not before an hour after the first.
    await toggle(orderId, true);
    const second = (await notices()).at(-1)!;
    expect(second.id).not.toBe(first.id);
    expect(Date.parse(second.run_at) - Date.parse(first.run_at)).toBeGreaterThanOrEqual(KEY_NOTICE_SPACING_MS);
    await toggle(orderId, false);
    await toggle(orderId, true);
    await toggle(orderId, false);
    expect((await notices()).at(-1)!.id).toBe(second.id);
    await later(KEY_NOTICE_DELAY_MS + 60_000);
    expect(await mails(clientId)).toBe(1);
    // At the hour the state is "off" again, which the customer last heard: still nothing to say.
    await later(KEY_NOTICE_SPACING_MS + KEY_NOTICE_DELAY_MS + 60_000);
    expect(await mails(clientId)).toBe(1);
  });

  it('a deleted key is announced once, like a key switched off; concurrent switches leave one notice', async () => {
    const { orderId, clientId, token } = await order();
    const extra = await asClient(t, token, 'serviceapikey/create', { order_id: orderId, name: 'spare' });
    expect(extra.body.error).toBeNull();
    expect((await asClient(t, token, 'serviceapikey/delete', { id: extra.result.id })).body.error).toBeNull();
    const before = (await notices()).length;
    await Promise.all(Array.from({ length: 8 }, (_, i) => t.admin('serviceapikey/update', { order_id: orderId, valid: i % 2 === 0 })));
    const added = (await notices()).slice(before);
    expect(added.filter((row) => row.status === 'pending' && row.dedupe_key!.startsWith(`${KEY_NOTICE_KIND}:`))).toHaveLength(1);
    await later(KEY_NOTICE_DELAY_MS + 1000);
    // The deleted key's notice: one "disabled" mail; the order's key ends as the last switch left it.
    expect(await mails(clientId)).toBeGreaterThanOrEqual(1);
    expect(await mails(clientId)).toBeLessThanOrEqual(2);
  });

  it('switching needs serviceapikey.manage; another order is a 404; a wrong-typed valid is a 422', async () => {
    const { orderId } = await order();
    expectError(await asStaff(t, await staffWith(t, ['order.view']), 'serviceapikey/update', { order_id: orderId, valid: false }), 403);
    expectError(await t.admin('serviceapikey/update', { order_id: 999_999, valid: false }), 404);
    expectError(await t.admin('serviceapikey/update', { order_id: orderId, valid: 'maybe' }), 422);
  });
});

describe('the key allowance on order/service', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('says how many keys the plan allows, for the client and for staff', async () => {
    const one = await makeProduct(t, { title: 'One key', type: 'apikey' });
    const three = await makeProduct(t, { title: 'Three keys', type: 'apikey', config: { max_keys: 3 } });
    const client = await t.createClient();
    for (const [product, allowed] of [
      [one, 1],
      [three, 3],
    ] as const) {
      const orderId = (await t.admin('order/create', { client_id: client.id, product_id: product, period: '1M', activate: true })).result as number;
      expect((await asClient(t, client.token, 'order/service', { id: orderId })).result.max_keys).toBe(allowed);
      expect((await t.admin('order/service', { id: orderId })).result.max_keys).toBe(allowed);
    }
    // The one-key plan refuses a second key anyway (the page just does not offer it).
    const onlyOrder = (await t.admin('order/get_list', { product_id: one })).result.list[0].id as number;
    expectError(await asClient(t, client.token, 'serviceapikey/create', { order_id: onlyOrder }), 409);
  });
});
