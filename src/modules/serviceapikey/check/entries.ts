// The check's key records: read from the database on a cache miss (three indexed reads: the key joined with its order
// and client, the order's key ids, their summed uses in the current usage period; a fourth for a plan with meters:
// their quantities in the period, meter-state.ts), filled into the cache, and kept current in place (the order's
// count re-read in the background, moved to the next period when one ends). One read per hash at a time: concurrent
// misses for the same key share it.
import type { Kysely } from 'kysely';
import type { Database } from '../../../db/schema.ts';
import { parseObject } from '../../../lib/json.ts';
import { TRIAL_ENDED_REASON } from '../../../lib/trial.ts';
import { readKeyLimits } from '../key-limits.ts';
import { monthlyLimitOf } from '../options.ts';
import { periodOf, type UsageTotals } from '../usage/totals.ts';
import { bucketOf, type UsagePeriod } from '../usage/usage-period.ts';
import { planOf, usageOptionsOf } from '../usage/usage-plan.ts';
import type { KeyCache, KeyEntry, OrderUsage } from './cache.ts';
import { orderCreditOf, rollCredit, type OrderCredit } from './credit-state.ts';
import type { CreditViewReader } from './credit-sync.ts';
import { orderMetersOf, rollMeters, type MeterQuantityReader, type OrderMeters } from './meter-state.ts';

export interface KeyEntriesDeps {
  db: Kysely<Database>;
  cache: KeyCache;
  /** Bounds the shared per-order usage records like the cache bounds its entries. */
  keyCacheSize: number;
  totals: Pick<UsageTotals, 'periodTotal' | 'orderKeyIds' | 'unflushedOf'>;
  /** The period's quantities of the plan's meters (modules/usage/quantities.ts). */
  readMeters: MeterQuantityReader;
  log: (error: unknown, what: string) => void;
  /** True once the service is closing: no background refresh starts then. */
  closed: () => boolean;
  /** Prepaid plans (issue 24): the client's balance and what calls drew this period (modules/credit/prepaid.ts). */
  readCredit: CreditViewReader;
  /** Told of each prepaid order loaded, so its client's balance changes reach it (credit-sync.ts). */
  trackCredit: (orderId: number, clientId: number) => void;
  /** The currency's decimals (prepaid plans price their uses). */
  precision: number;
}

/** The row a key's record is built from: the key joined with its order and client. */
interface EntryRow {
  id: number;
  order_id: number;
  client_id: number;
  valid: number;
  config: string;
  options: string;
  status: string;
  order_reason: string | null;
  expires_at: string | null;
  client_status: string;
  order_period: string | null;
}

export function createKeyEntries(deps: KeyEntriesDeps) {
  const { db, cache, totals, log } = deps;
  /** Order id → its uses this period, shared by the cached records of its keys. */
  const orderUsage = new Map<number, OrderUsage>();
  const loading = new Map<string, { epoch: number; promise: Promise<KeyEntry | null> }>();

  /** The order's shared usage record, refreshed in place with a total just read (its keys' records keep sharing it). */
  function orderUsageOf(orderId: number, keyIds: number[], period: UsagePeriod, used: number, meters: OrderMeters | null, credit: OrderCredit | null, now: number): OrderUsage {
    const bucket = bucketOf(period);
    let usage = orderUsage.get(orderId);
    if (usage === undefined) {
      // Bounded like the cache: records still holding a dropped object keep working; they refresh on their own.
      if (orderUsage.size >= deps.keyCacheSize * 2) orderUsage.clear();
      usage = { keyIds, period, bucket, used, usedAt: now, refreshing: false, meters, credit };
      orderUsage.set(orderId, usage);
    } else {
      // A fresh record carries the plan in force (a plan change reloads every key of the order) and its quantities.
      Object.assign(usage, { keyIds, period, bucket, used, usedAt: now, meters, credit });
    }
    return usage;
  }

  function entryOf(row: EntryRow, keyIds: number[], rotatingUntilMs: number | null, used: number, meters: OrderMeters | null, credit: OrderCredit | null, period: UsagePeriod, now: number): KeyEntry {
    const config = parseObject(row.config);
    const options = parseObject(row.options);
    if (credit !== null) deps.trackCredit(row.order_id, row.client_id);
    return {
      id: row.id,
      orderId: row.order_id,
      clientId: row.client_id,
      enabled: row.valid === 1,
      clientActive: row.client_status === 'active',
      orderStatus: row.status,
      trialEnded: row.status === 'suspended' && row.order_reason === TRIAL_ENDED_REASON,
      expiresAtMs: row.expires_at === null ? null : Date.parse(row.expires_at),
      config,
      limit: monthlyLimitOf(config),
      enforceLimit: options.enforce_limit === true,
      plan: planOf(usageOptionsOf(options), config),
      orderPeriod: row.order_period,
      usage: orderUsageOf(row.order_id, keyIds, period, used + totals.unflushedOf(keyIds, bucketOf(period)), meters, credit, now),
      rateLimit: readKeyLimits(options).rate_limit,
      rotatingUntilMs,
      loadedAt: now,
      tick: 0,
    };
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
        'o.reason as order_reason',
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
    const options = usageOptionsOf(parseObject(row.options));
    const plan = planOf(options, parseObject(row.config));
    const period = periodOf(plan, now, { period: row.order_period, expiresAtMs: row.expires_at === null ? null : Date.parse(row.expires_at) });
    // A prepaid plan's view is read before the uses, so the uses are never fewer than those its draws priced.
    const prepaid = plan.prepaidFloorMicros == null ? null : await deps.readCredit(row.client_id, row.order_id, period.start);
    // The order's keys share its quota: its uses in the period are the sum over all of them.
    const keyIds = await totals.orderKeyIds(db, row.order_id);
    const used = await totals.periodTotal(db, keyIds, period.start);
    const meters = options.meters ?? [];
    const quantities = meters.length === 0 ? new Map<string, number>() : await deps.readMeters(db, row.order_id, period.start, meters);
    const credit = prepaid === null ? null : orderCreditOf(row.client_id, plan, meters, prepaid, deps.precision, Date.now(), used + totals.unflushedOf(keyIds, bucketOf(period)));
    return entryOf(row, keyIds, rotatingUntilMs, used, orderMetersOf(meters, period.start, quantities, Date.now()), credit, period, Date.now());
  }

  return {
    /** The order's shared usage record in this process, if one of its keys was loaded (told of ingested events). */
    orderUsage: (orderId: number): OrderUsage | undefined => orderUsage.get(orderId),

    /** The key's record from the database, filled into the cache unless an invalidation came meanwhile. */
    load: (hash: string): Promise<KeyEntry | null> => {
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
    },

    /** Re-reads the order's count in the background; the answer in hand goes on with the count it has. */
    refreshUsage: (entry: KeyEntry): void => {
      const usage = entry.usage;
      if (usage.refreshing || deps.closed()) return;
      usage.refreshing = true;
      const bucket = usage.bucket;
      totals
        .periodTotal(db, usage.keyIds, usage.period.start)
        .then((used) => {
          if (usage.bucket !== bucket) return;
          usage.used = used + totals.unflushedOf(usage.keyIds, bucket);
          usage.usedAt = Date.now();
        })
        .catch((error: unknown) => log(error, 'usage refresh'))
        .finally(() => {
          usage.refreshing = false;
        });
    },

    /** Moves the order's count to the usage period holding `now` (a period ended). */
    rollPeriod: (entry: KeyEntry, now: number): void => {
      const usage = entry.usage;
      const period = periodOf(entry.plan, now, { period: entry.orderPeriod, expiresAtMs: entry.expiresAtMs });
      const bucket = bucketOf(period);
      usage.period = period;
      if (bucket === usage.bucket) return;
      usage.bucket = bucket;
      usage.used = totals.unflushedOf(usage.keyIds, bucket);
      usage.usedAt = 0;
      if (usage.meters !== null) rollMeters(usage.meters, period.start);
      if (usage.credit !== null) rollCredit(usage.credit);
    },
  };
}

export type KeyEntries = ReturnType<typeof createKeyEntries>;
