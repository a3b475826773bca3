// Issue 21 item 13: FOSSBilling parity where it costs nothing. guest/cart/get is a read and needs no CSRF token even
// on a client's session (cart changes keep needing it); admin/cron/info answers `last_cron_exec`; client create and
// update take FOSSBilling's `phone_cc` + `phone`; an unknown API key is "API key does not exist" (404, code 404).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser, createTestApp, type TestApp } from '../helpers/app.ts';
import { createPlan, buyKey } from '../helpers/apikey.ts';
import { expectError, expectInvalid } from '../helpers/assertions.ts';
import { asStaff, inBrowser, makeProduct, signUp, staffWith } from '../helpers/selling-fixtures.ts';

describe('FOSSBilling parity (issue 21 item 13)', () => {
  let t: TestApp;
  let product: number;

  beforeAll(async () => {
    t = await createTestApp();
    product = await makeProduct(t);
  });
  afterAll(async () => {
    await t.close();
  });

  describe('guest/cart/get', () => {
    it("reads a logged-in client's cart without a CSRF token, over POST and GET", async () => {
      const { browser } = await signUp(t);
      expect((await inBrowser(t, browser, 'cart/add_item', { id: product, period: '1M' })).result).toBe(true);
      for (const method of ['POST', 'GET'] as const) {
        const reply = await t.call('/api/guest/cart/get', {}, { browser, method });
        expect(reply.status, JSON.stringify(reply.body)).toBe(200);
        expect(reply.result.items).toHaveLength(1);
        expect(reply.result.items[0].product_id).toBe(product);
      }
    });

    it('still refuses cart changes through guest/cart/* on a client session without the token, leaving the cart alone', async () => {
      const { browser } = await signUp(t);
      expect((await inBrowser(t, browser, 'cart/add_item', { id: product, period: '1M' })).result).toBe(true);
      const before = (await t.call('/api/guest/cart/get', {}, { browser })).result;
      expectError(await t.call('/api/guest/cart/add_item', { id: product, period: '1M', multiple: true }, { browser }), 403);
      expectError(await t.call('/api/guest/cart/reset', {}, { browser, method: 'GET' }), 403);
      expectError(await t.call('/api/guest/cart/remove_item', { id: before.items[0].id }, { browser }), 403);
      expect((await t.call('/api/guest/cart/get', {}, { browser })).result).toEqual(before);
    });

    it("reads only the caller's cart: another browser sees its own (empty) cart", async () => {
      const { browser } = await signUp(t);
      expect((await inBrowser(t, browser, 'cart/add_item', { id: product, period: '1M' })).result).toBe(true);
      expect((await t.call('/api/guest/cart/get', {}, { browser: new Browser() })).result.items).toEqual([]);
    });
  });

  describe('admin/cron/info', () => {
    it('answers last_cron_exec: null before the first run, then the moment the last run finished (ISO 8601 UTC)', async () => {
      const fresh = await createTestApp();
      try {
        expect((await fresh.admin('cron/info')).body).toEqual({ result: { last_cron_exec: null }, error: null });
        const before = Date.now() - 1000;
        expect((await fresh.admin('cron/run')).status).toBe(200);
        const info = (await fresh.admin('cron/info')).result as { last_cron_exec: string };
        expect(info.last_cron_exec).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);
        expect(Date.parse(info.last_cron_exec)).toBeGreaterThanOrEqual(before);
        expect(Date.parse(info.last_cron_exec)).toBeLessThanOrEqual(Date.now());
        // Runs through the service (the scheduler, `npm run cron`) count the same, and the table keeps one row.
        await fresh.services.cron.run(new Date());
        await fresh.services.cron.run(new Date());
        const rows = await fresh.services.db.selectFrom('cron_status').selectAll().execute();
        expect(rows).toHaveLength(1);
        expect(Date.parse(((await fresh.admin('cron/info')).result as { last_cron_exec: string }).last_cron_exec)).toBeGreaterThanOrEqual(Date.parse(info.last_cron_exec));
      } finally {
        await fresh.close();
      }
    });

    it('never moves back: concurrent runs leave the latest moment', async () => {
      await Promise.all([t.services.cron.run(new Date()), t.services.cron.run(new Date()), t.admin('cron/run')]);
      const first = ((await t.admin('cron/info')).result as { last_cron_exec: string }).last_cron_exec;
      // An older moment written late (a slow process finishing) does not replace a newer one.
      await t.services.db.updateTable('cron_status').set({ last_run_at: '2999-01-01T00:00:00Z' }).execute();
      await t.services.cron.run(new Date());
      expect(((await t.admin('cron/info')).result as { last_cron_exec: string }).last_cron_exec).toBe('2999-01-01T00:00:00Z');
      await t.services.db.updateTable('cron_status').set({ last_run_at: first }).execute();
    });

    it('needs staff credentials and the system.manage permission', async () => {
      expectError(await t.call('/api/admin/cron/info', {}), 201, 401);
      const client = await t.createClient();
      expectError(await t.call('/api/admin/cron/info', {}, { basic: ['admin', client.token] }), 205, 401);
      expectError(await asStaff(t, await staffWith(t, ['client.view']), 'cron/info'), 403);
      expect((await asStaff(t, await staffWith(t, ['system.manage']), 'cron/info')).status).toBe(200);
    });
  });

  describe('phone_cc + phone', () => {
    let seq = 0;
    const email = () => `phone${++seq}-${Math.random().toString(36).slice(2, 8)}@example.com`;
    const phoneOf = async (id: number) => ((await t.admin('client/get', { id })).result as { phone: string | null }).phone;

    it('admin/client/create reads a national number with its calling code into one international number (JSON and form)', async () => {
      const json = await t.admin('client/create', { email: email(), first_name: 'Ada', phone_cc: '49', phone: '030 1234567' });
      expect(json.status, JSON.stringify(json.body)).toBe(200);
      expect(await phoneOf(json.result as number)).toBe('+49301234567');
      const numeric = await t.admin('client/create', { email: email(), first_name: 'Ada', phone_cc: 44, phone: '020 7946 0958' });
      expect(await phoneOf(numeric.result as number)).toBe('+442079460958');
      const form = await t.call('/api/admin/client/create', {}, {
        basic: ['admin', t.adminToken],
        raw: { body: `email=${encodeURIComponent(email())}&first_name=Ada&phone_cc=%2B1&phone=${encodeURIComponent('(202) 555-0143')}`, contentType: 'application/x-www-form-urlencoded' },
      });
      expect(form.status, JSON.stringify(form.body)).toBe(200);
      expect(await phoneOf(form.result as number)).toBe('+12025550143');
    });

    it('admin/client/update and the sign-up take them too; a blank phone clears the number whatever the code', async () => {
      const id = (await t.admin('client/create', { email: email(), first_name: 'Ada' })).result as number;
      expect((await t.admin('client/update', { id, phone_cc: '33', phone: '01 23 45 67 89' })).result).toBe(true);
      expect(await phoneOf(id)).toBe('+33123456789');
      expect((await t.admin('client/update', { id, phone_cc: '33', phone: '' })).result).toBe(true);
      expect(await phoneOf(id)).toBeNull();
      const address = email();
      const signup = await t.call('/api/guest/client/create', { email: address, first_name: 'Bo', password: 'Buyer-Passw0rd', password_confirm: 'Buyer-Passw0rd', phone_cc: '49', phone: '030 1234567' });
      expect(signup.status, JSON.stringify(signup.body)).toBe(200);
      expect(await phoneOf(signup.result as number)).toBe('+49301234567');
      // The client's own profile too.
      const own = await t.createClient();
      expect((await t.call('/api/client/profile/update', { phone_cc: '+31', phone: '020 123 4567' }, { basic: ['client', own.token] })).result).toBe(true);
      expect(await phoneOf(own.id)).toBe('+31201234567');
    });

    it('keeps a number already in international form, and refuses an unknown code, a number invalid there, or a code alone (422)', async () => {
      const id = (await t.admin('client/create', { email: email(), first_name: 'Ada', phone_cc: '49', phone: '+442079460958' })).result as number;
      expect(await phoneOf(id)).toBe('+442079460958');
      expectInvalid(await t.admin('client/update', { id, phone_cc: '999', phone: '1234567' }), 'phone_cc');
      expectInvalid(await t.admin('client/update', { id, phone_cc: 'x', phone: '1234567' }), 'phone_cc');
      expectInvalid(await t.admin('client/update', { id, phone_cc: '49', phone: '12' }), 'phone');
      expectInvalid(await t.admin('client/update', { id, phone_cc: '49' }), 'phone_cc');
      expectInvalid(await t.admin('client/update', { id, phone_cc: true, phone: '030 1234567' }), 'phone_cc');
      expectInvalid(await t.admin('client/create', { email: email(), first_name: 'Ada', phone_cc: 0, phone: '030 1234567' }), 'phone_cc');
      expect(await phoneOf(id)).toBe('+442079460958');
      expectError(await t.admin('client/update', { id: 999_999, phone_cc: '49', phone: '030 1234567' }), 404);
    });
  });

  describe('an unknown API key', () => {
    it('is "API key does not exist" with code and status 404, wherever a key is looked up', async () => {
      const plan = await createPlan(t, {});
      const client = await t.createClient();
      const { orderId } = await buyKey(t, plan, client.id);
      const unknown = 'AAAAAAAA-BBBBBBBB-CCCCCCCC-DDDDDDDD';
      const replies = [
        await t.admin('serviceapikey/find', { key: unknown }),
        await t.admin('serviceapikey/reset', { key: unknown }),
        await t.admin('serviceapikey/get', { order_id: orderId + 1000 }),
        await t.admin('serviceapikey/update', { order_id: orderId + 1000, valid: false }),
      ];
      for (const reply of replies) {
        expectError(reply, 404);
        expect(reply.body.error!.message).toBe('API key does not exist');
      }
      // Another client's key is as unknown as one that never existed.
      const other = await t.createClient();
      const reset = await t.call('/api/client/serviceapikey/reset', { order_id: orderId }, { basic: ['client', other.token] });
      expectError(reset, 404);
      expect(reset.body.error!.message).toBe('API key does not exist');
    });
  });
});
