// Rate-limit counters shared by the workers of one primary when there is no Redis: the primary holds them in memory
// (one process, one event loop, so every addition is atomic) and the workers ask it over IPC.
// - `PrimaryCounters` (in the primary) answers the workers' requests;
// - `ClusterCounterBackend` (in a worker) sends a batch of hits and waits for the totals: used per call for the exact
//   policies (LOGIN, SIGNUP, API_GUEST… — one IPC round trip each, so they are exact across workers) and every
//   SYNC_MS in a batch for the key check's policies (src/platform/counters/batched.ts).
import type { Worker } from 'node:cluster';
import type { CounterBatchItem, CounterBackend } from './batched.ts';
import type { CounterStore, Hit } from './store.ts';
import { isClusterMessage, type CountersReply, type CountersRequest } from '../cluster-messages.ts';

export class PrimaryCounters {
  private readonly counters = new Map<string, { count: number; resetAt: number }>();
  private readonly sweeper: NodeJS.Timeout;

  constructor() {
    this.sweeper = setInterval(() => {
      const now = Date.now();
      for (const [key, counter] of this.counters) if (counter.resetAt <= now) this.counters.delete(key);
    }, 10_000);
    this.sweeper.unref();
  }

  addAll(items: readonly CounterBatchItem[]): Hit[] {
    const now = Date.now();
    return items.map(({ key, add, windowMs }) => {
      let counter = this.counters.get(key);
      if (counter === undefined || counter.resetAt <= now) {
        counter = { count: 0, resetAt: now + windowMs };
        this.counters.set(key, counter);
      }
      counter.count += add;
      return { count: counter.count, resetMs: counter.resetAt - now };
    });
  }

  /** Answers one worker's request. */
  answer(worker: Worker, message: CountersRequest): void {
    const reply: CountersReply = { t: 'tollgate:counters-reply', id: message.id, hits: this.addAll(message.items) };
    if (worker.isConnected()) worker.send(reply);
  }

  close(): void {
    clearInterval(this.sweeper);
  }
}

/** How long a worker waits for the primary before deciding on its own (the primary is busy or gone). */
const REPLY_TIMEOUT_MS = 1000;

export class ClusterCounterBackend implements CounterBackend {
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: (hits: Hit[]) => void; reject: (error: Error) => void; timer: NodeJS.Timeout }>();
  private readonly onMessage = (message: unknown): void => {
    if (!isClusterMessage(message) || message.t !== 'tollgate:counters-reply') return;
    const pending = this.waiting.get(message.id);
    if (pending === undefined) return;
    this.waiting.delete(message.id);
    clearTimeout(pending.timer);
    pending.resolve(message.hits);
  };

  constructor() {
    process.on('message', this.onMessage);
  }

  addAll(items: readonly CounterBatchItem[]): Promise<Hit[]> {
    return new Promise((resolve, reject) => {
      if (process.send === undefined || !process.connected) {
        reject(new Error('not connected to the cluster primary'));
        return;
      }
      const id = this.nextId++;
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(new Error('the cluster primary did not answer'));
      }, REPLY_TIMEOUT_MS);
      this.waiting.set(id, { resolve, reject, timer });
      const request: CountersRequest = { t: 'tollgate:counters', id, items: [...items] };
      process.send(request, undefined, undefined, (error: Error | null) => {
        if (error === null) return;
        this.waiting.delete(id);
        clearTimeout(timer);
        reject(error);
      });
    });
  }

  close(): Promise<void> {
    process.off('message', this.onMessage);
    for (const pending of this.waiting.values()) {
      clearTimeout(pending.timer);
      pending.reject(new Error('closed'));
    }
    this.waiting.clear();
    return Promise.resolve();
  }
}

/**
 * The exact policies' store in a worker: every hit asks the primary. If the primary cannot answer, the worker
 * decides alone from its own counts (like the Redis store's fallback) rather than failing the call.
 */
export class ClusterCounterStore implements CounterStore {
  private readonly backend = new ClusterCounterBackend();
  private readonly local = new Map<string, { count: number; resetAt: number }>();

  incr(key: string, windowMs: number): Promise<Hit> {
    return this.backend.addAll([{ key, add: 1, windowMs }]).then(
      (hits) => hits[0]!,
      () => {
        const now = Date.now();
        let counter = this.local.get(key);
        if (counter === undefined || counter.resetAt <= now) {
          counter = { count: 0, resetAt: now + windowMs };
          this.local.set(key, counter);
        }
        counter.count += 1;
        return { count: counter.count, resetMs: counter.resetAt - now };
      },
    );
  }

  /** Reads a counter by adding nothing to it. */
  async get(key: string): Promise<Hit | null> {
    try {
      const [hit] = await this.backend.addAll([{ key, add: 0, windowMs: 1 }]);
      return hit === undefined || hit.count === 0 ? null : hit;
    } catch {
      const counter = this.local.get(key);
      return counter === undefined || counter.resetAt <= Date.now() ? null : { count: counter.count, resetMs: counter.resetAt - Date.now() };
    }
  }

  close(): Promise<void> {
    return this.backend.close();
  }
}
