// Per-key rate limits (CONTRACT §12): `rate_limit {limit, window_seconds}` shared by an order's keys, decided on the
// check path from a local counter (src/platform/counters/batched.ts) with no database or Redis round trip per call. The
// counters meet across processes every SYNC_MS, and sooner while a counter is climbing towards its limit: every
// tenth of the limit counted here asks for a sync at once (in the background).
//
// That alone bounds nothing when the round trip is slow (a busy machine let two processes accept 180 calls in one
// window of a limit of 100): a process counts on while its sync is in flight. So a process never holds more than a
// tenth of the limit that the shared store has not confirmed: the call that would go past waits for the sync in
// flight (`confirmation`), and per window the P processes accept at most limit + P × ⌈limit / 10⌉ (one tenth less in
// most windows), however slow the round trip. A shared store that is unreachable, or leaves a batch unanswered for
// CONFIRM_WAIT_MS, stops the waiting: each process then decides alone (docs/api-keys.md, "How far the per-key rate limit
// can be overshot").
//
// Refused calls are not counted: a process's window ends a moment after the shared one (its end is learnt from the
// shared store's answer), and refused calls sent in that moment would open the next shared window already over the
// limit, refusing that whole window. Counting only accepted calls also matches "a refused call is not a use".
import type { Hit } from '../../../platform/counters/store.ts';
import type { KeyRateLimit } from '../key-limits.ts';

/** A counter store that answers from memory (the memory store, or the batched store that shares its counts). */
export interface LocalCounterStore {
  incr(key: string, windowMs: number): Hit;
  get(key: string): Hit | null;
  /** Sends the counts now rather than at the next interval (absent where there is nobody to share with). */
  syncSoon?(): void;
  /**
   * Null when another hit of `key` may be counted now; else a promise to wait on first, because at least `most` of
   * its hits here are not yet confirmed by the shared store while its count is below `limit` (absent where there is
   * nobody to share with).
   */
  confirmation?(key: string, most: number, limit: number): Promise<void> | null;
}

/** How many eager syncs a counter asks for on its way to its limit. */
const EAGER_SYNCS = 10;

/** A tenth of the limit: a process asks for a sync each time it counts this many, and never holds more unconfirmed. */
function tenthOf(limit: number): number {
  return Math.max(1, Math.ceil(limit / EAGER_SYNCS));
}

export class KeyRateLimiter {
  /** The last order's counter name: `confirmation` and `hit` of one call, and a busy key's calls, share one string. */
  private lastOrderId = -1;
  private lastKey = '';

  constructor(private readonly store: LocalCounterStore) {}

  private keyOf(orderId: number): string {
    if (orderId !== this.lastOrderId) {
      this.lastOrderId = orderId;
      this.lastKey = `KEY_RATE:${orderId}`;
    }
    return this.lastKey;
  }

  /** Counts one call of the order's keys: null when allowed, else the seconds until the window ends. */
  hit(orderId: number, rate: KeyRateLimit): number | null {
    const key = this.keyOf(orderId);
    const current = this.store.get(key);
    if (current !== null && current.count >= rate.limit) return Math.max(1, Math.ceil(current.resetMs / 1000));
    const hit = this.store.incr(key, rate.window_seconds * 1000);
    if (hit.count % tenthOf(rate.limit) === 0) this.store.syncSoon?.();
    return null;
  }

  /**
   * Null when a call of the order's keys may be judged now; else wait for this promise and ask again: this process
   * holds a tenth of the limit that the shared store has not confirmed. The caller must call `hit` in the same
   * synchronous step as the `confirmation` that returned null, or calls that waited together would all get through.
   */
  confirmation(orderId: number, rate: KeyRateLimit): Promise<void> | null {
    return this.store.confirmation?.(this.keyOf(orderId), tenthOf(rate.limit), rate.limit) ?? null;
  }
}
