// Issue 8 item 2: a numeric TRUST_PROXY is a hop count. With `1` only the nearest proxy is trusted: the caller is
// the right-most X-Forwarded-For entry, and whatever a client wrote to the left of it cannot dodge a per-IP limit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { expectError } from '../helpers/assertions.ts';

const LIMIT = 3;

describe('TRUST_PROXY values', () => {
  it.each([
    ['1', 1],
    ['2', 2],
    ['0', false],
    ['true', true],
    ['false', false],
    ['10.0.0.0/8,127.0.0.1', '10.0.0.0/8,127.0.0.1'],
  ])('TRUST_PROXY=%s → %s', (raw, expected) => {
    expect(loadConfig({ TRUST_PROXY: raw }).trustProxy).toBe(expected);
  });
});

describe.each([1, 2])('TRUST_PROXY=%i (hop count)', (hops) => {
  let t: TestApp;
  const proxy = '10.9.0.1';

  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_ENABLED: 'true', TRUST_PROXY: String(hops), RATE_LIMIT_API_GUEST: `${LIMIT}/60` });
  });
  afterAll(async () => {
    await t.close();
  });

  /** The X-Forwarded-For a client forging `forged` sends through `hops` proxies that each append what they saw. */
  function chain(forged: string, client: string): string {
    const seenByInnerProxies = ['10.9.1.1', '10.9.1.2'].slice(0, hops - 1);
    return [forged, client, ...seenByInnerProxies].join(', ');
  }

  it('forged left-most addresses do not dodge the per-IP limit', async () => {
    const client = '203.0.113.10';
    for (let i = 1; i <= LIMIT; i++) {
      const reply = await t.call('/api/guest/system/version', {}, { ip: proxy, headers: { 'x-forwarded-for': chain(`198.51.100.${i}`, client) } });
      expect(reply.status, `request ${i}`).toBe(200);
    }
    for (let i = 0; i < 3; i++) {
      const reply = await t.call('/api/guest/system/version', {}, { ip: proxy, headers: { 'x-forwarded-for': chain(`198.51.100.${50 + i}`, client) } });
      expectError(reply, 429);
    }
  });

  it('a different real client (the hop the proxies saw) keeps its own budget', async () => {
    const reply = await t.call('/api/guest/system/version', {}, { ip: proxy, headers: { 'x-forwarded-for': chain('203.0.113.10', '203.0.113.11') } });
    expect(reply.status).toBe(200);
  });

  it('a request without X-Forwarded-For is the proxy itself', async () => {
    for (let i = 1; i <= LIMIT; i++) expect((await t.call('/api/guest/system/version', {}, { ip: '10.9.0.2' })).status).toBe(200);
    expectError(await t.call('/api/guest/system/version', {}, { ip: '10.9.0.2', headers: { 'x-forwarded-for': '' } }), 429);
  });
});
