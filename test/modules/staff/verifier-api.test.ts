// Verifier credentials (CONTRACT §11, issue 11): admin/serviceapikey/check and get_info with `ip`, report_usage,
// permissions, the per-ip failed-lookup budget and the events stream over a real socket.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { expectError, expectInvalid } from '../../helpers/assertions.ts';
import { staffToken } from '../../helpers/apikey.ts';

async function createPlan(t: TestApp, config: Record<string, unknown>): Promise<number> {
  const id = (await t.admin('product/prepare', { title: 'API plan', type: 'apikey' })).result as number;
  expect((await t.admin('product/update', { id, status: 'enabled', config })).result).toBe(true);
  return id;
}

async function issueKey(t: TestApp, productId: number, clientId: number): Promise<{ orderId: number; key: string }> {
  const orderId = (await t.admin('order/create', { client_id: clientId, product_id: productId, activate: true })).result as number;
  return { orderId, key: (await t.admin('serviceapikey/get', { order_id: orderId })).result.api_key as string };
}


describe('verifier actions', () => {
  let t: TestApp;
  let plan: number;
  let token: string;
  let clientId: number;
  const verify = (action: string, params: Record<string, unknown>, as = token, ip?: string) =>
    t.call(`/api/admin/serviceapikey/${action}`, params, { basic: ['admin', as], ...(ip !== undefined && { ip }) });

  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_ENABLED: 'true' });
    plan = await createPlan(t, { custom: { tier: 'pro', monthlyLimit: 1000 } });
    clientId = (await t.createClient()).id;
    token = await staffToken(t, ['serviceapikey.check']);
  });
  afterAll(async () => {
    await t.close();
  });

  it('answers check and get_info like the guest actions, plus order_id and key_id, and counts uses', async () => {
    const { orderId, key } = await issueKey(t, plan, clientId);
    expect((await verify('check', { key, ip: '203.0.113.5' })).body).toEqual({ result: true, error: null });
    const info = await verify('get_info', { key, ip: '203.0.113.5' });
    expect(info.result).toMatchObject({ valid: 1, reason: 'VALID', config: { tier: 'pro', monthlyLimit: 1000 }, order_id: orderId });
    expect(info.result.key_id).toEqual(expect.any(Number));
    expect(info.result.usage).toMatchObject({ used: 2, limit: 1000, remaining: 998 });
    expect((await verify('check', { key: 'FFFFFFFF-FFFFFFFF-FFFFFFFF-FFFFFFFF' })).result).toBe(false);
    expect((await verify('get_info', { key: 'nope' })).result).toMatchObject({ valid: 0, reason: 'NOT_FOUND', order_id: null, key_id: null });
    await t.admin('serviceapikey/update', { order_id: orderId, valid: false });
    expect((await verify('check', { key })).result).toBe(false);
    expect((await verify('get_info', { key })).result).toMatchObject({ valid: 0, reason: 'DISABLED', order_id: orderId });
    await t.services.apikeys.flushUsage();
    expect((await t.admin('serviceapikey/usage', { order_id: orderId })).result.total).toBe(2);
  });

  it('refuses bad parameters with 422', async () => {
    expectInvalid(await verify('check', {}), 'key');
    expectInvalid(await verify('check', { key: 5 }), 'key');
    expectInvalid(await verify('check', { key: 'x', ip: 'not an ip!' }), 'ip');
    expectInvalid(await verify('get_info', { key: 'x', ip: 7 }), 'ip');
  });

  it('refuses staff without serviceapikey.check (403), clients (401) and no credentials (401)', async () => {
    const other = await staffToken(t, ['serviceapikey.manage']);
    for (const action of ['check', 'get_info']) expectError(await verify(action, { key: 'x' }, other), 403);
    expectError(await verify('report_usage', { batch_id: 'b', usage: [] }, other), 403);
    const client = await t.createClient();
    expect((await t.call('/api/admin/serviceapikey/check', { key: 'x' }, { basic: ['client', client.token] })).status).toBe(401);
    expectError(await t.call('/api/admin/serviceapikey/check', { key: 'x' }), 201, 401);
    // Administrators hold every permission, the verifier one included.
    expect((await t.admin('serviceapikey/check', { key: 'x' })).result).toBe(false);
  });

  it('a verifier passing 1,000 bad keys for one ip blocks that ip only', async () => {
    const { key } = await issueKey(t, plan, clientId);
    const statuses = new Map<number, number>();
    for (let i = 0; i < 1000; i += 50) {
      const replies = await Promise.all(Array.from({ length: 50 }, (_, j) => verify('check', { key: `BAD-${i + j}`, ip: '198.51.100.7' })));
      for (const reply of replies) statuses.set(reply.status, (statuses.get(reply.status) ?? 0) + 1);
    }
    expect(statuses.get(200)).toBe(60);
    expect(statuses.get(429)).toBe(940);
    const blocked = await verify('check', { key, ip: '198.51.100.7' });
    expectError(blocked, 429);
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
    // Other end users of the same app server, and calls naming no ip, keep answering.
    for (let i = 0; i < 20; i++) expect((await verify('check', { key, ip: `198.51.100.${100 + i}` })).result).toBe(true);
    expect((await verify('get_info', { key, ip: '2001:db8::1' })).result.valid).toBe(1);
    expect((await verify('check', { key })).result).toBe(true);
    // The app server's own address was never counted: a guest check from it still answers.
    expect((await t.call('/api/guest/serviceapikey/check', { key })).result).toBe(true);
  }, 120_000);

  it('counts no API_AUTHENTICATED budget: 3,010 verifier calls from one account all answer', async () => {
    const { key } = await issueKey(t, plan, clientId);
    let refused = 0;
    for (let i = 0; i < 3010; i += 100) {
      const replies = await Promise.all(Array.from({ length: Math.min(100, 3010 - i) }, () => verify('check', { key })));
      refused += replies.filter((reply) => reply.status !== 200).length;
    }
    expect(refused).toBe(0);
  }, 180_000);
});

describe('the verifier limit API_KEY_CHECK_VERIFIER', () => {
  it('is per account and answers 429 with Retry-After', async () => {
    const t = await createTestApp({ RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_API_KEY_CHECK_VERIFIER: '3/60' });
    try {
      const first = await staffToken(t, ['serviceapikey.check']);
      const second = await staffToken(t, ['serviceapikey.check']);
      const call = (as: string) => t.call('/api/admin/serviceapikey/check', { key: 'x', ip: '192.0.2.1' }, { basic: ['admin', as] });
      for (let i = 0; i < 3; i++) expect((await call(first)).status).toBe(200);
      const over = await call(first);
      expectError(over, 429);
      expect(over.headers['retry-after']).toBeDefined();
      expect((await call(second)).status).toBe(200);
    } finally {
      await t.close();
    }
  });
});

describe('report_usage', () => {
  let t: TestApp;
  let token: string;
  let keyId: number;
  let orderId: number;
  let otherKeyId: number;
  const report = (params: Record<string, unknown>, as = token) => t.call('/api/admin/serviceapikey/report_usage', params, { basic: ['admin', as] });
  const total = async (order = orderId) => {
    await t.services.apikeys.flushUsage();
    return (await t.admin('serviceapikey/usage', { order_id: order })).result.total as number;
  };

  beforeAll(async () => {
    t = await createTestApp();
    const plan = await createPlan(t, { enforce_limit: true, custom: { monthlyLimit: 50 } });
    const clientId = (await t.createClient()).id;
    token = await staffToken(t, ['serviceapikey.check']);
    const issued = await issueKey(t, plan, clientId);
    orderId = issued.orderId;
    keyId = (await t.admin('serviceapikey/get_info', { key: issued.key })).result.key_id as number;
    const other = await issueKey(t, plan, clientId);
    otherKeyId = (await t.admin('serviceapikey/get_info', { key: other.key })).result.key_id as number;
  });
  afterAll(async () => {
    await t.close();
  });

  it('adds the uses once per batch id, also when the same batch arrives twice at once', async () => {
    const before = await total();
    expect((await report({ batch_id: 'batch-1', usage: [{ key_id: keyId, count: 5 }] })).body).toEqual({ result: true, error: null });
    expect(await total()).toBe(before + 5);
    expect((await report({ batch_id: 'batch-1', usage: [{ key_id: keyId, count: 5 }] })).result).toBe(true);
    expect(await total()).toBe(before + 5);
    const replies = await Promise.all(Array.from({ length: 10 }, () => report({ batch_id: 'batch-2', usage: [{ key_id: keyId, count: 3 }, { key_id: otherKeyId, count: 1 }] })));
    expect(replies.map((reply) => reply.status)).toEqual(Array(10).fill(200));
    expect(await total()).toBe(before + 8);
    expect((await report({ batch_id: 'batch-empty', usage: [] })).result).toBe(true);
  });

  it('refuses bad counts and unknown keys with 422 and adds nothing (all or nothing)', async () => {
    const before = await total();
    const bad: Array<[Record<string, unknown>, string]> = [
      [{ usage: [] }, 'batch_id'],
      [{ batch_id: 'b', usage: 'x' }, 'usage'],
      [{ batch_id: '', usage: [] }, 'batch_id'],
      [{ batch_id: 'has space', usage: [] }, 'batch_id'],
      [{ batch_id: 'b', usage: [{ key_id: keyId, count: -1 }] }, 'usage.0.count'],
      [{ batch_id: 'b', usage: [{ key_id: keyId, count: 0 }] }, 'usage.0.count'],
      [{ batch_id: 'b', usage: [{ key_id: keyId, count: 1.5 }] }, 'usage.0.count'],
      [{ batch_id: 'b', usage: [{ key_id: keyId, count: 1e12 }] }, 'usage.0.count'],
      [{ batch_id: 'b', usage: [{ key_id: keyId, count: '2' }, { key_id: 'k', count: 1 }] }, 'usage.1.key_id'],
      [{ batch_id: 'b', usage: [{ key_id: keyId, count: 2 }, { key_id: 999_999, count: 1 }] }, 'usage.1.key_id'],
    ];
    for (const [params, name] of bad) expectInvalid(await report(params), name);
    expect(await total()).toBe(before);
    // The refused batch id was not recorded: the corrected batch under the same id counts.
    expect((await report({ batch_id: 'b', usage: [{ key_id: keyId, count: 2 }] })).result).toBe(true);
    expect(await total()).toBe(before + 2);
  });

  it('reported uses count towards an enforced limit', async () => {
    const used = await total();
    expect((await report({ batch_id: 'fill', usage: [{ key_id: keyId, count: 50 - used }] })).result).toBe(true);
    const key = (await t.admin('serviceapikey/get', { order_id: orderId })).result.api_key as string;
    expect((await t.admin('serviceapikey/get_info', { key })).result).toMatchObject({ valid: 0, reason: 'LIMIT_EXCEEDED' });
  });
});

interface Sse {
  response: IncomingMessage;
  text: () => string;
  /** Waits until the stream's text matches. */
  until: (pattern: RegExp, ms?: number) => Promise<string>;
  close: () => void;
}

function openStream(base: string, token: string, headers: Record<string, string> = {}): Promise<Sse> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(`${base}/api/admin/serviceapikey/events`, {
      headers: { authorization: `Basic ${Buffer.from(`admin:${token}`).toString('base64')}`, ...headers },
    });
    request.on('error', reject);
    request.on('response', (response) => {
      let text = '';
      const waiters = new Set<() => void>();
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        text += chunk;
        for (const waiter of waiters) waiter();
      });
      response.on('error', () => undefined);
      resolve({
        response,
        text: () => text,
        until: (pattern, ms = 3000) =>
          new Promise((done, fail) => {
            const check = (): void => {
              const match = pattern.exec(text);
              if (match !== null) {
                waiters.delete(check);
                clearTimeout(timer);
                done(match[0]);
              }
            };
            const timer = setTimeout(() => {
              waiters.delete(check);
              fail(new Error(`timed out waiting for ${pattern} in ${JSON.stringify(text)}`));
            }, ms);
            waiters.add(check);
            check();
          }),
        close: () => request.destroy(),
      });
    });
    request.end();
  });
}

describe('the events stream', () => {
  let t: TestApp;
  let base: string;
  let token: string;
  let plan: number;
  let clientId: number;

  beforeAll(async () => {
    t = await createTestApp({ EVENTS_KEEPALIVE_MS: '100' });
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
    plan = await createPlan(t, {});
    clientId = (await t.createClient()).id;
    token = await staffToken(t, ['serviceapikey.check']);
  });
  afterAll(async () => {
    await t.close();
  });

  it('refuses staff without serviceapikey.check (403) and no credentials (401), in the envelope', async () => {
    const other = await staffToken(t, ['serviceapikey.manage']);
    const denied = await fetch(`${base}/api/admin/serviceapikey/events`, { headers: { authorization: `Basic ${Buffer.from(`admin:${other}`).toString('base64')}` } });
    expect(denied.status).toBe(403);
    expect(await denied.json()).toMatchObject({ result: null, error: { code: 403 } });
    const anonymous = await fetch(`${base}/api/admin/serviceapikey/events`);
    expect(anonymous.status).toBe(401);
    const wrong = await fetch(`${base}/api/admin/serviceapikey/events`, { headers: { authorization: `Basic ${Buffer.from('admin:wrongtoken').toString('base64')}` } });
    expect(wrong.status).toBe(401);
  });

  it('ends an open stream within a keep-alive once its verifier token is rotated or revoked, or its group loses the permission', async () => {
    const ended = (stream: Sse): Promise<void> => new Promise((done) => (stream.response.complete ? done() : stream.response.once('end', done)));
    const made = async () => (await t.admin('staff/verifier_create', { name: 'Stream' })).result as { id: number; token: string };
    const rotatedAway = await made();
    const revoked = await made();
    const streams = [await openStream(base, rotatedAway.token), await openStream(base, revoked.token), await openStream(base, token)];
    try {
      for (const stream of streams) await stream.until(/: keep-alive\n\n/);
      await t.admin('staff/verifier_rotate', { id: rotatedAway.id });
      await t.admin('staff/verifier_revoke', { id: revoked.id });
      const deadline = new Promise((_, fail) => setTimeout(() => fail(new Error('a stream stayed open')), 3000));
      await Promise.race([Promise.all([ended(streams[0]!), ended(streams[1]!)]), deadline]);
      // The untouched verifier's stream stays open, keep-alives and all.
      const length = streams[2]!.text().length;
      await expect.poll(() => streams[2]!.text().length, { timeout: 2000 }).toBeGreaterThan(length);
      expect(streams[2]!.response.complete).toBe(false);
      // A group that no longer grants serviceapikey.check ends its members' streams too.
      const group = await t.services.staff.createGroup('Verifiers for a while', ['serviceapikey.check']);
      const member = await t.services.staff.create({ email: 'stream-member@example.com', password: 'Stream-Passw0rd', name: 'M', admin_group_id: group });
      const memberStream = await openStream(base, member.apiToken);
      streams.push(memberStream);
      await memberStream.until(/: keep-alive\n\n/);
      await t.admin('staff/group_update', { id: group, permissions: ['serviceapikey.manage'] });
      await Promise.race([ended(memberStream), new Promise((_, fail) => setTimeout(() => fail(new Error('the stream stayed open')), 3000))]);
    } finally {
      for (const stream of streams) stream.close();
    }
  });

  it('sends one key.changed event per change with an id, and keep-alive comments', async () => {
    const stream = await openStream(base, token);
    try {
      expect(stream.response.statusCode).toBe(200);
      expect(stream.response.headers['content-type']).toContain('text/event-stream');
      await stream.until(/: keep-alive\n\n/);
      const { orderId } = await issueKey(t, plan, clientId);
      const issued = JSON.parse((await stream.until(new RegExp(`data: (\\{[^\\n]*"order_id":${orderId}[^\\n]*\\})`))).slice(6)) as Record<string, unknown>;
      expect(issued).toEqual({ type: 'key.changed', order_id: orderId, key_id: expect.any(Number) });
      const count = () => stream.text().split(`"order_id":${orderId},`).length - 1;
      const before = count();
      await t.admin('serviceapikey/update', { order_id: orderId, valid: false });
      await t.admin('serviceapikey/update', { order_id: orderId, config: { tier: 'x' } });
      await t.admin('serviceapikey/reset', { order_id: orderId, valid: true }).catch(() => undefined);
      await t.admin('order/suspend', { id: orderId });
      await t.admin('order/cancel', { id: orderId });
      await t.admin('order/delete', { id: orderId });
      await expect.poll(count, { timeout: 3000 }).toBeGreaterThanOrEqual(before + 5);
      expect(stream.text()).toMatch(/id: [0-9a-f]{12}-\d+\ndata: /);
      // No key ever travels on the stream.
      expect(stream.text()).not.toMatch(/[0-9A-F]{8}-[0-9A-F]{8}/);
    } finally {
      stream.close();
    }
  });

  // One process on SQLite without Redis has no cross-process channel to lose: this runs with PostgreSQL or Redis.
  const withChannel = Boolean(process.env.TEST_DATABASE_URL) || Boolean(process.env.TEST_REDIS_URL);
  it.skipIf(!withChannel)('sends resync when the cross-process channel lost its connection (messages may be lost)', async () => {
    const channel = t.services.apikeys.internals.channel;
    expect(channel.kind).not.toBe('local');
    const stream = await openStream(base, token);
    try {
      await stream.until(/: connected/);
      await expect.poll(() => t.services.apikeys.internals.cache.trusted, { timeout: 5000 }).toBe(true);
      const before = stream.text().split('"resync"').length;
      // Drop the listener's connection the way a network failure would; it reconnects by itself.
      if (channel.kind === 'redis') (channel as unknown as { subscriber: { disconnect(reconnect: boolean): void } }).subscriber.disconnect(true);
      else await (channel as unknown as { client: { end(): Promise<void> } }).client.end();
      await expect.poll(() => stream.text().split('"resync"').length, { timeout: 5000 }).toBeGreaterThan(before);
      // And changes reach the stream again afterwards.
      const { orderId } = await issueKey(t, plan, clientId);
      await stream.until(new RegExp(`"order_id":${orderId}`));
    } finally {
      stream.close();
    }
  });

  it('cuts a client that stopped reading instead of buffering for it without end', async () => {
    const hub = t.services.apikeys.keyEvents();
    const url = new URL(base);
    const socket = connect(Number(url.port), url.hostname);
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(`GET /api/admin/serviceapikey/events HTTP/1.1\r\nHost: x\r\nAuthorization: Basic ${Buffer.from(`admin:${token}`).toString('base64')}\r\n\r\n`);
    await new Promise((resolve) => socket.once('data', resolve));
    socket.pause();
    const subscribers = hub.size;
    expect(subscribers).toBeGreaterThan(0);
    let closed = false;
    socket.on('close', () => {
      closed = true;
    });
    for (let i = 0; i < 300_000; i++) hub.publish({ keyId: i + 1, orderId: i + 1 });
    await expect.poll(() => hub.size, { timeout: 5000 }).toBe(subscribers - 1);
    socket.resume();
    await expect.poll(() => closed, { timeout: 5000 }).toBe(true);
  });

  it('replays what a reconnecting client missed (Last-Event-ID), or sends resync when it cannot', async () => {
    const first = await openStream(base, token);
    const { orderId } = await issueKey(t, plan, clientId);
    const frame = await first.until(new RegExp(`id: (\\S+)\\ndata: [^\\n]*"order_id":${orderId}`));
    const lastId = /id: (\S+)/.exec(frame)![1]!;
    first.close();
    await t.admin('serviceapikey/update', { order_id: orderId, valid: false });
    await t.admin('serviceapikey/update', { order_id: orderId, valid: true });
    const again = await openStream(base, token, { 'last-event-id': lastId });
    try {
      await again.until(/data: [^\n]*key\.changed[^\n]*\n\n[\s\S]*data: [^\n]*key\.changed/);
      expect(again.text().split(`"order_id":${orderId},`).length - 1).toBe(2);
      expect(again.text()).not.toContain('resync');
    } finally {
      again.close();
    }
    for (const unknown of ['000000000000-5', 'garbage']) {
      const stale = await openStream(base, token, { 'last-event-id': unknown });
      try {
        await stale.until(/data: \{"type":"resync"\}/);
      } finally {
        stale.close();
      }
    }
  });
});
