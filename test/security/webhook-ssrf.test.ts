// Webhooks without WEBHOOK_ALLOW_PRIVATE (the default): private, loopback, link-local and unspecified receivers are
// refused with 422 at create and update, and again at delivery time — a stored name that now resolves to loopback
// (DNS rebinding) or an address stored before the rule reaches nothing: the receiver on 127.0.0.1 gets no request.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refusedReason } from '../../src/modules/webhook/address.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { expectInvalid } from '../helpers/assertions.ts';
import { Receiver } from '../helpers/webhook-receiver.ts';

let t: TestApp;
const receiver = new Receiver();

beforeAll(async () => {
  t = await createTestApp();
  await receiver.start();
}, 60_000);

afterAll(async () => {
  await t?.close();
  await receiver.stop();
});

const REFUSED = [
  'http://127.0.0.1/hook',
  'http://127.1.2.3:8080/hook',
  'http://[::1]/hook',
  'http://[::ffff:127.0.0.1]/hook',
  'http://[::ffff:a9fe:a9fe]/latest/meta-data',
  'http://10.0.0.1/hook',
  'http://172.16.5.4/hook',
  'http://192.168.1.1/hook',
  'http://169.254.169.254/latest/meta-data',
  'http://0.0.0.0/hook',
  'http://[::]/hook',
  'http://[fd00::1]/hook',
  'http://[fe80::1]/hook',
  'http://100.64.0.1/hook',
  'http://2130706433/hook', // 127.0.0.1 written as one number
  'http://0x7f.0.0.1/hook',
  'http://localhost/hook',
  'https://localhost:8443/hook',
];

describe('private receivers are refused', () => {
  it('at create and at update: 422 naming url, nothing stored', async () => {
    for (const url of [...REFUSED, receiver.url]) {
      expectInvalid(await t.admin('webhook/create', { url, events: ['*'] }), 'url');
    }
    expect(await t.services.db.selectFrom('webhooks').select('id').execute()).toEqual([]);
  });

  it('classifies addresses: private and reserved ranges refused, public ones allowed', () => {
    for (const address of ['127.0.0.1', '10.1.2.3', '169.254.169.254', '::1', '::', 'fe80::1', 'fc00::1', '::ffff:10.0.0.1', '224.0.0.1', '255.255.255.255']) {
      expect(refusedReason(address), address).not.toBeNull();
    }
    for (const address of ['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111', '172.32.0.1', '192.169.0.1']) {
      expect(refusedReason(address), address).toBeNull();
    }
  });

  it('at delivery time: an endpoint whose host now resolves to loopback gets nothing, and the delivery fails at once', async () => {
    // An endpoint stored while its name resolved to a public address (a public IP here, so create accepts it)…
    const created = await t.admin('webhook/create', { url: 'http://93.184.216.34/hook', events: ['client.created'] });
    expect(created.body.error).toBeNull();
    const id = created.result.id as number;
    const port = new URL(receiver.url).port;
    for (const [n, host] of [`localhost:${port}`, `127.0.0.1:${port}`, `[::ffff:127.0.0.1]:${port}`].entries()) {
      // …whose name now answers with loopback (DNS rebinding), or whose stored address is private.
      await t.services.db.updateTable('webhooks').set({ url: `http://${host}/hook` }).where('id', '=', id).execute();
      await t.createClient();
      await t.services.outbox.runDue();
      const list = (await t.admin('webhook/delivery_get_list', { webhook_id: id })).result.list;
      expect(list).toHaveLength(n + 1);
      expect(list[0]).toMatchObject({ status: 'failed', attempts: 1, last_status_code: null, last_error: expect.stringMatching(/^refused: .*(private|resolves)/) });
    }
    expect(receiver.received).toEqual([]);
  });

  it('update to a private URL is refused and leaves the endpoint as it was', async () => {
    const created = await t.admin('webhook/create', { url: 'https://93.184.216.34/hook', events: ['*'] });
    const id = created.result.id as number;
    expectInvalid(await t.admin('webhook/update', { id, url: 'http://169.254.169.254/' }), 'url');
    expect((await t.admin('webhook/get', { id })).result.url).toBe('https://93.184.216.34/hook');
  });
});
