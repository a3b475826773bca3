// Key analytics on the hot path (issue 25): each answer bumps one counter in memory, in the current minute's tally
// of its key (or of the caller's address, for an unknown key), and notes the key's last use. No I/O, no string
// building, no date formatting here: the minute is an epoch number, formatted at the flush (outcome-writer.ts).
// The flush takes the closed minutes and the current one at once (`take`), so nothing is counted twice or lost.
import type { Reason } from '../types.ts';
import { OUTCOME_OF, zeroCounts, type OutcomeCounts } from './outcomes.ts';

/** One key's answers in one minute, and its last use in it. */
export interface KeyTally {
  counts: OutcomeCounts;
  lastAt: number;
  lastIp: string | null;
}

/** The answers counted in one minute: per key id, and unknown-key lookups per address ('' when none was named). */
export interface MinuteTally {
  /** Epoch ms of the minute's start. */
  minute: number;
  keys: Map<number, KeyTally>;
  notFound: Map<string, number>;
}

/**
 * Distinct addresses counted per minute before the rest are counted together under OTHER_ADDRESSES: unknown keys
 * from ever-new addresses (an IPv6 range) must not grow memory without bound when the database is away.
 */
export const MAX_ADDRESSES_PER_MINUTE = 10_000;
export const OTHER_ADDRESSES = 'other';

function emptyMinute(minute: number): MinuteTally {
  return { minute, keys: new Map(), notFound: new Map() };
}

export class OutcomeTally {
  private current: MinuteTally = emptyMinute(0);
  private currentEnds = 0;
  /** Minutes that ended before the flush took them. */
  private ended: MinuteTally[] = [];

  /** The tally of the minute holding `now`, starting a new one when the minute changed (or the clock went back). */
  private minuteOf(now: number): MinuteTally {
    const current = this.current;
    if (now < this.currentEnds && now >= current.minute) return current;
    if (current.keys.size > 0 || current.notFound.size > 0) this.ended.push(current);
    const start = now - (now % 60_000);
    this.current = emptyMinute(start);
    this.currentEnds = start + 60_000;
    return this.current;
  }

  /** Counts one answer about a found key. */
  countKey(keyId: number, reason: Exclude<Reason, 'NOT_FOUND'>, now: number, ip: string | null): void {
    const keys = this.minuteOf(now).keys;
    let tally = keys.get(keyId);
    if (tally === undefined) {
      tally = { counts: zeroCounts(), lastAt: now, lastIp: ip };
      keys.set(keyId, tally);
    }
    tally.counts[OUTCOME_OF[reason]]++;
    tally.lastAt = now;
    tally.lastIp = ip;
  }

  /** Counts one lookup of an unknown key by `ip` (null: a verifier that named no address). */
  countNotFound(ip: string | null, now: number): void {
    const notFound = this.minuteOf(now).notFound;
    let address = ip ?? '';
    let count = notFound.get(address);
    if (count === undefined && notFound.size >= MAX_ADDRESSES_PER_MINUTE) {
      address = OTHER_ADDRESSES;
      count = notFound.get(address);
    }
    notFound.set(address, (count ?? 0) + 1);
  }

  /** Hands every counted minute to the flush and starts afresh. */
  take(): MinuteTally[] {
    const taken = this.ended;
    const current = this.current;
    if (current.keys.size > 0 || current.notFound.size > 0) {
      taken.push(current);
      this.current = emptyMinute(0);
      this.currentEnds = 0;
    }
    this.ended = [];
    return taken;
  }

  /** Whether anything waits for a flush. */
  get pending(): boolean {
    return this.ended.length > 0 || this.current.keys.size > 0 || this.current.notFound.size > 0;
  }
}
