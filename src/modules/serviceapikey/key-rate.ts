// Per-key rate limits (CONTRACT §12): `rate_limit {limit, window_seconds}` shared by an order's keys, decided on the
// check path from a local counter (src/http/counter-sync.ts) with no database or Redis round trip per call. The
// counters meet across processes every SYNC_MS, and sooner while a counter is climbing towards its limit: every
// tenth of the limit counted here asks for a sync at once (in the background), so the other processes' view lags
// by about a tenth of the limit plus one round trip rather than a whole sync interval. README "Per-key rate limits"
// gives the overshoot this allows and the measured figures.
//
// Refused calls are not counted: a process's window ends a moment after the shared one (its end is learnt from the
// shared store's answer), and refused calls sent in that moment would open the next shared window already over the
// limit, refusing that whole window. Counting only accepted calls also matches "a refused call is not a use".
import type { Hit } from '../../http/counter-store.ts';
import type { KeyRateLimit } from './key-limits.ts';

/** A counter store that answers from memory (the memory store, or the batched store that shares its counts). */
export interface LocalCounterStore {
  incr(key: string, windowMs: number): Hit;
  get(key: string): Hit | null;
  /** Sends the counts now rather than at the next interval (absent where there is nobody to share with). */
  syncSoon?(): void;
}

/** How many eager syncs a counter asks for on its way to its limit. */
const EAGER_SYNCS = 10;

export class KeyRateLimiter {
  constructor(private readonly store: LocalCounterStore) {}

  /** Counts one call of the order's keys: null when allowed, else the seconds until the window ends. */
  hit(orderId: number, rate: KeyRateLimit): number | null {
    const key = `KEY_RATE:${orderId}`;
    const current = this.store.get(key);
    if (current !== null && current.count >= rate.limit) return Math.max(1, Math.ceil(current.resetMs / 1000));
    const hit = this.store.incr(key, rate.window_seconds * 1000);
    const every = Math.max(1, Math.ceil(rate.limit / EAGER_SYNCS));
    if (hit.count % every === 0) this.store.syncSoon?.();
    return null;
  }
}
