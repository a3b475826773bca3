// The key check's rate-limit counters: counted in process, shared in batches (src/platform/counters/batched.ts). The first
// suite drives the store over a backend it can switch off; the second runs the real check over a real Redis
// reached through a TCP proxy this test cuts and restores under load.
import { randomBytes } from 'node:crypto';
import { createServer, connect, type Server, type Socket, type AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { MemoryCounterStore, RedisCounterStore, type Hit } from '../../src/platform/counters/store.ts';
import { BatchedCounterStore, CONFIRM_WAIT_MS, RedisCounterBackend, type CounterBackend, type CounterBatchItem } from '../../src/platform/counters/batched.ts';
import { COUNTER_COMMAND_TIMEOUT_MS } from '../../src/platform/counters/redis.ts';
import { KeyRateLimiter } from '../../src/modules/serviceapikey/check/key-rate.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';

/** A shared store in memory that can be made unreachable, slow, or stalled (never answering). */
class FakeBackend implements CounterBackend {
  readonly totals = new Map<string, number>();
  down = false;
  delayMs = 0;
  /** While set, batches wait for it: the store stalls until the test resolves it. */
  stall: Promise<void> | null = null;
  async addAll(items: readonly CounterBatchItem[]): Promise<Hit[]> {
    await (this.delayMs > 0 ? new Promise((resolve) => setTimeout(resolve, this.delayMs)) : Promise.resolve());
    if (this.stall !== null) await this.stall;
    if (this.down) throw new Error('unreachable');
    return items.map((item) => {
      const count = (this.totals.get(item.key) ?? 0) + item.add;
      this.totals.set(item.key, count);
      return { count, resetMs: item.windowMs };
    });
  }
  async close(): Promise<void> {}
}

describe('BatchedCounterStore', () => {
  it('counts without waiting, and each process sees the shared total after a sync', async () => {
    const backend = new FakeBackend();
    const a = new BatchedCounterStore(backend, () => undefined, 60_000);
    const b = new BatchedCounterStore(backend, () => undefined, 60_000);
    try {
      for (let i = 1; i <= 3; i++) expect(a.incr('k', 60_000)).toMatchObject({ count: i });
      expect(b.incr('k', 60_000)).toMatchObject({ count: 1 });
      expect(backend.totals.get('k')).toBeUndefined();
      await a.sync();
      await b.sync();
      expect(backend.totals.get('k')).toBe(4);
      // a synced before b's hit arrived; b synced after a's: b knows all four, a learns them at its next sync.
      expect(b.get('k')).toMatchObject({ count: 4 });
      expect(a.incr('k', 60_000)).toMatchObject({ count: 4 });
      await a.sync();
      expect(a.get('k')).toMatchObject({ count: 5 });
      expect(backend.totals.get('k')).toBe(5);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('keeps counting while the backend is down, warns once, and hands every hit over once it is back', async () => {
    const backend = new FakeBackend();
    const warnings: string[] = [];
    const store = new BatchedCounterStore(backend, (message) => warnings.push(message), 60_000);
    try {
      store.incr('k', 60_000);
      await store.sync();
      backend.down = true;
      for (let i = 0; i < 10; i++) {
        store.incr('k', 60_000);
        await store.sync();
      }
      expect(store.get('k')).toMatchObject({ count: 11 });
      expect(backend.totals.get('k')).toBe(1);
      expect(warnings).toHaveLength(1);
      backend.down = false;
      await store.sync();
      expect(backend.totals.get('k')).toBe(11);
      expect(store.get('k')).toMatchObject({ count: 11 });
      expect(warnings).toHaveLength(2);
      expect(store.failures).toBe(10);
    } finally {
      await store.close();
    }
  });

  it('drops the hits of a window that ended before they could be sent', async () => {
    const backend = new FakeBackend();
    const store = new BatchedCounterStore(backend, () => undefined, 60_000);
    try {
      backend.down = true;
      store.incr('k', 20);
      await store.sync();
      await new Promise((resolve) => setTimeout(resolve, 30));
      expect(store.get('k')).toBeNull();
      expect(store.incr('k', 60_000)).toMatchObject({ count: 1 });
      backend.down = false;
      await store.sync();
      expect(backend.totals.get('k')).toBe(1);
    } finally {
      await store.close();
    }
  });
});

const RATE = { limit: 100, window_seconds: 60 };

/** One call of order 1's keys as the check makes it (service.ts `useThen`): wait while asked to, then count. */
async function keyCall(limiter: KeyRateLimiter): Promise<boolean> {
  for (;;) {
    const wait = limiter.confirmation(1, RATE);
    if (wait === null) return limiter.hit(1, RATE) === null;
    await wait;
  }
}

/** `connections` callers on each process, one call after another until `ms` have passed; accepted calls in all. */
async function hammerKey(limiters: KeyRateLimiter[], connections: number, ms: number): Promise<number> {
  const until = Date.now() + ms;
  let accepted = 0;
  const caller = async (limiter: KeyRateLimiter) => {
    while (Date.now() < until) {
      if (await keyCall(limiter)) accepted++;
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  await Promise.all(limiters.flatMap((limiter) => Array.from({ length: connections }, () => caller(limiter))));
  return accepted;
}

describe('per-key rate limit over a slow shared store (key-rate.ts)', () => {
  it('never holds more than a tenth of the limit unconfirmed: two processes accept at most limit + limit/10, however slow the round trip', async () => {
    const backend = new FakeBackend();
    backend.delayMs = 30;
    const stores = [new BatchedCounterStore(backend, () => undefined, 60_000), new BatchedCounterStore(backend, () => undefined, 60_000)];
    try {
      const accepted = await hammerKey(stores.map((store) => new KeyRateLimiter(store)), 10, 600);
      // Without the wait each process counts on during the 30 ms round trips: close to the limit each (checked).
      expect(accepted).toBeGreaterThanOrEqual(RATE.limit);
      expect(accepted).toBeLessThanOrEqual(RATE.limit + RATE.limit / 10);
      await Promise.all(stores.map((store) => store.sync()));
      expect(backend.totals.get('KEY_RATE:1')).toBe(accepted);
    } finally {
      await Promise.all(stores.map((store) => store.close()));
    }
  });

  it('keeps each order to its own counter when calls of several orders interleave', async () => {
    const store = new MemoryCounterStore();
    const limiter = new KeyRateLimiter(store);
    const two = { limit: 2, window_seconds: 60 };
    try {
      const answers = [1, 2, 1, 2, 1, 2, 3].map((order) => limiter.hit(order, two) === null);
      expect(answers).toEqual([true, true, true, true, false, false, true]);
    } finally {
      await store.close();
    }
  });

  it('does not wait while the shared store is unreachable, and stops waiting for one that stalls', async () => {
    const backend = new FakeBackend();
    const warnings: string[] = [];
    const store = new BatchedCounterStore(backend, (message) => warnings.push(message), 60_000);
    const limiter = new KeyRateLimiter(store);
    let release = () => undefined as void;
    try {
      backend.down = true;
      for (let i = 0; i < 10; i++) expect(await keyCall(limiter)).toBe(true);
      await store.sync();
      // Down (the last sync failed): every call is judged at once from the local count.
      expect(limiter.confirmation(1, RATE)).toBeNull();
      for (let i = 0; i < 20; i++) expect(await keyCall(limiter)).toBe(true);

      backend.down = false;
      // The first may be a batch already in flight to the unreachable store; the second then gets through.
      await store.sync();
      await store.sync();
      expect(backend.totals.get('KEY_RATE:1')).toBe(30);
      backend.stall = new Promise<void>((resolve) => (release = resolve));
      for (let i = 0; i < 10; i++) expect(await keyCall(limiter)).toBe(true);
      const started = Date.now();
      // A tenth unconfirmed behind a sync that never answers: the call waits CONFIRM_WAIT_MS, then is judged here.
      expect(await keyCall(limiter)).toBe(true);
      expect(Date.now() - started).toBeGreaterThanOrEqual(CONFIRM_WAIT_MS - 5);
      expect(Date.now() - started).toBeLessThan(CONFIRM_WAIT_MS * 3);
      expect(limiter.confirmation(1, RATE)).toBeNull();
      // Given up on once, and said so once, without a secret or a key in the line.
      expect(store.givenUp).toBe(1);
      expect(warnings.filter((line) => line.includes('has not answered'))).toHaveLength(1);
      // Refused without waiting once the local count reaches the limit.
      for (let i = 0; i < 59; i++) expect(await keyCall(limiter)).toBe(true);
      expect(await keyCall(limiter)).toBe(false);
    } finally {
      backend.stall = null;
      release();
      await store.close();
    }
  });
});

describe('BatchedCounterStore: a process held up is not a store stalled', () => {
  let server: Server;
  let client: Socket;
  let serverSide: Socket;
  beforeAll(async () => {
    server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const accepted = new Promise<Socket>((resolve) => server.once('connection', resolve));
    client = connect((server.address() as AddressInfo).port, '127.0.0.1');
    serverSide = await accepted;
  });
  afterAll(async () => {
    client.destroy();
    serverSide.destroy();
    await new Promise((resolve) => server.close(resolve));
  });

  it('reads an answer that arrived while this process was busy before giving up on its sync', async () => {
    // A backend whose answers come over a real socket, written by the test: the answer can be sitting in the
    // socket, unread, while this process is busy.
    let closing = false;
    let sentAt = 0;
    let readAt = 0;
    const backend: CounterBackend = {
      addAll: (items) => {
        if (closing) return Promise.resolve(items.map((item) => ({ count: item.add, resetMs: 60_000 })));
        sentAt = Date.now();
        return new Promise((resolve) =>
          client.once('data', (data: Buffer) => {
            readAt = Date.now();
            resolve(JSON.parse(data.toString()) as Hit[]);
          }),
        );
      },
      close: async () => undefined,
    };
    const store = new BatchedCounterStore(backend, () => undefined, 60_000);
    const limiter = new KeyRateLimiter(store);
    try {
      // A tenth of the limit counted here; the tenth call sent them to the shared store, and the next call waits.
      for (let i = 0; i < 10; i++) expect(await keyCall(limiter)).toBe(true);
      const waiting = keyCall(limiter);
      // The store answers at once that the other processes have used the whole limit, but this process is busy
      // past CONFIRM_WAIT_MS before it reads the answer (a descheduled process, a long garbage collection).
      serverSide.write(JSON.stringify([{ count: RATE.limit, resetMs: 60_000 }]));
      // Held up: the thread sleeps, the event loop does not turn (and no shared core is spun), until the give-up
      // timer is due — CONFIRM_WAIT_MS after the batch went out, plus a margin — so that when the loop turns again
      // the timer and the answer are both waiting.
      const dueAt = sentAt + CONFIRM_WAIT_MS + 100;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, Math.max(0, dueAt - Date.now()));
      // The answer is read before the waiting call is judged: refused, and the sync was never given up on. (Judged
      // on the timer alone, the call decided alone and got through.)
      expect(await waiting).toBe(false);
      expect(store.givenUp).toBe(0);
      // The case happened: the answer was read only once the timer was due (not early, which would prove nothing).
      expect(readAt).toBeGreaterThanOrEqual(sentAt + CONFIRM_WAIT_MS);
    } finally {
      closing = true;
      await store.close();
    }
  });
});

/**
 * A TCP proxy to Redis that the test can cut (every connection dropped, port closed) and restore, or hold: Redis
 * still gets every command, but its answers wait in the proxy, connections open, until `release`.
 */
class Proxy {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  private held: Array<() => void> | null = null;
  port = 0;
  constructor(private readonly target: URL) {}
  async start(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(Number(this.target.port), this.target.hostname);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => socket.destroy());
      }
      client.pipe(upstream);
      upstream.on('data', (chunk: Buffer) => {
        if (this.held === null) client.write(chunk);
        else this.held.push(() => client.write(chunk));
      });
      upstream.on('end', () => client.end());
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }
  hold(): void {
    this.held = [];
  }
  release(): void {
    const held = this.held ?? [];
    this.held = null;
    for (const write of held) write();
  }
  async cut(): Promise<void> {
    this.held = null;
    const server = this.server;
    this.server = null;
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => server?.close(() => resolve()) ?? resolve());
  }
}

const REDIS = process.env.TEST_REDIS_URL ?? '';

describe.runIf(REDIS !== '')('the key check while Redis goes away and comes back', () => {
  let t: TestApp;
  let proxy: Proxy;
  let redis: Redis;
  let key: string;
  const prefix = `test:check-outage:${randomBytes(6).toString('hex')}:`;

  beforeAll(async () => {
    proxy = new Proxy(new URL(REDIS));
    await proxy.start();
    t = await createTestApp({
      REDIS_URL: `redis://127.0.0.1:${proxy.port}`,
      RATE_LIMIT_REDIS_PREFIX: prefix,
      RATE_LIMIT_ENABLED: 'true',
      RATE_LIMIT_API_KEY_CHECK: '1000000/60',
    });
    redis = new Redis(REDIS);
    const prepared = await t.admin('product/prepare', { title: 'API plan', type: 'apikey' });
    await t.admin('product/update', { id: prepared.result, status: 'enabled', config: {} });
    const client = await t.createClient();
    const order = await t.admin('order/create', { client_id: client.id, product_id: prepared.result, activate: true });
    key = (await t.admin('serviceapikey/get', { order_id: order.result })).result.api_key as string;
  });
  afterAll(async () => {
    await t.close();
    await proxy.cut();
    await redis.quit();
  });

  it('answers every check from local counters (no 5xx) and the shared count catches up once Redis is back', async () => {
    const ip = '198.51.100.7';
    const statuses = new Map<number, number>();
    let answered = 0;
    const until = { stop: false };
    const load = (async () => {
      while (!until.stop) {
        const batch = await Promise.all(Array.from({ length: 10 }, () => t.call('/api/guest/serviceapikey/check', { key }, { ip })));
        for (const reply of batch) {
          statuses.set(reply.status, (statuses.get(reply.status) ?? 0) + 1);
          if (reply.result === true) answered++;
        }
      }
    })();
    // Each phase lasts until what it is for has happened (a generous deadline, not a fixed sleep).
    const hotStore = t.services.limiter.hotStore;
    if (!(hotStore instanceof BatchedCounterStore)) throw new Error('the key check counts in a BatchedCounterStore');
    const counter = `${prefix}API_KEY_CHECK:${ip}`;
    const shared = async () => Number(await redis.get(counter));
    const phase = { timeout: 15_000, interval: 20 };
    try {
      // Shared: checks are answered and their counts reach Redis.
      await vi.waitFor(async () => expect(await shared()).toBeGreaterThan(0), phase);
      await proxy.cut();
      const answeredAtCut = answered;
      const failuresAtCut = hotStore.failures;
      // Cut: a sync fails (the store knows Redis is away) and checks go on being answered from local counters.
      await vi.waitFor(() => {
        expect(hotStore.failures).toBeGreaterThan(failuresAtCut);
        expect(answered).toBeGreaterThanOrEqual(answeredAtCut + 100);
      }, phase);
      await proxy.start();
      const answeredAtRestore = answered;
      // Back: every check answered up to the restore, the outage's included, reaches the shared count, and checks go on.
      await vi.waitFor(async () => {
        expect(await shared()).toBeGreaterThanOrEqual(answeredAtRestore);
        expect(answered).toBeGreaterThanOrEqual(answeredAtRestore + 100);
      }, phase);
    } finally {
      until.stop = true;
      await load;
    }
    expect([...statuses.keys()]).toEqual([200]);
    const total = statuses.get(200)!;
    expect(answered).toBe(total);
    // Every check reached the shared counter (the last ones within one sync interval).
    await t.services.limiter.hotStore.close();
    expect(Number(await redis.get(`${prefix}API_KEY_CHECK:${ip}`))).toBe(total);
  }, 60_000);
});

describe.runIf(REDIS !== '')('the rate-limit counters while Redis stops answering, connection open', () => {
  let proxy: Proxy;
  let redis: Redis;
  const prefix = `test:stalled:${randomBytes(6).toString('hex')}:`;
  beforeAll(async () => {
    proxy = new Proxy(new URL(REDIS));
    await proxy.start();
    redis = new Redis(REDIS);
  });
  afterAll(async () => {
    await proxy.cut();
    await redis.quit();
  });

  it('a request counted in Redis is answered from the local count after COUNTER_COMMAND_TIMEOUT_MS instead of hanging', async () => {
    const warnings: string[] = [];
    const store = new RedisCounterStore(`redis://127.0.0.1:${proxy.port}`, prefix, (message) => warnings.push(message));
    try {
      await store.ready(5000);
      expect(await store.incr('login', 60_000)).toMatchObject({ count: 1 });
      proxy.hold();
      const started = Date.now();
      // Redis counts it (the command got through), but its answer never comes: the local count answers.
      expect(await store.incr('login', 60_000)).toMatchObject({ count: 1 });
      expect(Date.now() - started).toBeGreaterThanOrEqual(COUNTER_COMMAND_TIMEOUT_MS - 5);
      expect(Date.now() - started).toBeLessThan(COUNTER_COMMAND_TIMEOUT_MS * 3);
      expect(warnings).toEqual(['Redis is unreachable: rate limits are counted per process until it is back']);
    } finally {
      proxy.release();
      await store.close();
    }
  });

  it('a batch of the key check counters fails after COUNTER_COMMAND_TIMEOUT_MS, and its hits are sent again: counted at least once', async () => {
    const warnings: string[] = [];
    const store = new BatchedCounterStore(new RedisCounterBackend(`redis://127.0.0.1:${proxy.port}`, prefix), (message) => warnings.push(message), 60_000);
    try {
      await store.ready(5000);
      for (let i = 0; i < 5; i++) store.incr('batch', 60_000);
      await store.sync();
      expect(store.get('batch')).toMatchObject({ count: 5 });
      proxy.hold();
      for (let i = 0; i < 3; i++) store.incr('batch', 60_000);
      const started = Date.now();
      await store.sync();
      expect(Date.now() - started).toBeGreaterThanOrEqual(COUNTER_COMMAND_TIMEOUT_MS - 5);
      expect(store.failures).toBe(1);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toContain('cannot be shared');
      // Counting goes on locally meanwhile, nothing lost.
      expect(store.incr('batch', 60_000)).toMatchObject({ count: 9 });
      proxy.release();
      await store.sync();
      // Redis applied the batch it never answered, and got its hits again: a stalled Redis can count a batch twice
      // (refusing sooner), never lose one (letting more through).
      expect(Number(await redis.get(`${prefix}batch`))).toBe(12);
      expect(store.get('batch')).toMatchObject({ count: 12 });
      expect(warnings[1]).toBe('Rate-limit counters are shared again');
    } finally {
      proxy.release();
      await store.close();
    }
  });
});
