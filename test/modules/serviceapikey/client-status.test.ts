// A suspended or canceled client's API keys are invalid (issue 8, item 10): get_info answers
// `{valid: 0, reason: "CLIENT_INACTIVE"}`, check answers false, nothing is counted, and the keys validate again once the
// account is active. Every status change drops the client's keys from the key cache (warm caches are the point here:
// a cold read would find the new status anyway). Runs on SQLite, and on PostgreSQL (+ Redis) when TEST_* are set;
// the cross-process case is in test/processes/apikey.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../helpers/app.ts';

describe('API keys of a client whose account is not active', () => {
  let t: TestApp;
  let plan: number;

  const check = async (key: string) => (await t.call('/api/guest/serviceapikey/check', { key })).result as boolean;
  const info = async (key: string) => (await t.call('/api/guest/serviceapikey/get_info', { key })).result;
  const setStatus = async (clientId: number, status: string) => {
    const reply = await t.admin('client/update', { id: clientId, status });
    expect(reply.body).toEqual({ result: true, error: null });
    expect((await t.admin('client/get', { id: clientId })).result.status).toBe(status);
  };

  async function keyFor(clientId: number): Promise<{ orderId: number; key: string }> {
    const created = await t.admin('order/create', { client_id: clientId, product_id: plan, activate: true });
    expect(created.status).toBe(200);
    const orderId = created.result as number;
    const key = (await t.admin('serviceapikey/get', { order_id: orderId })).result.api_key as string;
    return { orderId, key };
  }

  /** Answers from a warm cache: the record is cached, so only an invalidation can change the next answer. */
  async function warm(key: string): Promise<void> {
    for (let i = 0; i < 3; i++) expect(await check(key)).toBe(true);
    expect(t.services.apikeys.internals.cache.get(t.services.secrets.hash(key), Date.now())).toBeTruthy();
  }

  beforeAll(async () => {
    t = await createTestApp();
    plan = (await t.admin('product/prepare', { title: 'API', type: 'apikey' })).result as number;
    const updated = await t.admin('product/update', { id: plan, status: 'enabled', config: { custom: { tier: 'pro', monthlyLimit: 100 } } });
    expect(updated.result).toBe(true);
  });
  afterAll(async () => {
    await t.close();
  });

  for (const status of ['suspended', 'canceled'] as const) {
    it(`a ${status} client's keys are invalid (CLIENT_INACTIVE) at once, count nothing, and validate again on reactivation`, async () => {
      const client = await t.createClient();
      const { orderId, key } = await keyFor(client.id);
      const second = await keyFor(client.id);
      await warm(key);
      await warm(second.key);
      const usedBefore = (await info(key)).usage.used as number;

      await setStatus(client.id, status);
      for (const k of [key, second.key]) {
        expect(await check(k)).toBe(false);
        const answer = await info(k);
        expect(answer).toMatchObject({ valid: 0, config: null, reason: 'CLIENT_INACTIVE' });
        expect(answer.usage).toMatchObject({ limit: 100 });
      }
      // Invalid calls count nothing.
      expect((await info(key)).usage.used).toBe(usedBefore);

      // Staff see why: the switch is still on, the reason is the account.
      const got = (await t.admin('serviceapikey/get', { order_id: orderId })).result;
      expect(got).toMatchObject({ valid: 1, reason: 'CLIENT_INACTIVE', config: { tier: 'pro', monthlyLimit: 100 } });
      const service = (await t.admin('order/service', { id: orderId })).result;
      expect(service).toMatchObject({ status: 'active', api_key: key, valid: 1, reason: 'CLIENT_INACTIVE' });
      // The inactive client cannot log in to look, with its token or otherwise.
      expect((await t.call('/api/client/serviceapikey/get_list', {}, { basic: ['client', client.token] })).status).toBe(401);

      await setStatus(client.id, 'active');
      for (const k of [key, second.key]) {
        expect(await check(k)).toBe(true);
        expect(await info(k)).toMatchObject({ valid: 1, config: { tier: 'pro', monthlyLimit: 100 }, reason: 'VALID' });
      }
      // check + get_info above, and this get_info: three uses since the account came back.
      expect((await info(key)).usage.used).toBe(usedBefore + 3);
      expect((await t.admin('serviceapikey/get', { order_id: orderId })).result.reason).toBe('VALID');
      const list = await t.call('/api/client/serviceapikey/get_list', {}, { basic: ['client', client.token] });
      expect(list.result.list.map((row: { reason: string }) => row.reason)).toEqual(['VALID', 'VALID']);
    });
  }

  it('stays invalid from suspended to canceled, and validates again only when active', async () => {
    const client = await t.createClient();
    const { key } = await keyFor(client.id);
    await warm(key);
    await setStatus(client.id, 'suspended');
    expect(await check(key)).toBe(false);
    await setStatus(client.id, 'canceled');
    expect(await check(key)).toBe(false);
    expect((await info(key)).reason).toBe('CLIENT_INACTIVE');
    // A profile change of the inactive client changes nothing.
    expect((await t.admin('client/update', { id: client.id, first_name: 'Renamed' })).result).toBe(true);
    expect(await check(key)).toBe(false);
    await setStatus(client.id, 'active');
    expect(await check(key)).toBe(true);
    // Setting `active` again on an active client keeps the key valid.
    await setStatus(client.id, 'active');
    expect(await check(key)).toBe(true);
  });

  it("leaves other clients' keys alone", async () => {
    const suspended = await t.createClient();
    const bystander = await t.createClient();
    const mine = await keyFor(suspended.id);
    const theirs = await keyFor(bystander.id);
    await warm(mine.key);
    await warm(theirs.key);
    const theirHash = t.services.secrets.hash(theirs.key);
    await setStatus(suspended.id, 'suspended');
    expect(await check(mine.key)).toBe(false);
    // The bystander's record was not even dropped from the cache.
    expect(t.services.apikeys.internals.cache.get(theirHash, Date.now())).toBeTruthy();
    expect(await check(theirs.key)).toBe(true);
    await setStatus(suspended.id, 'active');
  });

  it('reports the administrator switch first, then the account, then the order', async () => {
    const client = await t.createClient();
    const { orderId, key } = await keyFor(client.id);
    await setStatus(client.id, 'suspended');
    expect((await t.admin('serviceapikey/update', { order_id: orderId, valid: 0 })).result).toBe(true);
    expect((await info(key)).reason).toBe('DISABLED');
    expect((await t.admin('serviceapikey/update', { order_id: orderId, valid: 1 })).result).toBe(true);
    expect((await t.admin('order/suspend', { id: orderId })).result).toBe(true);
    expect((await info(key)).reason).toBe('CLIENT_INACTIVE');
    await setStatus(client.id, 'active');
    expect((await info(key)).reason).toBe('NOT_ACTIVE');
    expect((await t.admin('order/unsuspend', { id: orderId })).result).toBe(true);
    expect((await info(key)).reason).toBe('VALID');
  });

  it('ends up matching the final status when suspensions and reactivations race', async () => {
    const client = await t.createClient();
    const { key } = await keyFor(client.id);
    for (let round = 0; round < 5; round++) {
      await warm(key);
      const replies = await Promise.all([
        t.admin('client/update', { id: client.id, status: 'suspended' }),
        t.admin('client/update', { id: client.id, status: 'active' }),
        t.admin('client/update', { id: client.id, status: 'canceled' }),
        t.admin('client/update', { id: client.id, status: round % 2 === 0 ? 'active' : 'suspended' }),
      ]);
      for (const reply of replies) expect(reply.body).toEqual({ result: true, error: null });
      const final = (await t.admin('client/get', { id: client.id })).result.status as string;
      // Read twice: the first answer may fill the cache, the second must come from it and agree.
      expect(await check(key)).toBe(final === 'active');
      expect(await check(key)).toBe(final === 'active');
      await setStatus(client.id, 'active');
    }
  });
});
