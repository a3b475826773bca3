// The API key product's domain logic: issuing keys for orders, the validation hot path (check / get_info), usage,
// and the staff and client key actions. The only writer of `api_keys` and `api_key_usage`.
//
// Hot path: the key's HMAC is computed once; a warm cache answers with a Map lookup, a comparison of the record's
// facts with the current time, and a Map update for the usage count. A miss costs one indexed read (api_keys joined
// with orders, plus the month's usage total). Unknown keys are remembered a few seconds and counted against the
// caller's API_KEY_CHECK_FAILED budget; an address over that budget is refused from a local map until its window ends.
//
// Consistency: every change to a key or its order marks the key "in flux" (the cache is bypassed for it) inside the
// transaction, and once the transaction has ended (`afterTransaction`, src/db/transaction.ts) the key is dropped from
// the cache and the change is published to the other processes. Changes made inside the order service's transaction
// (product type hooks) and our own (update, reset) take the same path.
import cluster from 'node:cluster';
import type { FastifyReply } from 'fastify';
import type { Kysely, Selectable } from 'kysely';
import type { DialectName } from '../../db/database.ts';
import type { Database } from '../../db/schema.ts';
import type { ApiKeyTable } from '../../db/tables/apikey.ts';
import { afterTransaction, inTransaction } from '../../db/transaction.ts';
import { errors } from '../../http/errors.ts';
import { enforce, type Decision, type RateLimiter } from '../../http/rate-limit.ts';
import { safeEqual, type SecretBox } from '../../lib/crypto.ts';
import { couldBeKey, generateKey } from '../../lib/keygen.ts';
import { pageRequest, toPage, type Page } from '../../lib/paginator.ts';
import { nowIso } from '../../lib/time.ts';
import type { OrderSnapshot } from '../product/product-type.ts';
import type { EventBus } from '../../events.ts';
import './events.ts';
import { KeyCache, type KeyEntry } from './cache.ts';
import { KeyEventHub } from './events-stream.ts';
import { ClusterChannel, LocalChannel, PostgresChannel, RedisChannel, refToken, type InvalidationChannel } from './invalidation.ts';
import { reportUsage, type UsageItem } from './usage-report.ts';
import { Metering, monthBounds, type UsageClock } from './metering.ts';
import { flatCustomOf, KEY_OPTION_NAMES, keyOptionsOf, monthlyLimitOf, normalizeCustom, readApiKeyConfig, type CustomParams } from './options.ts';
import type { Money } from '../../lib/money.ts';
import { overageMinor, overageUnits } from '../../lib/usage-pricing.ts';
import { periodOfRow, periodUsageWriter } from './period-usage.ts';
import { createThresholdWatcher } from './thresholds.ts';
import { bucketOf, calendarMonth, periodDays, usagePeriodAt, type UsagePeriod } from './usage-period.ts';
import { planOf, USAGE_OPTION_NAMES, usageOptionsOf, type UsagePlan } from './usage-plan.ts';

export type Reason = 'VALID' | 'NOT_FOUND' | 'DISABLED' | 'CLIENT_INACTIVE' | 'NOT_ACTIVE' | 'EXPIRED' | 'LIMIT_EXCEEDED';

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
}

export interface KeyRecord {
  order_id: number;
  client_id: number;
  api_key: string;
  valid: 0 | 1;
  config: CustomParams;
  /** Whether check would accept the key right now, and why not. */
  reason: Reason;
  created_at: string;
  updated_at: string;
}

export interface UsageReport {
  total: number;
  days: Array<{ date: string; count: number }>;
}

export interface ApiKeyServiceDeps {
  db: Kysely<Database>;
  dialect: DialectName;
  postgresUrl: string | null;
  redisUrl: string | null;
  redisPrefix: string;
  secrets: SecretBox;
  limiter: RateLimiter;
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

type KeyRow = Selectable<ApiKeyTable>;

/** How old the cached monthly count of a key with a limit may be before it is re-read in the background. */
const USAGE_REFRESH_MS = 2000;
const MAX_BLOCKED_ADDRESSES = 100_000;
const MAX_USAGE_DAYS = 366;
const DAY_MS = 86_400_000;

function parseJson(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

export function createApiKeyService(deps: ApiKeyServiceDeps) {
  const { db, secrets, limiter } = deps;
  const log = deps.log ?? ((error: unknown, what: string) => process.emitWarning(`serviceapikey: ${what} failed: ${String(error)}`));
  const cache = new KeyCache({ maxEntries: deps.keyCacheSize });
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
  const reasons: Record<Reason, number> = { VALID: 0, NOT_FOUND: 0, DISABLED: 0, NOT_ACTIVE: 0, EXPIRED: 0, LIMIT_EXCEEDED: 0, CLIENT_INACTIVE: 0 };

  // ---- hot path ----------------------------------------------------------------------------------------------

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
    used: number,
    period: UsagePeriod,
    now: number,
  ): KeyEntry {
    const config = parseJson(row.config);
    const options = parseJson(row.options);
    const bucket = bucketOf(period);
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
      period,
      bucket,
      used: used + periodMeter.unflushedTotal(row.id, bucket, bucket),
      usedAt: now,
      refreshing: false,
      loadedAt: now,
      tick: 0,
    };
  }

  /** A key's flushed uses in the period starting at `periodStart`. */
  async function periodTotal(trx: Kysely<Database>, keyId: number, periodStart: string): Promise<number> {
    const row = await trx
      .selectFrom('api_key_period_usage')
      .select('count')
      .where('api_key_id', '=', keyId)
      .where('period_start', '=', periodStart)
      .executeTakeFirst();
    return Number(row?.count ?? 0);
  }

  /** The usage period a key of this plan is in at `now`. */
  function periodOf(plan: Pick<UsagePlan, 'period'>, now: number, order: { period: string | null; expiresAtMs: number | null }): UsagePeriod {
    return usagePeriodAt(plan.period, now, order);
  }

  async function readEntry(hash: string): Promise<KeyEntry | null> {
    const now = Date.now();
    const month = calendarMonth(now);
    const row = await db
      .selectFrom('api_keys as k')
      .innerJoin('orders as o', 'o.id', 'k.order_id')
      .innerJoin('clients as c', 'c.id', 'k.client_id')
      .select(['k.id', 'k.order_id', 'k.client_id', 'k.valid', 'k.config', 'k.options', 'o.status', 'o.expires_at', 'o.period as order_period', 'c.status as client_status'])
      // The calendar month's uses come with the key; a key counting by billing period reads its period after.
      .select((eb) =>
        eb
          .selectFrom('api_key_period_usage as u')
          .select('u.count')
          .whereRef('u.api_key_id', '=', 'k.id')
          .where('u.period_start', '=', month.start)
          .as('used'),
      )
      .where('k.key_hash', '=', hash)
      .executeTakeFirst();
    if (row === undefined) return null;
    const options = parseJson(row.options);
    const period = periodOf(planOf(usageOptionsOf(options), {}), now, { period: row.order_period, expiresAtMs: row.expires_at === null ? null : Date.parse(row.expires_at) });
    const used = period.start === month.start ? Number(row.used ?? 0) : await periodTotal(db, row.id, period.start);
    return entryOf(row, used, period, now);
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
    if (entry.refreshing || closed) return;
    entry.refreshing = true;
    const bucket = entry.bucket;
    periodTotal(db, entry.id, entry.period.start)
      .then((used) => {
        if (entry.bucket !== bucket) return;
        entry.used = used + periodMeter.unflushedTotal(entry.id, bucket, bucket);
        entry.usedAt = Date.now();
      })
      .catch((error: unknown) => log(error, 'usage refresh'))
      .finally(() => {
        entry.refreshing = false;
      });
  }

  /** Moves the key's count to the usage period holding `now` (a period ended). */
  function rollPeriod(entry: KeyEntry, now: number): void {
    const period = periodOf(entry.plan, now, { period: entry.orderPeriod, expiresAtMs: entry.expiresAtMs });
    const bucket = bucketOf(period);
    entry.period = period;
    if (bucket === entry.bucket) return;
    entry.bucket = bucket;
    entry.used = periodMeter.unflushedTotal(entry.id, bucket, bucket);
    entry.usedAt = 0;
  }

  /** Whether the key's uses this period have reached a stop: the hard limit, or the quota when it is enforced without overage. */
  function limitReached(entry: KeyEntry): boolean {
    const { hardLimit, included, overage } = entry.plan;
    if (hardLimit !== null && entry.used >= hardLimit) return true;
    return entry.enforceLimit && overage === null && included !== null && entry.used >= included;
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
    if (now >= entry.period.endMs || now < entry.period.startMs) rollPeriod(entry, now);
    if (watched(entry)) {
      if (now - entry.usedAt > USAGE_REFRESH_MS) refreshUsage(entry);
      if (limitReached(entry)) return 'LIMIT_EXCEEDED';
    }
    return 'VALID';
  }

  function onFailedDecision(ip: string, reply: FastifyReply, decision: Decision): null {
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
  function unknown(ip: string | null, reply: FastifyReply): null | Promise<null> {
    // A verifier that names no end-user address: nothing to count against (never the app server itself, §11).
    if (ip === null || limiter.isExempt(ip)) return null;
    const decision = limiter.hit('API_KEY_CHECK_FAILED', ip);
    return decision instanceof Promise ? decision.then((d) => onFailedDecision(ip, reply, d)) : onFailedDecision(ip, reply, decision);
  }

  /** The key's cached record (null when unknown), from the cache when warm. Throws 429 for a blocked address. */
  function resolve(key: string, ip: string | null, reply: FastifyReply, now: number): KeyEntry | null | Promise<KeyEntry | null> {
    if (blocked.size > 0 && ip !== null) {
      const until = blocked.get(ip);
      if (until !== undefined) {
        if (until > now) throw errors.rateLimited(Math.max(1, Math.ceil((until - now) / 1000)));
        blocked.delete(ip);
      }
    }
    if (!couldBeKey(key)) return unknown(ip, reply);
    const hash = secrets.hash(key);
    const cached = cache.get(hash, now);
    if (cached !== undefined) return cached === null ? unknown(ip, reply) : cached;
    listenForChanges();
    return load(hash).then((entry) => (entry === null ? unknown(ip, reply) : entry));
  }

  function listenForChanges(): void {
    if (!listening) {
      listening = true;
      channel.listen();
    }
  }

  /** Judges the key and counts one use when valid. */
  function use(entry: KeyEntry | null, now: number, clock: UsageClock): Reason {
    if (entry === null) {
      reasons.NOT_FOUND++;
      return 'NOT_FOUND';
    }
    const reason = judge(entry, now);
    reasons[reason]++;
    if (reason === 'VALID') {
      metering.count(entry.id, clock.day);
      periodMeter.count(entry.id, entry.bucket);
      entry.used++;
      // This use exhausted the quota: the key's quota state changed (the verifiers' events stream, §11).
      if (limitReached(entry)) channel.publish([refToken(entry.id, entry.orderId)]);
    }
    return reason;
  }

  function usageOf(entry: KeyEntry): UsageSummary {
    return withLimit(summaryOf(entry.plan, entry.period, entry.used), entry.limit);
  }

  /** The summary with §7.1's `limit` and `remaining` after `used`, in the contract's order. */
  function withLimit(summary: Omit<UsageSummary, 'limit' | 'remaining'>, limit: number | null): UsageSummary {
    const { period_start, period_end, used, ...plan } = summary;
    return { period_start, period_end, used, limit, remaining: limit === null ? null : Math.max(0, limit - used), ...plan };
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
    if (entry === null) return { valid: 0, config: null, reason, usage: null };
    return { valid: reason === 'VALID' ? 1 : 0, config: reason === 'VALID' ? entry.config : null, reason, usage: usageOf(entry) };
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
      const taken = await trx.selectFrom('api_keys').select('id').where('key_hash', '=', hash).executeTakeFirst();
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
    const options = parseJson(row.options);
    const { hardLimit, included, overage } = planOf(usageOptionsOf(options), parseJson(row.config));
    if (hardLimit !== null && used >= hardLimit) return 'LIMIT_EXCEEDED';
    if (options.enforce_limit === true && overage === null && included !== null && used >= included) return 'LIMIT_EXCEEDED';
    return 'VALID';
  }

  /** A key's plan, its usage period now and its uses in it (flushed and this process's unflushed counts). */
  async function currentUsage(
    trx: Kysely<Database>,
    row: { id: number; options: string; config: string; expires_at: string | null; order_period: string | null },
  ): Promise<{ plan: UsagePlan; period: UsagePeriod; used: number }> {
    const plan = planOf(usageOptionsOf(parseJson(row.options)), parseJson(row.config));
    const period = periodOf(plan, Date.now(), { period: row.order_period, expiresAtMs: row.expires_at === null ? null : Date.parse(row.expires_at) });
    const bucket = bucketOf(period);
    return { plan, period, used: (await periodTotal(trx, row.id, period.start)) + periodMeter.unflushedTotal(row.id, bucket, bucket) };
  }

  async function recordOf(
    trx: Kysely<Database>,
    row: KeyRow & { status: string; expires_at: string | null; client_status: string; order_period: string | null },
  ): Promise<KeyRecord> {
    return {
      order_id: row.order_id,
      client_id: row.client_id,
      api_key: secrets.decrypt(row.key_enc),
      valid: row.valid === 1 ? 1 : 0,
      config: parseJson(row.config),
      reason: reasonOf(row, row, (await currentUsage(trx, row)).used),
      created_at: row.created_at,
      updated_at: row.updated_at,
    };
  }

  function keysWithOrders(trx: Kysely<Database>) {
    return trx
      .selectFrom('api_keys')
      .innerJoin('orders', 'orders.id', 'api_keys.order_id')
      .innerJoin('clients', 'clients.id', 'api_keys.client_id')
      .selectAll('api_keys')
      .select(['orders.status', 'orders.expires_at', 'orders.period as order_period', 'clients.status as client_status']);
  }

  /** The key of an order (or of a key string), the caller's own when `clientId` is given; 404 otherwise. */
  async function requireKey(trx: Kysely<Database>, by: { order_id?: number | undefined; key?: string | undefined }, clientId?: number) {
    let query = keysWithOrders(trx);
    if (by.order_id !== undefined) query = query.where('api_keys.order_id', '=', by.order_id);
    else if (by.key !== undefined) query = query.where('api_keys.key_hash', '=', secrets.hash(by.key));
    else throw errors.invalid('order_id', 'is required (or key)');
    if (clientId !== undefined) query = query.where('api_keys.client_id', '=', clientId);
    const row = await query.executeTakeFirst();
    if (row === undefined) throw errors.notFound('API key');
    return row;
  }

  function isoDay(ms: number): string {
    return new Date(ms).toISOString().slice(0, 10);
  }

  /** The client's account became inactive or active again: its keys' records change with it, here and everywhere. */
  async function clientStatusChanged({ clientId }: { clientId: number }, trx: Kysely<Database>): Promise<void> {
    const keys = await trx.selectFrom('api_keys').select(['id', 'order_id', 'key_hash']).where('client_id', '=', clientId).execute();
    if (keys.length > 0) changedInTransaction(trx, keys.map((key) => key.key_hash), keys.map((key) => refToken(key.id, key.order_id)));
  }
  deps.events.on('client.deactivated', clientStatusChanged);
  deps.events.on('client.reactivated', clientStatusChanged);

  return {
    /** For tests and the benchmark: the cache, the meter and the channel. */
    internals: { cache, metering, channel, blocked },

    /** Figures for /metrics: answers by reason, key-cache size and hits, usage-flush lag. */
    stats() {
      return { reasons, cacheSize: cache.size, cacheHits: cache.hits, cacheMisses: cache.misses, flushLagMs: metering.lagMs(Date.now()) };
    },

    // ---- guest: the hot path ----

    /** guest/serviceapikey/check: true when the key is valid now; counts one use then. */
    check(key: string, ip: string, reply: FastifyReply): boolean | Promise<boolean> {
      const now = Date.now();
      const clock = metering.clock(now);
      const found = resolve(key, ip, reply, now);
      if (found instanceof Promise) return found.then((entry) => use(entry, Date.now(), clock) === 'VALID');
      return use(found, now, clock) === 'VALID';
    },

    /** guest/serviceapikey/get_info: validity, custom parameters, reason and usage; counts one use when valid. */
    getInfo(key: string, ip: string, reply: FastifyReply): KeyInfo | Promise<KeyInfo> {
      const now = Date.now();
      const clock = metering.clock(now);
      const found = resolve(key, ip, reply, now);
      if (found instanceof Promise) return found.then((entry) => infoOf(entry, use(entry, Date.now(), clock)));
      if (found !== null && !watched(found) && now - found.usedAt > USAGE_REFRESH_MS) refreshUsage(found);
      return infoOf(found, use(found, now, clock));
    },

    // ---- verifiers (CONTRACT §11): failed lookups count against the end user's `ip`, never the app server ----

    /** admin/serviceapikey/check. */
    verifierCheck(key: string, ip: string | null, reply: FastifyReply): boolean | Promise<boolean> {
      const now = Date.now();
      const clock = metering.clock(now);
      const found = resolve(key, ip, reply, now);
      if (found instanceof Promise) return found.then((entry) => use(entry, Date.now(), clock) === 'VALID');
      return use(found, now, clock) === 'VALID';
    },

    /** admin/serviceapikey/get_info: the guest answer plus `order_id` and `key_id` (null for an unknown key). */
    async verifierInfo(key: string, ip: string | null, reply: FastifyReply): Promise<KeyInfo & { order_id: number | null; key_id: number | null }> {
      const now = Date.now();
      const clock = metering.clock(now);
      const entry = await resolve(key, ip, reply, now);
      const info = infoOf(entry, use(entry, Date.now(), clock));
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
        if (entry !== undefined && entry !== null && entry.period.start === key.periodStart) entry.used += key.count;
        const stop = key.hardLimit ?? (key.enforceLimit && !key.overage ? key.included : null);
        if (stop !== null) {
          const bucket = bucketOf({ start: key.periodStart, end: key.periodEnd });
          const used = (await periodTotal(db, key.id, key.periodStart)) + periodMeter.unflushedTotal(key.id, bucket, bucket);
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

    /** Issues the order's key on its first activation; later activations keep the key. */
    async issue(trx: Kysely<Database>, order: OrderSnapshot): Promise<void> {
      const existing = await trx.selectFrom('api_keys').select(['id', 'key_hash']).where('order_id', '=', order.id).executeTakeFirst();
      if (existing !== undefined) {
        changedInTransaction(trx, [existing.key_hash], [refToken(existing.id, order.id)]);
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
          options: JSON.stringify({
            length: config.length,
            split: config.split,
            split_interval: config.split_interval,
            capitalization: config.capitalization,
            enforce_limit: config.enforce_limit,
            ...usageOptionsOf(order.config),
          }),
          config: JSON.stringify(config.custom),
          created_at: now,
          updated_at: now,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      changedInTransaction(trx, [hash], [refToken(inserted.id, order.id)]);
      await deps.events.emit('apikey.issued', { orderId: order.id, clientId: order.client_id, keyId: inserted.id }, trx);
    },

    /** The order changed (status, expiry): the key stays, its cached record goes. */
    async orderChanged(trx: Kysely<Database>, order: OrderSnapshot): Promise<void> {
      const existing = await trx.selectFrom('api_keys').select(['id', 'key_hash']).where('order_id', '=', order.id).executeTakeFirst();
      if (existing === undefined) return;
      changedInTransaction(trx, [existing.key_hash], [refToken(existing.id, order.id)]);
    },

    /**
     * The order moved to another plan: the key keeps its material and takes the new plan's custom parameters and
     * limit enforcement. Inside the order's transaction; caches drop the key once it commits.
     */
    async planChanged(trx: Kysely<Database>, orderId: number, productConfig: Record<string, unknown>): Promise<void> {
      const existing = await trx.selectFrom('api_keys').select(['id', 'key_hash', 'options']).where('order_id', '=', orderId).executeTakeFirst();
      if (existing === undefined) return;
      const config = readApiKeyConfig(productConfig);
      // The new plan's usage options replace the old ones; the period's overage is billed at the plan in force when
      // the period closes (CONTRACT §12, README "Pricing by use").
      const kept = Object.fromEntries(Object.entries(parseJson(existing.options)).filter(([name]) => !USAGE_OPTION_NAMES.includes(name)));
      const options = { ...kept, enforce_limit: config.enforce_limit, ...usageOptionsOf(productConfig) };
      await trx
        .updateTable('api_keys')
        .set({ config: JSON.stringify(config.custom), options: JSON.stringify(options), updated_at: nowIso() })
        .where('id', '=', existing.id)
        .execute();
      changedInTransaction(trx, [existing.key_hash]);
    },

    /** The order is being deleted: so is its key, with its usage. */
    async orderDeleted(trx: Kysely<Database>, order: OrderSnapshot): Promise<void> {
      const existing = await trx.selectFrom('api_keys').select(['id', 'key_hash']).where('order_id', '=', order.id).executeTakeFirst();
      if (existing === undefined) return;
      await trx.deleteFrom('api_key_usage').where('api_key_id', '=', existing.id).execute();
      await trx.deleteFrom('api_keys').where('id', '=', existing.id).execute();
      metering.forget(existing.id);
      changedInTransaction(trx, [existing.key_hash], [refToken(existing.id, order.id)]);
    },

    /** `{api_key, config, valid, reason}` for order/service; nulls before the key is issued. */
    async serviceFields(trx: Kysely<Database>, order: OrderSnapshot): Promise<Record<string, unknown>> {
      const row = await keysWithOrders(trx).where('api_keys.order_id', '=', order.id).executeTakeFirst();
      if (row === undefined) return { api_key: null, config: null, valid: 0, reason: 'NOT_ACTIVE', usage: null };
      const record = await recordOf(trx, row);
      // This period's use and its projected overage, as get_info shows it (the client area and the admin order page).
      const { plan, period, used } = await currentUsage(trx, row);
      const limit = monthlyLimitOf(record.config);
      const usage = withLimit(summaryOf(plan, period, used), limit);
      return { api_key: record.api_key, config: record.config, valid: record.valid, reason: record.reason, usage };
    },

    // ---- staff and clients ----

    /** admin/serviceapikey/update: the validity switch and the custom parameters; never the key. */
    async update(params: { order_id: number; valid?: boolean | undefined; config?: Record<string, unknown> | undefined; api_key?: string | undefined }): Promise<void> {
      const current = await requireKey(db, { order_id: params.order_id });
      if (params.api_key !== undefined && !safeEqual(params.api_key, secrets.decrypt(current.key_enc))) {
        throw errors.invalid('api_key', 'cannot be changed by update; use reset to issue a new key');
      }
      const config = params.config === undefined ? undefined : normalizeCustom(customOfUpdate(params.config), flatCustomOf(params.config), 'config');
      if (params.valid === undefined && config === undefined) return;
      await change([current.key_hash], [refToken(current.id, current.order_id)], async (trx) => {
        await trx
          .updateTable('api_keys')
          .set({
            updated_at: nowIso(),
            ...(params.valid !== undefined && { valid: params.valid ? 1 : 0 }),
            ...(config !== undefined && { config: JSON.stringify(config) }),
          })
          .where('id', '=', current.id)
          .execute();
        const event = { orderId: current.order_id, clientId: current.client_id, keyId: current.id };
        if (params.valid === false && current.valid === 1) await deps.events.emit('apikey.disabled', event, trx);
        if (params.valid === true && current.valid === 0) await deps.events.emit('apikey.enabled', event, trx);
        if (config !== undefined) await deps.events.emit('apikey.updated', event, trx);
      });
    },

    /** admin and client reset: a new key for an active order; the old one stops validating at once. */
    async reset(by: { order_id?: number | undefined; key?: string | undefined }, clientId?: number): Promise<string> {
      if (by.order_id === undefined && by.key !== undefined && !couldBeKey(by.key)) throw errors.notFound('API key');
      const current = await requireKey(db, by, clientId);
      if (current.status !== 'active') throw errors.conflict(`The order is ${current.status}: only an active order's key can be reset`);
      return change([current.key_hash], [refToken(current.id, current.order_id)], async (trx) => {
          const config = readApiKeyConfig(parseJson(current.options));
          const fresh = await freshKey(trx, config);
          const result = await trx
            .updateTable('api_keys')
            .set({ key_hash: fresh.hash, key_enc: fresh.sealed, updated_at: nowIso() })
            .where('id', '=', current.id)
            .where('key_hash', '=', current.key_hash)
            .executeTakeFirst();
          if (Number(result.numUpdatedRows) !== 1) throw errors.conflict('The key was changed by another request; try again');
          const order = await trx.selectFrom('orders').select('status').where('id', '=', current.order_id).executeTakeFirst();
          if (order?.status !== 'active') throw errors.conflict('The order is no longer active');
          changedInTransaction(trx, [fresh.hash]);
          await deps.events.emit('apikey.reset', { orderId: current.order_id, clientId: current.client_id, keyId: current.id }, trx);
          return fresh.key;
      });
    },

    /** admin/serviceapikey/get. */
    async get(orderId: number): Promise<KeyRecord> {
      return recordOf(db, await requireKey(db, { order_id: orderId }));
    },

    /** client/serviceapikey/get_list: the caller's keys, newest first. */
    async list(clientId: number, params: { page?: number | undefined; per_page?: number | undefined }): Promise<Page<Omit<KeyRecord, 'client_id'>>> {
      const request = pageRequest(params);
      const total = await db
        .selectFrom('api_keys')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('client_id', '=', clientId)
        .executeTakeFirstOrThrow();
      const rows = await keysWithOrders(db)
        .where('api_keys.client_id', '=', clientId)
        .orderBy('api_keys.id', 'desc')
        .limit(request.perPage)
        .offset(request.offset)
        .execute();
      const list: Array<Omit<KeyRecord, 'client_id'>> = [];
      for (const row of rows) {
        const { client_id: _client, ...record } = await recordOf(db, row);
        list.push(record);
      }
      return toPage(request, total.n, list);
    },

    /** Usage per day of an order's key over [from, to] (default: the current month), unflushed counts included. */
    async usage(params: { order_id: number; from?: string | undefined; to?: string | undefined }, clientId?: number): Promise<UsageReport> {
      const key = await requireKey(db, { order_id: params.order_id }, clientId);
      const current = periodDays((await currentUsage(db, key)).period);
      const from = params.from ?? current.from;
      const to = params.to ?? (params.from === undefined ? current.to : monthBounds(params.from.slice(0, 7)).end);
      const fromMs = Date.parse(`${from}T00:00:00Z`);
      const toMs = Date.parse(`${to}T00:00:00Z`);
      if (Number.isNaN(fromMs) || isoDay(fromMs) !== from) throw errors.invalid('from', 'must be a calendar date YYYY-MM-DD');
      if (Number.isNaN(toMs) || isoDay(toMs) !== to) throw errors.invalid('to', 'must be a calendar date YYYY-MM-DD');
      if (toMs < fromMs) throw errors.invalid('to', 'must not be before from');
      if ((toMs - fromMs) / DAY_MS + 1 > MAX_USAGE_DAYS) throw errors.invalid('to', `must be at most ${MAX_USAGE_DAYS} days after from`);
      const rows = await db
        .selectFrom('api_key_usage')
        .select(['day', 'count'])
        .where('api_key_id', '=', key.id)
        .where('day', '>=', from)
        .where('day', '<=', to)
        .execute();
      const counts = metering.unflushed(key.id, from, to);
      for (const row of rows) counts.set(row.day, (counts.get(row.day) ?? 0) + row.count);
      const days: UsageReport['days'] = [];
      let total = 0;
      for (let ms = fromMs; ms <= toMs; ms += DAY_MS) {
        const date = isoDay(ms);
        const count = counts.get(date) ?? 0;
        total += count;
        days.push({ date, count });
      }
      return { total, days };
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
