// The check: guest/serviceapikey/check and get_info, and their verifier twins (CONTRACT §7, §11). One road for all
// of them: resolve the key to its cached record, judge it against the current time, count one use when valid.
//
// Hot path: the key's HMAC is computed once (and remembered for keys found); a warm cache answers with a Map lookup,
// a comparison of the record's facts with the current time, and a Map update for the usage count. A plan's meters
// with a hard limit add one property read: the meter at its limit, worked out when their quantities change
// (meter-state.ts). Unknown keys are remembered a few seconds and counted against the caller's API_KEY_CHECK_FAILED
// budget; an address over that budget is refused from a local map until its window ends.
//
// The check is handed no HTTP reply: it returns the answer, and its one limit of its own (the failed-lookup budget,
// once spent) is a 429 whose error carries the RateLimit-* headers; the HTTP layer writes an error's headers.
import type { SecretBox } from '../../../lib/crypto.ts';
import { moneyFor, type Money } from '../../../lib/money.ts';
import { couldBeKey } from '../../../lib/keygen.ts';
import { ApiError, errors } from '../../../platform/errors.ts';
import type { Decision, RateLimiter } from '../../../platform/rate-limit.ts';
import type { KeySync } from '../sync/key-sync.ts';
import type { KeyInfo, Reason, UsageSummary } from '../types.ts';
import type { Metering, UsageClock } from '../usage/metering.ts';
import { meterSummaries } from '../usage/meter-summary.ts';
import { NO_METERS, summaryOf, withLimit, type MeteredSummary } from '../usage/summary.ts';
import type { KeyCache, KeyEntry } from './cache.ts';
import type { KeyEntries } from './entries.ts';
import type { KeyHashMemo } from './hash-memo.ts';
import type { KeyRateLimiter } from './key-rate.ts';
import type { MeterState } from './meter-state.ts';
import { projectedBalance, projectedWallet } from './credit-state.ts';
import type { CreditSync } from './credit-sync.ts';
import type { OutcomeTally } from '../analytics/tally.ts';

/** How old the cached period count of an order with a limit may be before it is re-read in the background. */
const USAGE_REFRESH_MS = 2000;
const MAX_BLOCKED_ADDRESSES = 100_000;

export interface KeyCheckDeps {
  secrets: Pick<SecretBox, 'hash'>;
  limiter: Pick<RateLimiter, 'isExempt' | 'hit'>;
  money: Pick<Money, 'format' | 'precision' | 'currency'>;
  cache: KeyCache;
  hashMemo: KeyHashMemo;
  keyRates: KeyRateLimiter;
  entries: KeyEntries;
  /** Uses per day (reports) and per usage period (limits and bills). */
  metering: Pick<Metering, 'clock' | 'count'>;
  periodMeter: Pick<Metering, 'count'>;
  sync: Pick<KeySync, 'listen' | 'announce'>;
  /** The plan meters' quantities, kept fresh in the background (meter-state.ts). */
  meterState: Pick<MeterState, 'keepFresh'>;
  /** Prepaid plans' balances, kept fresh in the background (credit-sync.ts). */
  creditSync: Pick<CreditSync, 'keepFresh' | 'refused' | 'halfSpent'>;
  /** Key analytics: every answer counted in memory by key (or address) and outcome (analytics/tally.ts). */
  outcomes: Pick<OutcomeTally, 'countKey' | 'countNotFound'>;
}

/** The 429 of a spent failed-lookup budget, carrying that budget's RateLimit-* headers before Retry-After. */
function refusalOf(decision: Decision): ApiError {
  const refused = errors.rateLimited(decision.resetSeconds);
  const headers = { 'RateLimit-Limit': decision.limit, 'RateLimit-Remaining': decision.remaining, 'RateLimit-Reset': decision.resetSeconds, ...refused.headers };
  return new ApiError(refused.code, refused.status, refused.message, headers);
}

/** The check's answer: true when the key was judged valid (and its use counted). */
function isValid(_entry: unknown, reason: Reason): boolean {
  return reason === 'VALID';
}

export function createKeyCheck(deps: KeyCheckDeps) {
  const { secrets, limiter, cache, hashMemo, keyRates, entries, metering, periodMeter, sync, meterState, creditSync, outcomes } = deps;
  /** Address → epoch ms until which it is refused (over API_KEY_CHECK_FAILED). */
  const blocked = new Map<string, number>();
  /** Checks and get_info calls answered, by reason (read by /metrics). */
  const reasons: Record<Reason, number> = { VALID: 0, NOT_FOUND: 0, DISABLED: 0, NOT_ACTIVE: 0, EXPIRED: 0, LIMIT_EXCEEDED: 0, CLIENT_INACTIVE: 0, RATE_LIMITED: 0, TRIAL_ENDED: 0, NO_CREDIT: 0 };
  /** Set by `use` when it answers RATE_LIMITED, read right after by the caller (one event loop: nothing runs between). */
  let retryAfter = 0;

  /** Whether the order's uses this period have reached a stop: the hard limit, or the quota when it is enforced without overage. */
  function limitReached(entry: KeyEntry): boolean {
    const { hardLimit, included, overage } = entry.plan;
    const used = entry.usage.used;
    if (hardLimit !== null && used >= hardLimit) return true;
    return entry.enforceLimit && overage === null && included !== null && used >= included;
  }

  /** Whether a key's count matters to its answer (a limit to stop at): then it is re-read every few seconds. */
  function watched(entry: KeyEntry): boolean {
    return entry.limit !== null || entry.plan.included !== null || entry.plan.hardLimit !== null;
  }

  /** Whether the key is valid now, and why not; rolls the count over at the end of a usage period. */
  function judge(entry: KeyEntry, now: number): Exclude<Reason, 'NOT_FOUND'> {
    if (!entry.enabled) return 'DISABLED';
    if (!entry.clientActive) return 'CLIENT_INACTIVE';
    if (entry.orderStatus !== 'active') return entry.trialEnded ? 'TRIAL_ENDED' : 'NOT_ACTIVE';
    if (entry.expiresAtMs !== null && entry.expiresAtMs <= now) return 'EXPIRED';
    const period = entry.usage.period;
    if (now >= period.endMs || now < period.startMs) entries.rollPeriod(entry, now);
    if (watched(entry)) {
      if (now - entry.usage.usedAt > USAGE_REFRESH_MS) entries.refreshUsage(entry);
      if (limitReached(entry)) return 'LIMIT_EXCEEDED';
    }
    const meters = entry.usage.meters;
    if (meters !== null && meters.limited) {
      meterState.keepFresh(entry.orderId, meters, now);
      if (meters.limitedBy !== null) return 'LIMIT_EXCEEDED';
    }
    // A prepaid plan: refused once the order's uses reach where the balance runs out (credit-state.ts `stopAt`).
    const credit = entry.usage.credit;
    if (credit !== null) {
      creditSync.keepFresh(entry.orderId, entry.usage, now);
      if (entry.usage.used >= credit.stopAt) {
        if (!credit.depleted) creditSync.refused(entry.orderId, entry.usage);
        return 'NO_CREDIT';
      }
      if (entry.usage.used >= credit.drawAt) creditSync.halfSpent(credit);
    }
    return 'VALID';
  }

  function onFailedDecision(ip: string, decision: Decision): null {
    if (!decision.allowed) {
      if (blocked.size >= MAX_BLOCKED_ADDRESSES) {
        const oldest = blocked.keys().next();
        if (oldest.done !== true) blocked.delete(oldest.value);
      }
      blocked.set(ip, Date.now() + decision.resetSeconds * 1000);
      throw refusalOf(decision);
    }
    return null;
  }

  /** An unknown key: count it against the caller's API_KEY_CHECK_FAILED budget (429 once over). */
  function unknown(ip: string | null): null | Promise<null> {
    // A verifier that names no end-user address: nothing to count against (never the app server itself, §11).
    if (ip === null || limiter.isExempt(ip)) return null;
    const decision = limiter.hit('API_KEY_CHECK_FAILED', ip);
    return decision instanceof Promise ? decision.then((d) => onFailedDecision(ip, d)) : onFailedDecision(ip, decision);
  }

  /** A replaced key whose grace period has ended is as unknown as any other key, on every process at the same time. */
  function graceOver(entry: KeyEntry, now: number): boolean {
    return entry.rotatingUntilMs !== null && entry.rotatingUntilMs <= now;
  }

  /** The key's cached record (null when unknown), from the cache when warm. Throws 429 for a blocked address. */
  function resolve(key: string, ip: string | null, now: number): KeyEntry | null | Promise<KeyEntry | null> {
    if (blocked.size > 0 && ip !== null) {
      const until = blocked.get(ip);
      if (until !== undefined) {
        if (until > now) throw errors.rateLimited(Math.max(1, Math.ceil((until - now) / 1000)));
        blocked.delete(ip);
      }
    }
    if (!couldBeKey(key)) return unknown(ip);
    // A remembered key costs a Map lookup; any other is hashed, and remembered once its record is found.
    const remembered = hashMemo.get(key);
    const hash = remembered ?? secrets.hash(key);
    const cached = cache.get(hash, now);
    if (cached !== undefined) {
      if (cached === null || graceOver(cached, now)) return unknown(ip);
      if (remembered === undefined) hashMemo.remember(key, hash);
      return cached;
    }
    sync.listen();
    return entries.load(hash).then((entry) => {
      if (entry === null || graceOver(entry, Date.now())) return unknown(ip);
      if (remembered === undefined) hashMemo.remember(key, hash);
      return entry;
    });
  }

  /**
   * `answer(entry, use(entry))`, at once unless the order's per-key rate limit asks this process to wait for the
   * shared store's confirmation first (key-rate.ts). The wait ends with the judging in the same synchronous step as
   * the `confirmation` that allowed it, and `answer` reads `retryAfter` in that step too.
   */
  function useThen<T>(entry: KeyEntry | null, ip: string | null, now: number, clock: UsageClock, answer: (entry: KeyEntry | null, reason: Reason) => T): T | Promise<T> {
    if (entry !== null && entry.rateLimit !== null) {
      const wait = keyRates.confirmation(entry.orderId, entry.rateLimit);
      if (wait !== null) return wait.then(() => useThen(entry, ip, Date.now(), clock, answer));
    }
    return answer(entry, use(entry, ip, now, clock));
  }

  /** Judges the key, counts one use when valid, and counts the answer for key analytics (by key, or by address). */
  function use(entry: KeyEntry | null, ip: string | null, now: number, clock: UsageClock): Reason {
    if (entry === null) {
      reasons.NOT_FOUND++;
      outcomes.countNotFound(ip, now);
      return 'NOT_FOUND';
    }
    let reason = judge(entry, now);
    if (reason === 'VALID' && entry.rateLimit !== null) {
      // Over the order's per-key rate limit: refused, and not counted as a use (CONTRACT §12).
      const wait = keyRates.hit(entry.orderId, entry.rateLimit);
      if (wait !== null) {
        retryAfter = wait;
        reason = 'RATE_LIMITED';
      }
    }
    reasons[reason]++;
    outcomes.countKey(entry.id, reason, now, ip);
    if (reason === 'VALID') {
      metering.count(entry.id, clock.day);
      periodMeter.count(entry.id, entry.usage.bucket);
      entry.usage.used++;
      // This use exhausted the quota: the key's quota state changed (the verifiers' events stream, §11).
      if (limitReached(entry)) sync.announce(entry.id, entry.orderId);
    }
    return reason;
  }

  /** The plan's meters' figures, and the meter whose limit stops the key (`calls` first, as judge checks it first). */
  function meteredOf(entry: KeyEntry): MeteredSummary {
    const meters = entry.usage.meters;
    const limitedBy = limitReached(entry) ? 'calls' : (meters?.limitedBy ?? null);
    if (meters === null) return limitedBy === null ? NO_METERS : { limited_by: limitedBy, meters: [] };
    return { limited_by: limitedBy, meters: meterSummaries(deps.money, meters.meters, meters.quantities) };
  }

  function usageOf(entry: KeyEntry): UsageSummary {
    return withLimit(summaryOf(deps.money, entry.plan, entry.usage.period, entry.usage.used), entry.limit, meteredOf(entry));
  }

  /**
   * get_info's `credit` for a prepaid plan: the balance less what this process's unflushed uses cost, in the wallet's
   * currency (the client's); in the default one only when the view carries no wallet.
   */
  function creditOf(entry: KeyEntry): KeyInfo['credit'] {
    const credit = entry.usage.credit;
    if (credit === null) return undefined;
    const wallet = projectedWallet(credit, entry.usage.used);
    if (wallet !== null) return { balance: moneyFor(wallet.currency).format(wallet.balance), currency: wallet.currency };
    return { balance: deps.money.format(projectedBalance(credit, entry.usage.used)), currency: deps.money.currency };
  }

  function infoOf(entry: KeyEntry | null, reason: Reason): KeyInfo {
    if (entry === null) return { valid: 0, config: null, reason, usage: null, retry_after: null, rotating_until: null };
    const credit = creditOf(entry);
    return {
      ...(credit !== undefined && { credit }),
      valid: reason === 'VALID' ? 1 : 0,
      config: reason === 'VALID' ? entry.config : null,
      reason,
      usage: usageOf(entry),
      retry_after: reason === 'RATE_LIMITED' ? retryAfter : null,
      rotating_until: entry.rotatingUntilMs === null ? null : new Date(entry.rotatingUntilMs).toISOString().replace('.000Z', 'Z'),
    };
  }

  return {
    blocked,
    reasons,

    /**
     * guest and admin (verifier) check: true when the key is valid now; counts one use then. Failed lookups count
     * against `ip`: the caller's address for a guest, the end user's a verifier names (null: none, CONTRACT §11).
     */
    check: (key: string, ip: string | null): boolean | Promise<boolean> => {
      const now = Date.now();
      const clock = metering.clock(now);
      const found = resolve(key, ip, now);
      if (found instanceof Promise) return found.then((entry) => useThen(entry, ip, Date.now(), clock, isValid));
      return useThen(found, ip, now, clock, isValid);
    },

    /** guest/serviceapikey/get_info: validity, custom parameters, reason and usage; counts one use when valid. */
    getInfo: (key: string, ip: string): KeyInfo | Promise<KeyInfo> => {
      const now = Date.now();
      const clock = metering.clock(now);
      const found = resolve(key, ip, now);
      if (found instanceof Promise) return found.then((entry) => useThen(entry, ip, Date.now(), clock, infoOf));
      if (found !== null) {
        if (!watched(found) && now - found.usage.usedAt > USAGE_REFRESH_MS) entries.refreshUsage(found);
        // Every meter's figures are shown, hard-limited or not.
        if (found.usage.meters !== null) meterState.keepFresh(found.orderId, found.usage.meters, now, true);
      }
      return useThen(found, ip, now, clock, infoOf);
    },

    /** admin/serviceapikey/get_info: the guest answer plus `order_id` and `key_id` (null for an unknown key). */
    verifierInfo: async (key: string, ip: string | null): Promise<KeyInfo & { order_id: number | null; key_id: number | null }> => {
      const now = Date.now();
      const clock = metering.clock(now);
      const entry = await resolve(key, ip, now);
      if (entry?.usage.meters != null) meterState.keepFresh(entry.orderId, entry.usage.meters, now, true);
      const info = await useThen(entry, ip, Date.now(), clock, infoOf);
      return { ...info, order_id: entry?.orderId ?? null, key_id: entry?.id ?? null };
    },
  };
}

export type KeyCheck = ReturnType<typeof createKeyCheck>;
