// The API key product's domain logic: issuing keys for orders, the validation hot path (check / get_info), usage,
// and the staff and client key actions. The only writer of `api_keys` and `api_key_usage`.
//
// Hot path: the key's HMAC is computed once; a warm cache answers with a Map lookup, a comparison of the record's
// facts with the current time, and a Map update for the usage count. A miss costs three indexed reads (api_keys joined
// with orders, the order's key ids, and their summed uses in the current usage period). Unknown keys are remembered a few seconds and counted against the
// caller's API_KEY_CHECK_FAILED budget; an address over that budget is refused from a local map until its window ends.
//
// Consistency: every change to a key or its order marks the key "in flux" (the cache is bypassed for it) inside the
// transaction, and once the transaction has ended (`afterTransaction`, src/platform/transaction.ts) the key is dropped from
// the cache and the change is published to the other processes. Changes made inside the order service's transaction
// (product type hooks) and our own (update, reset) take the same path.
import cluster from 'node:cluster';
import type { Kysely, Selectable } from 'kysely';
import type { DialectName } from '../../db/database.ts';
import type { Database } from '../../db/schema.ts';
import { afterTransaction, inTransaction } from '../../platform/transaction.ts';
import { errors } from '../../platform/errors.ts';
import { enforce, type Decision, type HeaderTarget, type RateLimiter } from '../../platform/rate-limit.ts';
import { safeEqual, type SecretBox } from '../../lib/crypto.ts';
import { couldBeKey, generateKey } from '../../lib/keygen.ts';
import { pageRequest, toPage, type Page } from '../../lib/paginator.ts';
import { nowIso } from '../../lib/time.ts';
import type { OrderSnapshot } from '../product/product-type.ts';
import type { EventBus } from '../../platform/events.ts';
import './events.ts';
import { KeyCache, type KeyEntry, type OrderUsage } from './check/cache.ts';
import { readKeyLimits } from './key-limits.ts';
import { KeyRateLimiter, type LocalCounterStore } from './check/key-rate.ts';
import { KeyEventHub } from './sync/events-stream.ts';
import { ClusterChannel, LocalChannel, PostgresChannel, RedisChannel, refToken, type InvalidationChannel } from './sync/invalidation.ts';
import { reportUsage, type UsageItem } from './usage/usage-report.ts';
import { createSeveralKeys } from './issuing/several-keys.ts';
import { usageReport, type UsageReport } from './usage/usage-range.ts';
import { Metering, type UsageClock } from './usage/metering.ts';
import { flatCustomOf, KEY_OPTION_NAMES, keyOptionsOf, monthlyLimitOf, normalizeCustom, readApiKeyConfig, type CustomParams } from './options.ts';
import type { Money } from '../../lib/money.ts';
import { overageMinor, overageUnits } from '../../lib/usage-pricing.ts';
import { periodOfRow, periodUsageWriter } from './usage/period-usage.ts';
import { createThresholdWatcher } from './usage/thresholds.ts';
import { bucketOf, periodDays, usagePeriodAt, type UsagePeriod } from './usage/usage-period.ts';
import { planOf, USAGE_OPTION_NAMES, usageOptionsOf, type UsageOptions, type UsagePlan } from './usage/usage-plan.ts';
import { parseObject } from '../../lib/json.ts';
import { KeyHashMemo } from './check/hash-memo.ts';

export type Reason = 'VALID' | 'NOT_FOUND' | 'DISABLED' | 'CLIENT_INACTIVE' | 'NOT_ACTIVE' | 'EXPIRED' | 'LIMIT_EXCEEDED' | 'RATE_LIMITED';

export interface UsageSummary {
  /** Calendar month: its first and last day (`YYYY-MM-DD`); billing period: its start and end instants. */
  period_start: string;
  period_end: string;
  used: number;
  limit: number | null;
  remaining: number | null;
  /** CONTRACT §12: uses included per period (null: unlimited), uses beyond them billed, their projected price. */
  included: number | null;
  overage_units: number;
  /** Null when the plan bills no overage. */
  overage_amount: string | null;
  hard_limit: number | null;
}

export interface KeyInfo {
  valid: 0 | 1;
  config: CustomParams | null;
  reason: Reason;
  usage: UsageSummary | null;
  /** Seconds until the per-key rate limit lets calls through again (RATE_LIMITED only). */
  retry_after: number | null;
  /** The end of this key's grace period when it is a replaced key still validating (a reset with grace_seconds). */
  rotating_until: string | null;
}

export interface KeyRecord {
  /** The key's own id (an order may hold several keys, CONTRACT §12). */
  id: number;
  name: string | null;
  order_id: number;
  client_id: number;
  api_key: string;
  valid: 0 | 1;
  config: CustomParams;
  /** Whether check would accept the key right now, and why not. */
  reason: Reason;
  /** When the key this one replaced stops validating (a reset with grace_seconds), while in the future; else null. */
  rotating_until: string | null;
  created_at: string;
  updated_at: string;
}

export type { UsageReport } from './usage/usage-range.ts';

export interface ApiKeyServiceDeps {
  db: Kysely<Database>;
  dialect: DialectName;
  postgresUrl: string | null;
  redisUrl: string | null;
  redisPrefix: string;
  secrets: SecretBox;
  limiter: RateLimiter;
  /** The per-key rate limits' counters (CONTRACT §12): local, shared in the background (src/platform/counters/batched.ts). */
  keyRateStore: LocalCounterStore;
  keyCacheSize: number;
  /**
   * The client's account status (a suspended or canceled client's keys are invalid: CLIENT_INACTIVE), and
   * the apikey.* events announced inside the change's transaction (security notices, webhooks).
   */
  events: Pick<EventBus, 'on' | 'emit'>;
  /** Where background failures (flush, pub/sub) are reported; never receives a key. */
  log?: (error: unknown, what: string) => void;
  /** The currency overage amounts are projected in (get_info.usage.overage_amount). */
  money: Pick<Money, 'format' | 'precision'>;
}

type KeyRow = Selectable<Database['api_keys']>;

/** How old the cached period count of an order with a limit may be before it is re-read in the background. */
const USAGE_REFRESH_MS = 2000;
const MAX_BLOCKED_ADDRESSES = 100_000;
/** The longest grace period a reset may keep the old key working for (7 days). */
export const MAX_GRACE_SECONDS = 604_800;

export function createApiKeyService(deps: ApiKeyServiceDeps) {
  const { db, secrets, limiter } = deps;
  const log = deps.log ?? ((error: unknown, what: string) => process.emitWarning(`serviceapikey: ${what} failed: ${String(error)}`));
  const cache = new KeyCache({ maxEntries: deps.keyCacheSize });
  const hashMemo = new KeyHashMemo(deps.keyCacheSize);
  const keyRates = new KeyRateLimiter(deps.keyRateStore);
  /** Order id → its uses this period, shared by the cached records of its keys. */
  const orderUsage = new Map<number, OrderUsage>();
  /** Set by `use` when it answers RATE_LIMITED, read right after by the caller (one event loop: nothing runs between). */
  let retryAfter = 0;
  const metering = new Metering(db, (error) => log(error, 'usage flush'));
  metering.start();
  // Uses per usage period (what limits and bills read); its flush also announces the usage thresholds crossed.
  const thresholds = createThresholdWatcher({ db, events: deps.events });
  const periodMeter = new Metering(db, (error) => log(error, 'usage flush'), periodUsageWriter(), (rows) => thresholds.afterWrite(rows.map(periodOfRow)));
  periodMeter.start();
  const channel: InvalidationChannel =
    deps.redisUrl !== null
      ? new RedisChannel(deps.redisUrl, deps.redisPrefix, cache, log)
      : deps.dialect === 'postgres' && deps.postgresUrl !== null
        ? new PostgresChannel(deps.postgresUrl, db, cache, log)
        : cluster.isWorker
          ? new ClusterChannel(cache)
          : new LocalChannel(cache);
  // The verifiers' events stream hears of every key change, from this process or another, through the channel.
  const keyEvents = new KeyEventHub();
  channel.onKeyChanged = (ref) => keyEvents.publish(ref);
  channel.onReset = () => keyEvents.resync();
  /** Address → epoch ms until which it is refused (over API_KEY_CHECK_FAILED). */
  const blocked = new Map<string, number>();
  const loading = new Map<string, { epoch: number; promise: Promise<KeyEntry | null> }>();
  let listening = false;
  let closed = false;
  /** Checks and get_info calls answered, by reason (read by /metrics). */
  const reasons: Record<Reason, number> = { VALID: 0, NOT_FOUND: 0, DISABLED: 0, NOT_ACTIVE: 0, EXPIRED: 0, LIMIT_EXCEEDED: 0, CLIENT_INACTIVE: 0, RATE_LIMITED: 0 };

  // ---- hot path ----------------------------------------------------------------------------------------------

  /** The order's shared usage record, refreshed in place with a total just read (its keys' records keep sharing it). */
  function orderUsageOf(orderId: number, keyIds: number[], period: UsagePeriod, used: number, now: number): OrderUsage {
    const bucket = bucketOf(period);
    let usage = orderUsage.get(orderId);
    if (usage === undefined) {
      // Bounded like the cache: records still holding a dropped object keep working; they refresh on their own.
      if (orderUsage.size >= deps.keyCacheSize * 2) orderUsage.clear();
      usage = { keyIds, period, bucket, used, usedAt: now, refreshing: false };
      orderUsage.set(orderId, usage);
    } else {
      Object.assign(usage, { keyIds, period, bucket, used, usedAt: now });
    }
    return usage;
  }

  /** This process's uses of these keys not yet written, in the period of this meter bucket. */
  function unflushedOf(keyIds: readonly number[], bucket: string): number {
    let total = 0;
    for (const id of keyIds) total += periodMeter.unflushedTotal(id, bucket, bucket);
    return total;
  }

  function entryOf(
    row: {
      id: number;
      order_id: number;
      client_id: number;
      valid: number;
      config: string;
      options: string;
      status: string;
      expires_at: string | null;
      client_status: string;
      order_period: string | null;
    },
    keyIds: number[],
    rotatingUntilMs: number | null,
    used: number,
    period: UsagePeriod,
    now: number,
  ): KeyEntry {
    const config = parseObject(row.config);
    const options = parseObject(row.options);
    return {
      id: row.id,
      orderId: row.order_id,
      clientId: row.client_id,
      enabled: row.valid === 1,
      clientActive: row.client_status === 'active',
      orderStatus: row.status,
      expiresAtMs: row.expires_at === null ? null : Date.parse(row.expires_at),
      config,
      limit: monthlyLimitOf(config),
      enforceLimit: options.enforce_limit === true,
      plan: planOf(usageOptionsOf(options), config),
      orderPeriod: row.order_period,
      usage: orderUsageOf(row.order_id, keyIds, period, used + unflushedOf(keyIds, bucketOf(period)), now),
      rateLimit: readKeyLimits(options).rate_limit,
      rotatingUntilMs,
      loadedAt: now,
      tick: 0,
    };
  }

  /** The flushed uses of an order's keys (deleted keys included: their uses stay counted) in the period starting at `periodStart`. */
  async function periodTotal(trx: Kysely<Database>, keyIds: readonly number[], periodStart: string): Promise<number> {
    const row = await trx
      .selectFrom('api_key_period_usage')
      .select((eb) => eb.fn.coalesce(eb.fn.sum<number | string>('count'), eb.lit(0)).as('used'))
      .where('api_key_id', 'in', keyIds.length === 0 ? [0] : keyIds)
      .where('period_start', '=', periodStart)
      .executeTakeFirst();
    return Number(row?.used ?? 0);
  }

  /** The ids of all an order's keys, deleted ones included. */
  async function orderKeyIds(trx: Kysely<Database>, orderId: number): Promise<number[]> {
    return (await trx.selectFrom('api_keys').select('id').where('order_id', '=', orderId).execute()).map((key) => key.id);
  }

  /** The usage period a key of this plan is in at `now`. */
  function periodOf(plan: Pick<UsagePlan, 'period' | 'anchor'>, now: number, order: { period: string | null; expiresAtMs: number | null }): UsagePeriod {
    return usagePeriodAt(plan.period, now, order, plan.anchor ?? null);
  }

  async function readEntry(hash: string): Promise<KeyEntry | null> {
    const now = Date.now();
    const row = await db
      .selectFrom('api_keys as k')
      .innerJoin('orders as o', 'o.id', 'k.order_id')
      .innerJoin('clients as c', 'c.id', 'k.client_id')
      .select([
        'k.id',
        'k.order_id',
        'k.client_id',
        'k.valid',
        'k.config',
        'k.options',
        'k.key_hash',
        'k.grace_until',
        'o.status',
        'o.expires_at',
        'o.period as order_period',
        'c.status as client_status',
      ])
      .where((eb) => eb.or([eb('k.key_hash', '=', hash), eb('k.grace_hash', '=', hash)]))
      .where('k.deleted_at', 'is', null)
      .executeTakeFirst();
    if (row === undefined) return null;
    // Found by its grace hash: a replaced key, validating until the grace ends (then as unknown as any other).
    const rotatingUntilMs = row.key_hash === hash ? null : row.grace_until === null ? 0 : Date.parse(row.grace_until);
    const options = parseObject(row.options);
    const period = periodOf(planOf(usageOptionsOf(options), {}), now, { period: row.order_period, expiresAtMs: row.expires_at === null ? null : Date.parse(row.expires_at) });
    // The order's keys share its quota: its uses in the period are the sum over all of them.
    const keyIds = await orderKeyIds(db, row.order_id);
    const used = await periodTotal(db, keyIds, period.start);
    return entryOf(row, keyIds, rotatingUntilMs, used, period, Date.now());
  }

  function load(hash: string): Promise<KeyEntry | null> {
    const epoch = cache.epoch;
    const pending = loading.get(hash);
    if (pending !== undefined && pending.epoch === epoch) return pending.promise;
    const promise = readEntry(hash)
      .then((entry) => {
        cache.fill(hash, entry, epoch, Date.now());
        return entry;
      })
      .finally(() => {
        if (loading.get(hash)?.promise === promise) loading.delete(hash);
      });
    loading.set(hash, { epoch, promise });
    return promise;
  }

  function refreshUsage(entry: KeyEntry): void {
    const usage = entry.usage;
    if (usage.refreshing || closed) return;
    usage.refreshing = true;
    const bucket = usage.bucket;
    periodTotal(db, usage.keyIds, usage.period.start)
      .then((used) => {
        if (usage.bucket !== bucket) return;
        usage.used = used + unflushedOf(usage.keyIds, bucket);
        usage.usedAt = Date.now();
      })
      .catch((error: unknown) => log(error, 'usage refresh'))
      .finally(() => {
        usage.refreshing = false;
      });
  }

  /** Moves the order's count to the usage period holding `now` (a period ended). */
  function rollPeriod(entry: KeyEntry, now: number): void {
    const usage = entry.usage;
    const period = periodOf(entry.plan, now, { period: entry.orderPeriod, expiresAtMs: entry.expiresAtMs });
    const bucket = bucketOf(period);
    usage.period = period;
    if (bucket === usage.bucket) return;
    usage.bucket = bucket;
    usage.used = unflushedOf(usage.keyIds, bucket);
    usage.usedAt = 0;
  }

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
  function judge(entry: KeyEntry, now: number): Reason {
    if (!entry.enabled) return 'DISABLED';
    if (!entry.clientActive) return 'CLIENT_INACTIVE';
    if (entry.orderStatus !== 'active') return 'NOT_ACTIVE';
    if (entry.expiresAtMs !== null && entry.expiresAtMs <= now) return 'EXPIRED';
    const period = entry.usage.period;
    if (now >= period.endMs || now < period.startMs) rollPeriod(entry, now);
    if (watched(entry)) {
      if (now - entry.usage.usedAt > USAGE_REFRESH_MS) refreshUsage(entry);
      if (limitReached(entry)) return 'LIMIT_EXCEEDED';
    }
    return 'VALID';
  }

  function onFailedDecision(ip: string, reply: HeaderTarget, decision: Decision): null {
    if (!decision.allowed) {
      if (blocked.size >= MAX_BLOCKED_ADDRESSES) {
        const oldest = blocked.keys().next();
        if (oldest.done !== true) blocked.delete(oldest.value);
      }
      blocked.set(ip, Date.now() + decision.resetSeconds * 1000);
      enforce(reply, decision);
    }
    return null;
  }

  /** An unknown key: count it against the caller's API_KEY_CHECK_FAILED budget (429 once over). */
  function unknown(ip: string | null, reply: HeaderTarget): null | Promise<null> {
    // A verifier that names no end-user address: nothing to count against (never the app server itself, §11).
    if (ip === null || limiter.isExempt(ip)) return null;
    const decision = limiter.hit('API_KEY_CHECK_FAILED', ip);
    return decision instanceof Promise ? decision.then((d) => onFailedDecision(ip, reply, d)) : onFailedDecision(ip, reply, decision);
  }

  /** The key's cached record (null when unknown), from the cache when warm. Throws 429 for a blocked address. */
  function resolve(key: string, ip: string | null, reply: HeaderTarget, now: number): KeyEntry | null | Promise<KeyEntry | null> {
    if (blocked.size > 0 && ip !== null) {
      const until = blocked.get(ip);
      if (until !== undefined) {
        if (until > now) throw errors.rateLimited(Math.max(1, Math.ceil((until - now) / 1000)));
        blocked.delete(ip);
      }
    }
    if (!couldBeKey(key)) return unknown(ip, reply);
    // A remembered key costs a Map lookup; any other is hashed, and remembered once its record is found.
    const remembered = hashMemo.get(key);
    const hash = remembered ?? secrets.hash(key);
    const cached = cache.get(hash, now);
    if (cached !== undefined) {
      if (cached === null || graceOver(cached, now)) return unknown(ip, reply);
      if (remembered === undefined) hashMemo.remember(key, hash);
      return cached;
    }
    listenForChanges();
    return load(hash).then((entry) => {
      if (entry === null || graceOver(entry, Date.now())) return unknown(ip, reply);
      if (remembered === undefined) hashMemo.remember(key, hash);
      return entry;
    });
  }

  /** A replaced key whose grace period has ended is as unknown as any other key, on every process at the same time. */
  function graceOver(entry: KeyEntry, now: number): boolean {
    return entry.rotatingUntilMs !== null && entry.rotatingUntilMs <= now;
  }

  function listenForChanges(): void {
    if (!listening) {
      listening = true;
      channel.listen();
    }
  }

  /**
   * `answer(entry, use(entry))`, at once unless the order's per-key rate limit asks this process to wait for the
   * shared store's confirmation first (key-rate.ts). The wait ends with the judging in the same synchronous step as
   * the `confirmation` that allowed it, and `answer` reads `retryAfter` in that step too.
   */
  function useThen<T>(entry: KeyEntry | null, now: number, clock: UsageClock, answer: (entry: KeyEntry | null, reason: Reason) => T): T | Promise<T> {
    if (entry !== null && entry.rateLimit !== null) {
      const wait = keyRates.confirmation(entry.orderId, entry.rateLimit);
      if (wait !== null) return wait.then(() => useThen(entry, Date.now(), clock, answer));
    }
    return answer(entry, use(entry, now, clock));
  }

  /** Judges the key and counts one use when valid. */
  function use(entry: KeyEntry | null, now: number, clock: UsageClock): Reason {
    if (entry === null) {
      reasons.NOT_FOUND++;
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
    if (reason === 'VALID') {
      metering.count(entry.id, clock.day);
      periodMeter.count(entry.id, entry.usage.bucket);
      entry.usage.used++;
      // This use exhausted the quota: the key's quota state changed (the verifiers' events stream, §11).
      if (limitReached(entry)) channel.publish([refToken(entry.id, entry.orderId)]);
    }
    return reason;
  }

  function usageOf(entry: KeyEntry): UsageSummary {
    return withLimit(summaryOf(entry.plan, entry.usage.period, entry.usage.used), entry.limit);
  }

  /** §7.1's `limit` and `remaining`; an overage plan's `remaining` is to its hard limit, or null (docs/usage-and-billing.md). */
  function withLimit(summary: Omit<UsageSummary, 'limit' | 'remaining'>, limit: number | null): UsageSummary {
    const { period_start, period_end, used, ...plan } = summary, stop = plan.overage_amount === null ? limit : plan.hard_limit;
    return { period_start, period_end, used, limit, remaining: stop === null ? null : Math.max(0, stop - used), ...plan };
  }

  /** The period's bounds and the plan's figures for `used` uses (the projected overage at today's count). */
  function summaryOf(plan: UsagePlan, period: UsagePeriod, used: number): Omit<UsageSummary, 'limit' | 'remaining'> {
    const units = plan.overage === null ? 0 : overageUnits(used, plan.included);
    const days = periodDays(period);
    return {
      period_start: period.calendar ? days.from : period.start,
      period_end: period.calendar ? days.to : period.end,
      used,
      included: plan.included,
      overage_units: units,
      overage_amount: plan.overage === null ? null : deps.money.format(overageMinor(plan.overage, units, deps.money.precision)),
      hard_limit: plan.hardLimit,
    };
  }

  function infoOf(entry: KeyEntry | null, reason: Reason): KeyInfo {
    if (entry === null) return { valid: 0, config: null, reason, usage: null, retry_after: null, rotating_until: null };
    return {
      valid: reason === 'VALID' ? 1 : 0,
      config: reason === 'VALID' ? entry.config : null,
      reason,
      usage: usageOf(entry),
      retry_after: reason === 'RATE_LIMITED' ? retryAfter : null,
      rotating_until: entry.rotatingUntilMs === null ? null : new Date(entry.rotatingUntilMs).toISOString().replace('.000Z', 'Z'),
    };
  }

  // ---- writes: consistency with the cache ----------------------------------------------------------------------

  /** These keys change in `trx`: bypass the cache for them until it has ended, then drop them here and everywhere. */
  // `refs` (refToken) name the changed keys for the verifiers' events stream; published only on commit.
  function changedInTransaction(trx: Kysely<Database>, hashes: string[], refs: string[] = []): void {
    const now = Date.now();
    for (const hash of hashes) cache.beginChange(hash, now);
    afterTransaction(trx, (committed) => {
      for (const hash of hashes) cache.endChange(hash);
      channel.publish(committed ? [...hashes, ...refs] : hashes);
    });
  }

  /** Runs our own transaction changing these keys (more may be added inside with changedInTransaction). */
  function change<T>(hashes: string[], refs: string[], work: (trx: Kysely<Database>) => Promise<T>): Promise<T> {
    return inTransaction(db, (trx) => {
      changedInTransaction(trx, hashes, refs);
      return work(trx);
    });
  }

  /** A fresh key that no other key has (unique key_hash), with its hash and sealed copy. */
  async function freshKey(trx: Kysely<Database>, config: ReturnType<typeof readApiKeyConfig>) {
    for (let attempt = 0; attempt < 10; attempt++) {
      const key = generateKey(keyOptionsOf(config));
      const hash = secrets.hash(key);
      // Unique among current keys and replaced keys in their grace period (both are looked up by hash).
      const taken = await trx
        .selectFrom('api_keys')
        .select('id')
        .where((eb) => eb.or([eb('key_hash', '=', hash), eb('grace_hash', '=', hash)]))
        .executeTakeFirst();
      if (taken === undefined) return { key, hash, sealed: secrets.encrypt(key) };
    }
    throw errors.conflict('Could not generate a unique key with these options; use a longer key length');
  }

  // ---- reads for staff and clients -----------------------------------------------------------------------------

  function reasonOf(
    row: { valid: number; options: string; config: string },
    order: { status: string; expires_at: string | null; client_status: string },
    used: number,
  ): Reason {
    if (row.valid !== 1) return 'DISABLED';
    if (order.client_status !== 'active') return 'CLIENT_INACTIVE';
    if (order.status !== 'active') return 'NOT_ACTIVE';
    if (order.expires_at !== null && Date.parse(order.expires_at) <= Date.now()) return 'EXPIRED';
    const options = parseObject(row.options);
    const { hardLimit, included, overage } = planOf(usageOptionsOf(options), parseObject(row.config));
    if (hardLimit !== null && used >= hardLimit) return 'LIMIT_EXCEEDED';
    if (options.enforce_limit === true && overage === null && included !== null && used >= included) return 'LIMIT_EXCEEDED';
    return 'VALID';
  }

  /**
   * The order's plan (its keys share it), its usage period now and its uses in it: the sum over all its keys,
   * deleted ones included, flushed and this process's unflushed counts.
   */
  async function currentUsage(
    trx: Kysely<Database>,
    row: { order_id: number; options: string; config: string; expires_at: string | null; order_period: string | null },
  ): Promise<{ plan: UsagePlan; period: UsagePeriod; used: number }> {
    const plan = planOf(usageOptionsOf(parseObject(row.options)), parseObject(row.config));
    const period = periodOf(plan, Date.now(), { period: row.order_period, expiresAtMs: row.expires_at === null ? null : Date.parse(row.expires_at) });
    const keyIds = await orderKeyIds(trx, row.order_id);
    return { plan, period, used: (await periodTotal(trx, keyIds, period.start)) + unflushedOf(keyIds, bucketOf(period)) };
  }

  function rotatingUntil(row: { grace_until: string | null }): string | null {
    return row.grace_until !== null && Date.parse(row.grace_until) > Date.now() ? row.grace_until : null;
  }

  async function recordOf(
    trx: Kysely<Database>,
    row: KeyRow & { status: string; expires_at: string | null; client_status: string; order_period: string | null },
    used?: number,
  ): Promise<KeyRecord> {
    return {
      id: row.id,
      name: row.name,
      order_id: row.order_id,
      client_id: row.client_id,
      api_key: secrets.decrypt(row.key_enc),
      valid: row.valid === 1 ? 1 : 0,
      config: parseObject(row.config),
      reason: reasonOf(row, row, used ?? (await currentUsage(trx, row)).used),
      rotating_until: rotatingUntil(row),
      created_at: row.created_at,
      updated_at: row.updated_at,
    };
  }

  /** The live (not deleted) keys with their order's and client's facts. */
  function keysWithOrders(trx: Kysely<Database>) {
    return trx
      .selectFrom('api_keys')
      .innerJoin('orders', 'orders.id', 'api_keys.order_id')
      .innerJoin('clients', 'clients.id', 'api_keys.client_id')
      .selectAll('api_keys')
      .select(['orders.status', 'orders.expires_at', 'orders.period as order_period', 'clients.status as client_status'])
      .where('api_keys.deleted_at', 'is', null);
  }

  /**
   * One key, the caller's own when `clientId` is given (404 otherwise): by its `id`, by the key itself, or by
   * `order_id` when the order holds one key (an order with several needs `id` or `key`: 422).
   */
  async function requireKey(
    trx: Kysely<Database>,
    by: { id?: number | undefined; order_id?: number | undefined; key?: string | undefined },
    clientId?: number,
  ) {
    let query = keysWithOrders(trx);
    if (by.id !== undefined) query = query.where('api_keys.id', '=', by.id);
    else if (by.order_id !== undefined) query = query.where('api_keys.order_id', '=', by.order_id);
    else if (by.key !== undefined) query = query.where('api_keys.key_hash', '=', secrets.hash(by.key));
    else throw errors.invalid('order_id', 'is required (or id, or key)');
    if (clientId !== undefined) query = query.where('api_keys.client_id', '=', clientId);
    const rows = await query.orderBy('api_keys.id').limit(2).execute();
    if (rows.length === 0) throw errors.apiKeyNotFound();
    if (rows.length > 1) throw errors.invalid('id', 'is required: this order holds several keys; name one with id or key');
    return rows[0]!;
  }

  /** Every key of an order, deleted ones included (the cache and the other processes must forget them all). */
  function orderKeys(trx: Kysely<Database>, orderId: number) {
    return trx.selectFrom('api_keys').select(['id', 'key_hash', 'grace_hash', 'options', 'deleted_at']).where('order_id', '=', orderId).orderBy('id').execute();
  }

  /** Marks every key of the order as changing in `trx` (its records, grace hashes included, drop everywhere on commit). */
  function orderChangedIn(trx: Kysely<Database>, orderId: number, keys: Array<{ id: number; key_hash: string; grace_hash: string | null }>): void {
    if (keys.length === 0) return;
    const hashes: string[] = [];
    for (const key of keys) {
      hashes.push(key.key_hash);
      if (key.grace_hash !== null) hashes.push(key.grace_hash);
    }
    changedInTransaction(trx, hashes, keys.map((key) => refToken(key.id, orderId)));
  }

  /** The options stored with each key: the key options, the §12 limits and the usage options, from a product config. */
  function storedOptions(config: ReturnType<typeof readApiKeyConfig>, usage: UsageOptions): string {
    return JSON.stringify({
      length: config.length,
      split: config.split,
      split_interval: config.split_interval,
      capitalization: config.capitalization,
      enforce_limit: config.enforce_limit,
      rate_limit: config.rate_limit,
      max_keys: config.max_keys,
      ...usage,
    });
  }

  /** The client's account became inactive or active again: its keys' records change with it, here and everywhere. */
  async function clientStatusChanged({ clientId }: { clientId: number }, trx: Kysely<Database>): Promise<void> {
    const keys = await trx.selectFrom('api_keys').select(['id', 'order_id', 'key_hash', 'grace_hash']).where('client_id', '=', clientId).execute();
    // Replaced keys still in their grace period are cached under their own hash: they go too.
    const hashes = keys.flatMap((key) => (key.grace_hash === null ? [key.key_hash] : [key.key_hash, key.grace_hash]));
    if (keys.length > 0) changedInTransaction(trx, hashes, keys.map((key) => refToken(key.id, key.order_id)));
  }
  deps.events.on('client.deactivated', clientStatusChanged);
  deps.events.on('client.reactivated', clientStatusChanged);
  const severalKeys = createSeveralKeys({ db, dialect: deps.dialect, events: deps.events, freshKey, orderKeys, orderChangedIn });

  return {
    /** For tests and the benchmark: the cache, the meter and the channel. */
    internals: { cache, hashMemo, metering, channel, blocked },

    /** Figures for /metrics: answers by reason, key-cache size and hits, usage-flush lag. */
    stats() {
      return { reasons, cacheSize: cache.size, cacheHits: cache.hits, cacheMisses: cache.misses, flushLagMs: metering.lagMs(Date.now()) };
    },

    // ---- guest: the hot path ----

    /** guest/serviceapikey/check: true when the key is valid now; counts one use then. */
    check(key: string, ip: string, reply: HeaderTarget): boolean | Promise<boolean> {
      const now = Date.now();
      const clock = metering.clock(now);
      const found = resolve(key, ip, reply, now);
      if (found instanceof Promise) return found.then((entry) => useThen(entry, Date.now(), clock, isValid));
      return useThen(found, now, clock, isValid);
    },

    /** guest/serviceapikey/get_info: validity, custom parameters, reason and usage; counts one use when valid. */
    getInfo(key: string, ip: string, reply: HeaderTarget): KeyInfo | Promise<KeyInfo> {
      const now = Date.now();
      const clock = metering.clock(now);
      const found = resolve(key, ip, reply, now);
      if (found instanceof Promise) return found.then((entry) => useThen(entry, Date.now(), clock, infoOf));
      if (found !== null && !watched(found) && now - found.usage.usedAt > USAGE_REFRESH_MS) refreshUsage(found);
      return useThen(found, now, clock, infoOf);
    },

    // ---- verifiers (CONTRACT §11): failed lookups count against the end user's `ip`, never the app server ----

    /** admin/serviceapikey/check. */
    verifierCheck(key: string, ip: string | null, reply: HeaderTarget): boolean | Promise<boolean> {
      const now = Date.now();
      const clock = metering.clock(now);
      const found = resolve(key, ip, reply, now);
      if (found instanceof Promise) return found.then((entry) => useThen(entry, Date.now(), clock, isValid));
      return useThen(found, now, clock, isValid);
    },

    /** admin/serviceapikey/get_info: the guest answer plus `order_id` and `key_id` (null for an unknown key). */
    async verifierInfo(key: string, ip: string | null, reply: HeaderTarget): Promise<KeyInfo & { order_id: number | null; key_id: number | null }> {
      const now = Date.now();
      const clock = metering.clock(now);
      const entry = await resolve(key, ip, reply, now);
      const info = await useThen(entry, Date.now(), clock, infoOf);
      return { ...info, order_id: entry?.orderId ?? null, key_id: entry?.id ?? null };
    },

    /** admin/serviceapikey/report_usage: uses answered from an SDK's cache; a batch id already seen adds nothing. */
    async reportUsage(batchId: string, usage: readonly UsageItem[], staffId: number): Promise<true> {
      const now = Date.now();
      const clock = metering.clock(now);
      const added = await reportUsage(db, { batchId, usage, staffId, day: clock.day, now });
      for (const key of added) {
        // Cached records learn the uses now; a key whose quota this exhausted changed state (events stream).
        const entry = cache.get(key.key_hash, Date.now());
        if (entry !== undefined && entry !== null && entry.usage.period.start === key.periodStart) entry.usage.used += key.count;
        const stop = key.hardLimit ?? (key.enforceLimit && !key.overage ? key.included : null);
        if (stop !== null) {
          // The order's keys share its quota: its uses in the period, over all its keys.
          const keyIds = await orderKeyIds(db, key.order_id);
          const used = (await periodTotal(db, keyIds, key.periodStart)) + unflushedOf(keyIds, bucketOf({ start: key.periodStart, end: key.periodEnd }));
          if (used >= stop && used - key.count < stop) channel.publish([refToken(key.id, key.order_id)]);
        }
      }
      await thresholds.afterWrite(added.map((key) => ({ api_key_id: key.id, period_start: key.periodStart })));
      return true;
    },

    /** The verifiers' events stream: every key change from any process (starts listening on first use). */
    keyEvents(): KeyEventHub {
      listenForChanges();
      return keyEvents;
    },

    // ---- product type hooks (inside the order's transaction) ----

    /** Issues the order's first key on its first activation; later activations keep its keys. */
    async issue(trx: Kysely<Database>, order: OrderSnapshot): Promise<void> {
      const existing = await orderKeys(trx, order.id);
      if (existing.length > 0) {
        orderChangedIn(trx, order.id, existing);
        return;
      }
      const config = readApiKeyConfig(order.config);
      const { hash, sealed } = await freshKey(trx, config);
      const now = nowIso();
      const inserted = await trx
        .insertInto('api_keys')
        .values({
          order_id: order.id,
          client_id: order.client_id,
          key_hash: hash,
          key_enc: sealed,
          valid: 1,
          options: storedOptions(config, usageOptionsOf(order.config)),
          config: JSON.stringify(config.custom),
          created_at: now,
          updated_at: now,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      changedInTransaction(trx, [hash], [refToken(inserted.id, order.id)]);
      await deps.events.emit('apikey.issued', { orderId: order.id, clientId: order.client_id, keyId: inserted.id }, trx);
    },

    /** The order changed (status, expiry): the keys stay, their cached records go. */
    async orderChanged(trx: Kysely<Database>, order: OrderSnapshot): Promise<void> {
      orderChangedIn(trx, order.id, await orderKeys(trx, order.id));
    },

    /**
     * The order moved to another plan: the keys keep their material and take the new plan's custom parameters,
     * limit enforcement, rate limit and key allowance. Inside the order's transaction; caches drop them on commit.
     */
    async planChanged(trx: Kysely<Database>, orderId: number, productConfig: Record<string, unknown>): Promise<void> {
      const existing = await orderKeys(trx, orderId);
      if (existing.length === 0) return;
      const config = readApiKeyConfig(productConfig);
      // The new plan's usage options replace the old ones on every key of the order; the period's overage is billed at
      // the plan in force when the period closes (CONTRACT §12, docs/pricing-by-use.md).
      const plan = { enforce_limit: config.enforce_limit, rate_limit: config.rate_limit, max_keys: config.max_keys, ...usageOptionsOf(productConfig) };
      for (const key of existing) {
        const kept = Object.fromEntries(Object.entries(parseObject(key.options)).filter(([name]) => !USAGE_OPTION_NAMES.includes(name)));
        const options = { ...kept, ...plan };
        await trx
          .updateTable('api_keys')
          .set({ config: JSON.stringify(config.custom), options: JSON.stringify(options), updated_at: nowIso() })
          .where('id', '=', key.id)
          .execute();
      }
      orderChangedIn(trx, orderId, existing);
    },

    /** The order is being deleted: so are its keys, with their usage. */
    async orderDeleted(trx: Kysely<Database>, order: OrderSnapshot): Promise<void> {
      const existing = await orderKeys(trx, order.id);
      if (existing.length === 0) return;
      const ids = existing.map((key) => key.id);
      await trx.deleteFrom('api_key_usage').where('api_key_id', 'in', ids).execute();
      await trx.deleteFrom('api_keys').where('id', 'in', ids).execute();
      for (const id of ids) {
        metering.forget(id);
        periodMeter.forget(id);
      }
      orderChangedIn(trx, order.id, existing);
    },

    /** `{api_key, config, valid, reason}` of the order's first key for order/service; nulls before it is issued. */
    async serviceFields(trx: Kysely<Database>, order: OrderSnapshot): Promise<Record<string, unknown>> {
      const row = await keysWithOrders(trx).where('api_keys.order_id', '=', order.id).orderBy('api_keys.id').executeTakeFirst();
      if (row === undefined) return { api_key: null, config: null, valid: 0, reason: 'NOT_ACTIVE', usage: null };
      // This period's use and its projected overage, as get_info shows it (the client area and the admin order page).
      const { plan, period, used } = await currentUsage(trx, row);
      const record = await recordOf(trx, row, used);
      const limit = monthlyLimitOf(record.config);
      const usage = withLimit(summaryOf(plan, period, used), limit);
      return { api_key: record.api_key, config: record.config, valid: record.valid, reason: record.reason, usage, max_keys: readKeyLimits(parseObject(row.options)).max_keys };
    },

    // ---- staff and clients ----

    /** admin/serviceapikey/update: the validity switch and the custom parameters of all the order's keys; never a key. */
    async update(params: { order_id: number; valid?: boolean | undefined; config?: Record<string, unknown> | undefined; api_key?: string | undefined }): Promise<void> {
      const keys = await keysWithOrders(db).where('api_keys.order_id', '=', params.order_id).orderBy('api_keys.id').execute();
      const current = keys[0];
      if (current === undefined) throw errors.apiKeyNotFound();
      if (params.api_key !== undefined && !keys.some((key) => safeEqual(params.api_key!, secrets.decrypt(key.key_enc)))) {
        throw errors.invalid('api_key', 'cannot be changed by update; use reset to issue a new key');
      }
      const config = params.config === undefined ? undefined : normalizeCustom(customOfUpdate(params.config), flatCustomOf(params.config), 'config');
      if (params.valid === undefined && config === undefined) return;
      await inTransaction(db, async (trx) => {
        orderChangedIn(trx, params.order_id, await orderKeys(trx, params.order_id));
        await trx
          .updateTable('api_keys')
          .set({
            updated_at: nowIso(),
            ...(params.valid !== undefined && { valid: params.valid ? 1 : 0 }),
            ...(config !== undefined && { config: JSON.stringify(config) }),
          })
          .where('order_id', '=', params.order_id)
          .execute();
        const event = { orderId: current.order_id, clientId: current.client_id, keyId: current.id };
        if (params.valid === false && current.valid === 1) await deps.events.emit('apikey.disabled', event, trx);
        if (params.valid === true && current.valid === 0) await deps.events.emit('apikey.enabled', event, trx);
        if (config !== undefined) await deps.events.emit('apikey.updated', event, trx);
      });
    },

    /**
     * admin and client reset: a new key for an active order. With `grace_seconds` the replaced key keeps validating
     * that long (`rotating_until`); a key holds one grace at a time, so resetting again during a grace ends the
     * earlier grace at once (the key replaced first stops, the one replaced now takes the grace).
     */
    async reset(
      by: { id?: number | undefined; order_id?: number | undefined; key?: string | undefined; grace_seconds?: number | undefined },
      clientId?: number,
    ): Promise<string> {
      if (by.id === undefined && by.order_id === undefined && by.key !== undefined && !couldBeKey(by.key)) throw errors.apiKeyNotFound();
      const current = await requireKey(db, by, clientId);
      if (current.status !== 'active') throw errors.conflict(`The order is ${current.status}: only an active order's key can be reset`);
      const grace = by.grace_seconds ?? 0;
      const hashes = current.grace_hash === null ? [current.key_hash] : [current.key_hash, current.grace_hash];
      return change(hashes, [refToken(current.id, current.order_id)], async (trx) => {
        const config = readApiKeyConfig(parseObject(current.options));
        const fresh = await freshKey(trx, config);
        const now = Date.now();
        const result = await trx
          .updateTable('api_keys')
          .set({
            key_hash: fresh.hash,
            key_enc: fresh.sealed,
            grace_hash: grace > 0 ? current.key_hash : null,
            grace_until: grace > 0 ? new Date(now + grace * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z') : null,
            updated_at: nowIso(),
          })
          .where('id', '=', current.id)
          .where('key_hash', '=', current.key_hash)
          .where('deleted_at', 'is', null)
          .executeTakeFirst();
        if (Number(result.numUpdatedRows) !== 1) throw errors.conflict('The key was changed by another request; try again');
        const order = await trx.selectFrom('orders').select('status').where('id', '=', current.order_id).executeTakeFirst();
        if (order?.status !== 'active') throw errors.conflict('The order is no longer active');
        changedInTransaction(trx, [fresh.hash]);
        await deps.events.emit('apikey.reset', { orderId: current.order_id, clientId: current.client_id, keyId: current.id }, trx);
        return fresh.key;
      });
    },

    /** client and admin create, delete, rename (several-keys.ts). */
    createKey: (params: { order_id: number; name?: string | undefined }, clientId?: number) => severalKeys.createKey(params, clientId),
    deleteKey: (id: number, clientId?: number) => severalKeys.deleteKey(id, clientId),
    renameKey: (id: number, name: string | null, clientId?: number) => severalKeys.renameKey(id, name, clientId),

    /**
     * admin/serviceapikey/find: the order behind a key staff pasted (a leaked one, say), looked up by its keyed hash
     * like check; the answer names the order and client, never the key. Surrounding whitespace from a paste is ignored.
     */
    async find(key: string): Promise<{ order_id: number; client_id: number; valid: 0 | 1; reason: Reason }> {
      const row = await requireKey(db, { key: key.trim() });
      return { order_id: row.order_id, client_id: row.client_id, valid: row.valid === 1 ? 1 : 0, reason: reasonOf(row, row, (await currentUsage(db, row)).used) };
    },

    /** admin/serviceapikey/get: the order's first key, and `keys`: every key of the order with its id and name. */
    async get(orderId: number): Promise<KeyRecord & { keys: KeyRecord[] }> {
      const rows = await keysWithOrders(db).where('api_keys.order_id', '=', orderId).orderBy('api_keys.id').execute();
      if (rows.length === 0) throw errors.apiKeyNotFound();
      const { used } = await currentUsage(db, rows[0]!);
      const keys: KeyRecord[] = [];
      for (const row of rows) keys.push(await recordOf(db, row, used));
      return { ...keys[0]!, keys };
    },

    /** client/serviceapikey/get_list: the caller's keys (each with its id and name), newest first. */
    async list(clientId: number, params: { page?: number | undefined; per_page?: number | undefined; order_id?: number | undefined }): Promise<Page<Omit<KeyRecord, 'client_id'>>> {
      const request = pageRequest(params);
      let count = db.selectFrom('api_keys').select((eb) => eb.fn.countAll<number>().as('n')).where('client_id', '=', clientId).where('deleted_at', 'is', null);
      let rowsQuery = keysWithOrders(db).where('api_keys.client_id', '=', clientId);
      if (params.order_id !== undefined) {
        count = count.where('order_id', '=', params.order_id);
        rowsQuery = rowsQuery.where('api_keys.order_id', '=', params.order_id);
      }
      const total = await count.executeTakeFirstOrThrow();
      const rows = await rowsQuery.orderBy('api_keys.id', 'desc').limit(request.perPage).offset(request.offset).execute();
      const list: Array<Omit<KeyRecord, 'client_id'>> = [];
      const usedByOrder = new Map<number, number>();
      for (const row of rows) {
        let used = usedByOrder.get(row.order_id);
        if (used === undefined) usedByOrder.set(row.order_id, (used = (await currentUsage(db, row)).used));
        const { client_id: _client, ...record } = await recordOf(db, row, used);
        list.push(record);
      }
      return toPage(request, total.n, list);
    },

    /** client and admin usage: per day over a range (default: the current usage period), of the order's keys or of one (usage-range.ts). */
    async usage(params: { order_id: number; key_id?: number | undefined; from?: string | undefined; to?: string | undefined }, clientId?: number): Promise<UsageReport> {
      const key = await keysWithOrders(db).where('api_keys.order_id', '=', params.order_id).orderBy('api_keys.id').executeTakeFirst();
      const current = key === undefined ? undefined : periodDays((await currentUsage(db, key)).period);
      return usageReport(db, metering, params, clientId, current);
    },

    /** Writes the usage counts now (tests, shutdown). */
    async flushUsage(): Promise<void> {
      await Promise.all([metering.flush(), periodMeter.flush()]);
    },

    /** Flushes the counts and closes the listener; the database must still be open. */
    async close(): Promise<void> {
      closed = true;
      keyEvents.close();
      await metering.close();
      await periodMeter.close();
      await channel.close();
    },
  };
}

/** The check's answer: true when the key was judged valid (and its use counted). */
function isValid(_entry: unknown, reason: Reason): boolean {
  return reason === 'VALID';
}

/**
 * The custom parameters named directly in admin update's `config`: everything but FOSSBilling's flat
 * `custom_<name>` keys (read separately) and the key options. FOSSBilling's admin form sends the key's options
 * (`length`, `split`, `split_interval`, `case`) with every update; they cannot change an issued key, so they are
 * ignored rather than stored as parameters.
 */
function customOfUpdate(config: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(config)) {
    if (!name.startsWith('custom_') && !KEY_OPTION_NAMES.has(name)) out[name] = value;
  }
  return out;
}

export type ApiKeyService = ReturnType<typeof createApiKeyService>;
