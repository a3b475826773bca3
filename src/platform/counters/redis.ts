// The Redis side of the shared rate-limit counters, used by both stores: the per-call one (src/platform/counters/store.ts)
// and the batched one of the hot path (src/platform/counters/batched.ts). One connection setup and one atomic script.
import { Redis } from 'ioredis';

// INCRBY and the expiry in one atomic step, so a crash between the two can never leave a counter without an expiry.
const ADD_SCRIPT = `
local count = redis.call('INCRBY', KEYS[1], ARGV[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  ttl = tonumber(ARGV[2])
end
return {count, ttl}`;

export interface CounterConnection {
  redis: Redis;
  /** Adds `add` to the counter `key` (its window starting now if it had none); answers [count, ms left in window]. */
  add(key: string, add: number, windowMs: number): Promise<[number, number]>;
  /** Resolves once connected, or after `timeoutMs` whatever happened. */
  ready(timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * How long a counter command may go unanswered before it fails and the caller counts locally. A Redis that stops
 * answering without closing the connection (overloaded, paused, a network path that drops packets) would otherwise
 * hold every request of a policy counted in Redis, and the check's counter batches, until the operating system gave
 * up on the connection.
 */
export const COUNTER_COMMAND_TIMEOUT_MS = 1000;

/**
 * A connection without an offline queue: while Redis is unreachable a command fails at once (and the caller counts
 * locally) rather than waiting for a reconnect; an unanswered one fails after COUNTER_COMMAND_TIMEOUT_MS. `onError`
 * hears every connection error.
 */
export function connectCounters(url: string, onError: () => void): CounterConnection {
  const redis = new Redis(url, {
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    enableAutoPipelining: true,
    commandTimeout: COUNTER_COMMAND_TIMEOUT_MS,
  });
  redis.on('error', onError);
  redis.defineCommand('tollgateAdd', { numberOfKeys: 1, lua: ADD_SCRIPT });
  // defineCommand adds the method at run time; ioredis's types cannot know it.
  const scripted = redis as unknown as { tollgateAdd: (key: string, add: number, windowMs: number) => Promise<[number, number]> };
  return {
    redis,
    add: (key, add, windowMs) => scripted.tollgateAdd(key, add, windowMs),
    ready(timeoutMs) {
      if (redis.status === 'ready') return Promise.resolve();
      return new Promise((resolve) => {
        const timer = setTimeout(done, timeoutMs);
        function done(): void {
          clearTimeout(timer);
          redis.off('ready', done);
          resolve();
        }
        redis.once('ready', done);
      });
    },
    async close() {
      await redis.quit().catch(() => undefined);
      redis.disconnect();
    },
  };
}
