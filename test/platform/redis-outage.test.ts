// Rate limits over Redis keep working, per process, while Redis is unreachable (here: nothing listens on the port).
import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisCounterStore } from '../../src/platform/counters/store.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';

async function closedPort(): Promise<number> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('rate limits while Redis is down', () => {
  let t: TestApp;
  let port: number;
  const warnings: string[] = [];

  beforeAll(async () => {
    port = await closedPort();
    t = await createTestApp({ REDIS_URL: `redis://127.0.0.1:${port}`, RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_LOGIN: '2/60' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('the store falls back to memory counters and warns once', async () => {
    const store = new RedisCounterStore(`redis://127.0.0.1:${port}`, 'outage:', (message) => warnings.push(message));
    try {
      expect(await store.incr('k', 60_000)).toMatchObject({ count: 1 });
      expect(await store.incr('k', 60_000)).toMatchObject({ count: 2 });
      expect(await store.get('k')).toMatchObject({ count: 2 });
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(warnings.length).toBeLessThanOrEqual(1);
    } finally {
      await store.close();
    }
  });

  it('calls are still answered, and still limited, instead of failing with 500', async () => {
    expect((await t.call('/api/guest/system/version', {})).status).toBe(200);
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await t.call('/api/guest/staff/login', { email: 'x@example.com', password: 'nope' }, { ip: '10.9.9.9' })).status);
    expect(statuses).toEqual([401, 401, 429]);
  });
});
