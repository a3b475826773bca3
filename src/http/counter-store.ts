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

export class RedisCounterStore implements CounterStore {
  private readonly redis: Redis;

  constructor(
    url: string,
    private readonly prefix: string,
  ) {
    this.redis = new Redis(url, { maxRetriesPerRequest: 2, enableAutoPipelining: true, lazyConnect: false });
    this.redis.defineCommand('tollgateIncr', { numberOfKeys: 1, lua: INCR_SCRIPT });
  }

  async incr(key: string, windowMs: number): Promise<Hit> {
    // defineCommand adds the method at run time; ioredis's types cannot know it.
    const redis = this.redis as unknown as { tollgateIncr: (key: string, windowMs: number) => Promise<[number, number]> };
    const [count, ttl] = await redis.tollgateIncr(this.prefix + key, windowMs);
    return { count, resetMs: ttl };
  }

  async get(key: string): Promise<Hit | null> {
    const [[, count], [, ttl]] = (await this.redis.multi().get(this.prefix + key).pttl(this.prefix + key).exec()) as [
      [Error | null, string | null],
      [Error | null, number],
    ];
    if (count === null || ttl < 0) return null;
    return { count: Number(count), resetMs: ttl };
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => undefined);
  }
}
