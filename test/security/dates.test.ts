// Issue 8 item 8: moments past 9999-12-31 cannot be stored in the fixed-width ISO form ("+010000-…" sorts before
// "2026-…" as text). They are refused with 422 wherever a date is taken or computed (expires_at, renewals), and the
// scheduler compares moments as numbers, so a paid order is never suspended, canceled or invoiced because of how a
// date is written.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isoSeconds, isStorable, timeOf } from '../../src/lib/time.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { expectInvalid } from '../helpers/assertions.ts';
import { asClient, makeProduct } from '../helpers/selling-fixtures.ts';

describe('dates past 9999-12-31', () => {
  let t: TestApp;
  let monthly: number;

  beforeAll(async () => {
    t = await createTestApp();
    monthly = await makeProduct(t);
  });
  afterAll(async () => {
    await t.close();
  });

  async function activeOrder(): Promise<{ id: number; clientId: number; token: string }> {
    const client = await t.createClient();
    const id = (await t.admin('order/create', { client_id: client.id, product_id: monthly, period: '1M', activate: true })).result as number;
    expect((await t.admin('order/get', { id })).result.status).toBe('active');
    return { id, clientId: client.id, token: client.token };
  }

  const expiresAt = async (id: number) => (await t.admin('order/get', { id })).result.expires_at as string;

  it('lib/time refuses to write a moment it cannot store in fixed width', () => {
    expect(isStorable(new Date('9999-12-31T23:59:59Z'))).toBe(true);
    expect(isStorable(new Date(Date.UTC(10000, 0, 1)))).toBe(false);
    expect(() => isoSeconds(new Date(Date.UTC(10000, 0, 1)))).toThrow(RangeError);
    expect(timeOf('+010000-01-01T00:00:00Z')).toBeGreaterThan(timeOf('9999-12-31T23:59:59Z'));
  });

  it.each(['9999-12-31T23:00:00-05:00', '+010000-01-01T00:00:00Z', '10000-01-01', '99999-01-01T00:00:00Z'])(
    'admin/order/update expires_at=%s → 422, nothing stored',
    async (value) => {
      const order = await activeOrder();
      const before = await expiresAt(order.id);
      expectInvalid(await t.admin('order/update', { id: order.id, expires_at: value }), 'expires_at');
      expect(await expiresAt(order.id)).toBe(before);
    },
  );

  it('calendar-date parameters past 9999-12-31 → 422 too (client/get_list date_from/date_to, serviceapikey usage from/to)', async () => {
    expectInvalid(await t.admin('client/get_list', { date_from: '10000-01-01' }), 'date_from');
    expectInvalid(await t.admin('client/get_list', { date_to: '+010000-01-01' }), 'date_to');
    expect((await t.admin('client/get_list', { date_to: '9999-12-31' })).status).toBe(200);
    const order = await activeOrder();
    expectInvalid(await t.admin('serviceapikey/usage', { order_id: order.id, from: '10000-01-01' }), 'from');
    expectInvalid(await t.admin('serviceapikey/usage', { order_id: order.id, to: '+010000-01-01' }), 'to');
  });

  it('the last storable second is accepted', async () => {
    const order = await activeOrder();
    expect((await t.admin('order/update', { id: order.id, expires_at: '9999-12-31T23:59:59Z' })).result).toBe(true);
    expect(await expiresAt(order.id)).toBe('9999-12-31T23:59:59Z');
  });

  it('renewing past year 9999 → 422 and expires_at is unchanged (staff renewal and a paid renewal invoice)', async () => {
    const order = await activeOrder();
    expect((await t.admin('order/update', { id: order.id, expires_at: '9999-12-15T00:00:00Z' })).result).toBe(true);
    expectInvalid(await t.admin('order/renew', { id: order.id }), 'expires_at');
    expect(await expiresAt(order.id)).toBe('9999-12-15T00:00:00Z');

    const invoiceId = (await asClient(t, order.token, 'invoice/renewal_invoice', { order_id: order.id })).result as number;
    expect(Number.isInteger(invoiceId)).toBe(true);
    expectInvalid(await t.admin('invoice/mark_as_paid', { id: invoiceId }), 'expires_at');
    expect((await t.admin('invoice/get', { id: invoiceId })).result.status).toBe('unpaid');
    expect(await expiresAt(order.id)).toBe('9999-12-15T00:00:00Z');
    const stored = await t.services.db.selectFrom('orders').select('expires_at').where('expires_at', 'like', '+%').execute();
    expect(stored).toEqual([]);
  });

  it('the scheduler compares moments, not text: orders written "+010000-…" are not suspended, invoiced, renewed or canceled', async () => {
    // Rows as an older version could have stored them: far-future moments in the expanded-year form, which sort
    // before "2026-…" as text.
    const farFuture = '+010000-01-01T00:00:00Z';
    const paid = await activeOrder();
    await t.services.db.updateTable('orders').set({ expires_at: farFuture }).where('id', '=', paid.id).execute();

    const free = await makeProduct(t, { pricing: { type: 'recurrent', recurrent: { '1M': { price: '0', setup: '0', enabled: true } } } });
    const freeClient = await t.createClient();
    const freeOrder = (await t.admin('order/create', { client_id: freeClient.id, product_id: free, period: '1M', activate: true })).result as number;
    await t.services.db.updateTable('orders').set({ expires_at: farFuture }).where('id', '=', freeOrder).execute();

    const longSuspended = await activeOrder();
    expect((await t.admin('order/suspend', { id: longSuspended.id })).result).toBe(true);
    await t.services.db.updateTable('orders').set({ suspended_at: farFuture }).where('id', '=', longSuspended.id).execute();

    // A control that the jobs do act on: an order that really expired.
    const expired = await activeOrder();
    expect((await t.admin('order/update', { id: expired.id, expires_at: '2020-01-01T00:00:00Z' })).result).toBe(true);

    const report = await t.services.cron.run(new Date());
    // The control is invoiced and suspended; nothing else is touched.
    expect(report).toMatchObject({ suspended: 1, renewal_invoices: 1, renewed_free: 0, canceled: 0, failed: 0 });
    expect((await t.admin('order/get', { id: paid.id })).result).toMatchObject({ status: 'active', expires_at: farFuture });
    expect((await t.admin('invoice/get_list', { client_id: paid.clientId })).result.total).toBe(0);
    expect((await t.admin('order/get', { id: freeOrder })).result).toMatchObject({ status: 'active', expires_at: farFuture });
    expect((await t.admin('order/get', { id: longSuspended.id })).result.status).toBe('suspended');
    expect((await t.admin('order/get', { id: expired.id })).result).toMatchObject({ status: 'suspended', reason: 'Non-payment' });
  });
});
