// Fixed-window counters behind a two-method interface: in process memory by default, in Redis when REDIS_URL is set
// (then every Tollgate process sharing that Redis shares the counts). Memory answers synchronously so the hot path
// does not pay for a promise it does not need.
import { Redis } from 'ioredis';

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

// INCR and the expiry in one atomic step, so a crash between the two can never leave a counter without an expiry.
const INCR_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {count, ttl}`;

/**
 * Counters in Redis, shared by every process. When Redis is unreachable the limits keep working per process (a
 * memory store stands in) instead of failing every rate-limited call: a cache outage must not take billing and key
 * checks down with it. The switch back happens by itself once the connection is ready again.
 */
export class RedisCounterStore implements CounterStore {
  private readonly redis: Redis;
  private readonly fallback = new MemoryCounterStore();
  private warned = false;

  constructor(
    url: string,
    private readonly prefix: string,
    private readonly warn: (message: string) => void = (message) => process.emitWarning(message),
  ) {
    // No offline queue: while disconnected a command fails at once (and the fallback answers) rather than waiting.
    this.redis = new Redis(url, { maxRetriesPerRequest: 1, enableOfflineQueue: false, enableAutoPipelining: true });
    this.redis.on('error', () => this.degraded());
    this.redis.on('ready', () => {
      this.warned = false;
    });
    this.redis.defineCommand('tollgateIncr', { numberOfKeys: 1, lua: INCR_SCRIPT });
  }

  ready(timeoutMs: number): Promise<void> {
    if (this.redis.status === 'ready') return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, timeoutMs);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.redis.once('ready', done);
    });
  }

  private degraded(): void {
    if (this.warned) return;
    this.warned = true;
    this.warn('Redis is unreachable: rate limits are counted per process until it is back');
  }

  incr(key: string, windowMs: number): Hit | Promise<Hit> {
    if (this.redis.status !== 'ready') return this.fallback.incr(key, windowMs);
    // defineCommand adds the method at run time; ioredis's types cannot know it.
    const redis = this.redis as unknown as { tollgateIncr: (key: string, windowMs: number) => Promise<[number, number]> };
    return redis.tollgateIncr(this.prefix + key, windowMs).then(
      ([count, ttl]) => ({ count, resetMs: ttl }),
      () => {
        this.degraded();
        return this.fallback.incr(key, windowMs);
      },
    );
  }

  async get(key: string): Promise<Hit | null> {
    if (this.redis.status !== 'ready') return this.fallback.get(key);
    try {
      const [[, count], [, ttl]] = (await this.redis.multi().get(this.prefix + key).pttl(this.prefix + key).exec()) as [
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
    await this.redis.quit().catch(() => undefined);
    this.redis.disconnect();
  }
}
