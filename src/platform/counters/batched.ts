// Rate-limit counters for the hot path's policies (the key check), kept in process memory and synchronised with a
// shared backend (Redis, or the cluster primary) in batches, every SYNC_MS: counting a check costs a Map update and
// never a round trip. Each sync sends, per counter, the hits since the last one and gets back the shared total and
// the window's remaining time; the local view is that total plus the hits counted since.
//
// The price is overshoot: a process does not see the other processes' hits of the last sync interval, so a client
// spreading calls over P processes can get through up to (P − 1) × (its calls per process in one interval) more than
// the limit, and a counter's first hit in a process is judged before that process has heard the shared total. The
// measured figures are in docs/deployment.md ("The key check without a round trip"). While the backend is unreachable the local
// counts keep deciding (per process) and are kept; they are added to the shared count once it answers again.
import { connectCounters, type CounterConnection } from './redis.ts';
import type { CounterStore, Hit } from './store.ts';

/** How often the hits are sent: "at least once a second", with room for a slow answer. */
export const SYNC_MS = 200;

/**
 * How long a sync may take before calls waiting for its confirmation (`confirmation`) stop waiting and their process
 * decides alone: a stalled shared store must not stall the checks.
 */
export const CONFIRM_WAIT_MS = 500;

/** A sync given up on is warned about at most this often (each one is counted in `givenUp`). */
const GIVE_UP_WARNING_MS = 60_000;

export interface CounterBatchItem {
  key: string;
  /** Hits to add. */
  add: number;
  windowMs: number;
}

/** A shared store that adds several counters at once and answers each one's new total and remaining window. */
export interface CounterBackend {
  addAll(items: readonly CounterBatchItem[]): Promise<Hit[]>;
  /** Resolves once the backend can answer (or the wait is over). */
  ready?(timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}

interface Slot {
  /** Shared total at the last sync. */
  base: number;
  /** Hits counted here and not yet sent. */
  delta: number;
  /** Hits in the batch being sent. */
  sending: number;
  resetAt: number;
  windowMs: number;
}

export class BatchedCounterStore implements CounterStore {
  private readonly slots = new Map<string, Slot>();
  private readonly dirty = new Set<string>();
  private readonly timer: NodeJS.Timeout;
  private syncing: Promise<void> | null = null;
  private syncStartedAt = 0;
  /** What calls waiting for the sync in flight wait on: its end, or its being given up (`giveUpAfter`). */
  private settling: { of: Promise<void>; done: Promise<void> } | null = null;
  /** The sync in flight that waiting calls gave up on: until it ends, nobody waits. */
  private givenUpOn: Promise<void> | null = null;
  private lastGiveUpWarning = Number.NEGATIVE_INFINITY;
  /** A sync was asked for (syncSoon) while one was in flight: start another as soon as it ends. */
  private again = false;
  private closed = false;
  private failing = false;
  /** Batches sent, failed, and given up on (CONFIRM_WAIT_MS without an answer), for tests and /metrics. */
  syncs = 0;
  failures = 0;
  givenUp = 0;

  constructor(
    private readonly backend: CounterBackend,
    private readonly warn: (message: string) => void = (message) => process.emitWarning(message),
    syncMs = SYNC_MS,
  ) {
    let ticks = 0;
    this.timer = setInterval(() => {
      void this.sync();
      if (++ticks % 50 === 0) this.sweep(Date.now());
    }, syncMs);
    this.timer.unref();
  }

  ready(timeoutMs: number): Promise<void> {
    return this.backend.ready?.(timeoutMs) ?? Promise.resolve();
  }

  incr(key: string, windowMs: number): Hit {
    const now = Date.now();
    let slot = this.slots.get(key);
    if (slot === undefined || slot.resetAt <= now) {
      // A new window: hits still unsent belong to the one that ended, which the backend has forgotten too.
      slot = { base: 0, delta: 0, sending: 0, resetAt: now + windowMs, windowMs };
      this.slots.set(key, slot);
    }
    if (slot.delta++ === 0) this.dirty.add(key);
    return { count: slot.base + slot.sending + slot.delta, resetMs: slot.resetAt - now };
  }

  get(key: string): Hit | null {
    const now = Date.now();
    const slot = this.slots.get(key);
    if (slot === undefined || slot.resetAt <= now) return null;
    return { count: slot.base + slot.sending + slot.delta, resetMs: slot.resetAt - now };
  }

  /** Sends the counts now, in the background (a counter near its limit wants the others' counts sooner). */
  syncSoon(): void {
    if (this.syncing !== null) this.again = true;
    else void this.sync();
  }

  /**
   * Null when another hit of `key` may be counted now; else a promise to wait on before asking again: at least `most`
   * of its hits are unconfirmed (counted here, not yet answered by the backend) and its count is below `limit`.
   * Null too while the backend is unreachable, or once the sync in flight has been given up on (`giveUpAfter`): then
   * this process decides alone, as it does for every other counter.
   */
  confirmation(key: string, most: number, limit: number): Promise<void> | null {
    if (this.failing || this.closed) return null;
    const slot = this.slots.get(key);
    if (slot === undefined || slot.resetAt <= Date.now()) return null;
    const unconfirmed = slot.sending + slot.delta;
    if (unconfirmed < most || slot.base + unconfirmed >= limit) return null;
    if (this.syncing === null) void this.sync();
    else this.again = true;
    const syncing = this.syncing;
    if (syncing === null || syncing === this.givenUpOn) return null;
    if (this.settling?.of !== syncing) this.settling = { of: syncing, done: Promise.race([syncing, this.giveUpAfter(syncing)]) };
    return this.settling.done;
  }

  /**
   * Resolves CONFIRM_WAIT_MS after `syncing` began, giving it up if it is still in flight. It gives up only after one
   * more turn of the event loop (setImmediate after the timer): when this process was itself held up (descheduled on
   * a busy machine, a long garbage collection), the timer fires before the answer already waiting on the socket is
   * read, and the process, not the store, was slow. Judged on the timer alone, every call waiting then decided alone
   * (test/platform/counters.test.ts, "a process held up is not a store stalled").
   */
  private giveUpAfter(syncing: Promise<void>): Promise<void> {
    return new Promise((resolve) => {
      const check = () => {
        if (this.syncing === syncing) {
          this.givenUpOn = syncing;
          this.givenUp++;
          const now = Date.now();
          if (now - this.lastGiveUpWarning >= GIVE_UP_WARNING_MS) {
            this.lastGiveUpWarning = now;
            this.warn(`Rate-limit counters: the shared store has not answered in ${now - this.syncStartedAt} ms; this process decides alone until it does (${this.givenUp} syncs given up on since start)`);
          }
        }
        resolve();
      };
      setTimeout(() => setImmediate(check), Math.max(0, this.syncStartedAt + CONFIRM_WAIT_MS - Date.now())).unref();
    });
  }

  /** Sends the hits counted since the last sync; one batch at a time. */
  sync(): Promise<void> {
    if (this.syncing !== null || this.dirty.size === 0) return this.syncing ?? Promise.resolve();
    const keys = [...this.dirty];
    this.dirty.clear();
    const items: CounterBatchItem[] = [];
    const sent: Array<[string, Slot]> = [];
    for (const key of keys) {
      const slot = this.slots.get(key);
      if (slot === undefined || slot.delta === 0) continue;
      slot.sending = slot.delta;
      slot.delta = 0;
      items.push({ key, add: slot.sending, windowMs: slot.windowMs });
      sent.push([key, slot]);
    }
    this.syncs++;
    this.syncStartedAt = Date.now();
    this.syncing = this.backend
      .addAll(items)
      .then((hits) => {
        const now = Date.now();
        sent.forEach(([, slot], i) => {
          const hit = hits[i]!;
          slot.sending = 0;
          // The shared total already holds what was just sent; hits counted meanwhile stay in `delta`.
          slot.base = hit.count;
          slot.resetAt = now + hit.resetMs;
        });
        if (this.failing) {
          this.failing = false;
          this.warn('Rate-limit counters are shared again');
        }
      })
      .catch(() => {
        this.failures++;
        // Keep the hits: they go out with the next batch that gets through.
        for (const [key, slot] of sent) {
          if (this.slots.get(key) === slot) {
            slot.delta += slot.sending;
            this.dirty.add(key);
          }
          slot.sending = 0;
        }
        if (!this.failing) {
          this.failing = true;
          this.warn('Rate-limit counters cannot be shared (backend unreachable): each process counts on its own until it is back');
        }
      })
      .finally(() => {
        if (this.givenUpOn === this.syncing) this.givenUpOn = null;
        this.syncing = null;
        if (this.again && !this.closed) {
          this.again = false;
          void this.sync();
        }
      });
    return this.syncing;
  }

  private sweep(now: number): void {
    for (const [key, slot] of this.slots) if (slot.resetAt <= now && slot.delta === 0 && slot.sending === 0) this.slots.delete(key);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    // The batch in flight, then what was counted meanwhile (once: a backend that is down keeps failing).
    await this.syncing;
    await this.sync();
    this.sweep(Number.POSITIVE_INFINITY);
    await this.backend.close();
  }
}

/** Redis as the shared store: one pipelined script call per counter in the batch. */
export class RedisCounterBackend implements CounterBackend {
  // Errors are expected while Redis is away: a failed batch says so (BatchedCounterStore warns once).
  private readonly connection: CounterConnection;

  constructor(
    url: string,
    private readonly prefix: string,
  ) {
    this.connection = connectCounters(url, () => undefined);
  }

  ready(timeoutMs: number): Promise<void> {
    return this.connection.ready(timeoutMs);
  }

  async addAll(items: readonly CounterBatchItem[]): Promise<Hit[]> {
    if (this.connection.redis.status !== 'ready') throw new Error('Redis is not connected');
    const answers = await Promise.all(items.map((item) => this.connection.add(this.prefix + item.key, item.add, item.windowMs)));
    return answers.map(([count, ttl]) => ({ count, resetMs: ttl }));
  }

  close(): Promise<void> {
    return this.connection.close();
  }
}
