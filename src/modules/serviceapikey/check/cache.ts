// The in-process cache behind guest/serviceapikey/check and get_info, keyed by the key's HMAC:
// - an LRU of key records (bounded by KEY_CACHE_SIZE) with lazy promotion, so a hit costs a Map lookup and an
//   integer comparison, not a delete + re-insert;
// - a negative cache of unknown keys (a few seconds, bounded), so the same unknown key hammered again and again
//   stays off the database;
// - "in flux" marks for keys whose change is not committed yet: while marked, lookups bypass the cache and fills are
//   not stored, so no reader can cache a state that the writer's commit is about to replace;
// - an epoch bumped by every invalidation: a fill whose read started before an invalidation is not stored.
// Validity is never cached: the record holds the facts (switch, order status, expiry) and each call judges them
// against the current time.
import type { KeyRateLimit } from '../key-limits.ts';
import type { OrderCredit } from './credit-state.ts';
import type { OrderMeters } from './meter-state.ts';
import type { UsagePeriod } from '../usage/usage-period.ts';
import type { UsagePlan } from '../usage/usage-plan.ts';

/** An order's uses in the current usage period, shared by the cached records of all its keys (they share its quota). */
export interface OrderUsage {
  /** The order's keys (deleted ones included: their uses stay counted). */
  keyIds: number[];
  /** The usage period `used` counts in, and its meter bucket (`start/end`). */
  period: UsagePeriod;
  bucket: string;
  /** Uses in `period` summed over `keyIds`: database total at load + this process's counts since. */
  used: number;
  /** When `used` was last read from the database (epoch ms); 0 asks for a refresh. */
  usedAt: number;
  refreshing: boolean;
  /** The plan's meters and their quantities in `period` (meter-state.ts), or null when the plan has none. */
  meters: OrderMeters | null;
  /** A prepaid plan's balance and where it runs out (credit-state.ts), or null when the plan is not prepaid. */
  credit: OrderCredit | null;
}

export interface KeyEntry {
  id: number;
  orderId: number;
  clientId: number;
  /** The administrator's switch. */
  enabled: boolean;
  /** The client's account is active (a suspended or canceled client's keys are invalid). */
  clientActive: boolean;
  orderStatus: string;
  /** The order is suspended because its free trial ended unpaid (answered TRIAL_ENDED, not NOT_ACTIVE). */
  trialEnded: boolean;
  /** Expiry in epoch ms, or null for never. */
  expiresAtMs: number | null;
  /** Custom parameters, as get_info returns them. */
  config: Record<string, unknown>;
  limit: number | null;
  enforceLimit: boolean;
  /** The usage options the key applies (CONTRACT §12): period kind, included uses, overage, hard limit. */
  plan: UsagePlan;
  /** The order's billing period code (`1M`), for `billing_period` usage periods. */
  orderPeriod: string | null;
  /** The order's uses in the current period, shared with its other keys' records. */
  usage: OrderUsage;
  /** The order's per-key rate limit (CONTRACT §12), or null. */
  rateLimit: KeyRateLimit | null;
  /** Set when this hash is a replaced key in its grace period: it stops validating at this time (epoch ms). */
  rotatingUntilMs: number | null;
  /** When the record was read from the database (epoch ms). */
  loadedAt: number;
  /** LRU clock value at the last promotion. */
  tick: number;
}

export interface KeyCacheOptions {
  maxEntries: number;
  negativeTtlMs?: number;
  maxNegative?: number;
}

/** How long a record may be trusted when no invalidation channel is listening (connection lost, not yet up). */
export const UNTRUSTED_MAX_AGE_MS = 1000;
/** A change whose commit was never seen (the writer crashed) stops bypassing the cache after this long. */
export const FLUX_MAX_MS = 30_000;

export class KeyCache {
  private readonly entries = new Map<string, KeyEntry>();
  private readonly negative = new Map<string, number>();
  private readonly flux = new Map<string, { count: number; until: number }>();
  private readonly maxEntries: number;
  private readonly negativeTtlMs: number;
  private readonly maxNegative: number;
  private readonly promoteAfter: number;
  private clock = 0;
  /** Bumped by every invalidation. */
  epoch = 0;
  /** False while no invalidation channel guarantees that other processes' changes reach this cache. */
  trusted = true;
  /** Lookups answered from the cache (a record or a known-unknown key) and lookups that had to ask the database. */
  hits = 0;
  misses = 0;

  constructor(options: KeyCacheOptions) {
    this.maxEntries = Math.max(1, options.maxEntries);
    this.negativeTtlMs = options.negativeTtlMs ?? 3000;
    this.maxNegative = options.maxNegative ?? 10_000;
    this.promoteAfter = Math.max(1, Math.floor(this.maxEntries / 4));
  }

  get size(): number {
    return this.entries.size;
  }

  /** A record, null for a key known to be unknown, undefined for "ask the database". */
  get(hash: string, now: number): KeyEntry | null | undefined {
    if (this.flux.size > 0 && this.inFlux(hash, now)) return undefined;
    const entry = this.entries.get(hash);
    if (entry !== undefined) {
      if (!this.trusted && now - entry.loadedAt > UNTRUSTED_MAX_AGE_MS) {
        this.entries.delete(hash);
        return undefined;
      }
      const tick = ++this.clock;
      if (tick - entry.tick > this.promoteAfter) {
        // Lazy LRU: move to the young end only once it has aged, so hot keys rarely pay for re-insertion.
        this.entries.delete(hash);
        this.entries.set(hash, entry);
        entry.tick = tick;
      }
      this.hits++;
      return entry;
    }
    if (this.negative.size > 0) {
      const until = this.negative.get(hash);
      if (until !== undefined) {
        if (until > now && (this.trusted || until - this.negativeTtlMs + UNTRUSTED_MAX_AGE_MS > now)) {
          this.hits++;
          return null;
        }
        this.negative.delete(hash);
      }
    }
    this.misses++;
    return undefined;
  }

  /** Stores what a read that started at `epoch` found, unless something changed since. */
  fill(hash: string, entry: KeyEntry | null, epoch: number, now: number): void {
    if (epoch !== this.epoch || (this.flux.size > 0 && this.inFlux(hash, now))) return;
    if (entry === null) {
      if (this.negative.size >= this.maxNegative) this.evictOldest(this.negative);
      this.negative.set(hash, now + this.negativeTtlMs);
      return;
    }
    entry.tick = ++this.clock;
    this.entries.delete(hash);
    this.entries.set(hash, entry);
    while (this.entries.size > this.maxEntries) this.evictOldest(this.entries);
  }

  invalidate(hash: string): void {
    this.epoch++;
    this.entries.delete(hash);
    this.negative.delete(hash);
  }

  clear(): void {
    this.epoch++;
    this.entries.clear();
    this.negative.clear();
  }

  /** A writer is about to change this key: forget it and bypass the cache for it until `endChange`. */
  beginChange(hash: string, now = Date.now()): void {
    const mark = this.flux.get(hash);
    // An expired mark is a crashed writer's: its count must not keep this writer's change open after it ends.
    if (mark === undefined || mark.until <= now) this.flux.set(hash, { count: 1, until: now + FLUX_MAX_MS });
    else {
      mark.count++;
      mark.until = now + FLUX_MAX_MS;
    }
    this.invalidate(hash);
  }

  /** The writer's transaction ended (committed or not): forget the key again and resume caching it. */
  endChange(hash: string): void {
    const mark = this.flux.get(hash);
    if (mark !== undefined && --mark.count <= 0) this.flux.delete(hash);
    this.invalidate(hash);
  }

  private inFlux(hash: string, now: number): boolean {
    const mark = this.flux.get(hash);
    if (mark === undefined) return false;
    if (mark.until > now) return true;
    this.flux.delete(hash);
    return false;
  }

  private evictOldest(map: Map<string, unknown>): void {
    const oldest = map.keys().next();
    if (oldest.done !== true) map.delete(oldest.value);
  }
}
