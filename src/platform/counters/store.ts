// Fixed-window counters behind a two-method interface: in process memory by default, in Redis when REDIS_URL is set
// (then every Tollgate process sharing that Redis shares the counts). Memory answers synchronously so the hot path
// does not pay for a promise it does not need.
import { connectCounters, type CounterConnection } from './redis.ts';

export interface Hit {
  count: number;
  /** Milliseconds until this window ends and the counter starts again. */
  resetMs: number;
}

export interface CounterStore {
  incr(key: string, windowMs: number): Hit | Promise<Hit>;
  get(key: string): Hit | null | Promise<Hit | null>;
  /** Resolves once the store can serve shared counts (or has waited long enough to go on without them). */
  ready?(timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}

export class MemoryCounterStore implements CounterStore {
  private readonly counters = new Map<string, { count: number; resetAt: number }>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(sweepEveryMs = 10_000) {
    this.sweeper = setInterval(() => this.sweep(), sweepEveryMs);
    this.sweeper.unref();
  }

  incr(key: string, windowMs: number): Hit {
    const now = Date.now();
    let counter = this.counters.get(key);
    if (counter === undefined || counter.resetAt <= now) {
      counter = { count: 0, resetAt: now + windowMs };
      this.counters.set(key, counter);
    }
    counter.count += 1;
    return { count: counter.count, resetMs: counter.resetAt - now };
  }

  get(key: string): Hit | null {
    const now = Date.now();
    const counter = this.counters.get(key);
    if (counter === undefined || counter.resetAt <= now) return null;
    return { count: counter.count, resetMs: counter.resetAt - now };
  }

  private sweep(): void {
    const now = Date.now();
    for (const [key, counter] of this.counters) if (counter.resetAt <= now) this.counters.delete(key);
  }

  close(): Promise<void> {
    clearInterval(this.sweeper);
    this.counters.clear();
    return Promise.resolve();
  }
}

export class RedisCounterStore implements CounterStore {
  private readonly connection: CounterConnection;
  private readonly fallback = new MemoryCounterStore();
  private warned = false;

  constructor(
    url: string,
    private readonly prefix: string,
    private readonly warn: (message: string) => void = (message) => process.emitWarning(message),
  ) {
    this.connection = connectCounters(url, () => this.degraded());
    this.connection.redis.on('ready', () => {
      this.warned = false;
    });
  }

  ready(timeoutMs: number): Promise<void> {
    return this.connection.ready(timeoutMs);
  }

  private degraded(): void {
    if (this.warned) return;
    this.warned = true;
    this.warn('Redis is unreachable: rate limits are counted per process until it is back');
  }

  incr(key: string, windowMs: number): Hit | Promise<Hit> {
    if (this.connection.redis.status !== 'ready') return this.fallback.incr(key, windowMs);
    return this.connection.add(this.prefix + key, 1, windowMs).then(
      ([count, ttl]) => ({ count, resetMs: ttl }),
      () => {
        this.degraded();
        return this.fallback.incr(key, windowMs);
      },
    );
  }

  async get(key: string): Promise<Hit | null> {
    const { redis } = this.connection;
    if (redis.status !== 'ready') return this.fallback.get(key);
    try {
      const [[, count], [, ttl]] = (await redis.multi().get(this.prefix + key).pttl(this.prefix + key).exec()) as [
        [Error | null, string | null],
        [Error | null, number],
      ];
      if (count === null || ttl < 0) return null;
      return { count: Number(count), resetMs: ttl };
    } catch {
      this.degraded();
      return this.fallback.get(key);
    }
  }

  async close(): Promise<void> {
    await this.fallback.close();
    await this.connection.close();
  }
}
