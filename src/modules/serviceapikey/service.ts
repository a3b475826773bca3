// The API key product's domain service: a facade that builds the module's parts and hands out their methods, so callers
// see one `ApiKeyService`. The only writer of `api_keys` and `api_key_usage` (through its parts).
//   check/      the hot path: the cache, the records behind it, judging a key and counting its use (one road for the
//               guest and the verifier check)
//   issuing/    the first key of an order, the order's changes reaching its keys, update, reset, several keys
//   usage/      metering, usage periods, plans, totals, summaries, reported uses, alerts (thresholds), overage
//   sync/       cross-process: invalidation channels, the key-change sync, the verifiers' events hub
//   analytics/  every answer counted per key (unknown keys per address) and outcome, flushed with the usage counts
//   key-records.ts  keys as staff and clients read them
import type { Kysely } from 'kysely';
import type { DialectName } from '../../db/database.ts';
import type { Database } from '../../db/schema.ts';
import type { SecretBox } from '../../lib/crypto.ts';
import type { Money } from '../../lib/money.ts';
import type { EventBus } from '../../platform/events.ts';
import type { RateLimiter } from '../../platform/rate-limit.ts';
import './events.ts';
import { KeyCache } from './check/cache.ts';
import { createKeyEntries } from './check/entries.ts';
import { KeyHashMemo } from './check/hash-memo.ts';
import { createKeyCheck } from './check/key-check.ts';
import { KeyRateLimiter, type LocalCounterStore } from './check/key-rate.ts';
import { createMeterState, type MeterQuantityReader } from './check/meter-state.ts';
import { createMeterSync } from './check/meter-sync.ts';
import { createCreditSync } from './check/credit-sync.ts';
import type { PrepaidLedger } from '../credit/prepaid.ts';
import { createPrepaidDraws } from './usage/prepaid-draw.ts';
import { createKeyIssuing } from './issuing/keys.ts';
import { createSeveralKeys } from './issuing/several-keys.ts';
import { createKeyRecords, orderKeys } from './key-records.ts';
import { createKeySync } from './sync/key-sync.ts';
import { Metering } from './usage/metering.ts';
import { periodOfRow, periodUsageWriter } from './usage/period-usage.ts';
import { createReportedUses } from './usage/reported-uses.ts';
import { createThresholdWatcher } from './usage/thresholds.ts';
import { AnnouncedMemo, createAlertSender } from './usage/alert-sender.ts';
import { createClientAlerts } from './usage/client-alerts.ts';
import { createMeterAlerts } from './usage/meter-alerts.ts';
import { createUsageTotals } from './usage/totals.ts';
import { OutcomeMeter } from './analytics/outcome-meter.ts';
import { createKeyAnalytics } from './analytics/key-analytics.ts';
import { keysByUse, type KeyUseParams } from './analytics/keys-by-use.ts';

export type { KeyInfo, KeyRecord, Reason, UsageReport, UsageSummary } from './types.ts';

export interface ApiKeyServiceDeps {
  db: Kysely<Database>;
  dialect: DialectName;
  postgresUrl: string | null;
  redisUrl: string | null;
  redisPrefix: string;
  /** Keys are looked up by their keyed hash and stored sealed (DESIGN: secrets). */
  secrets: Pick<SecretBox, 'hash' | 'encrypt' | 'decrypt'>;
  /** The failed-lookup budget (API_KEY_CHECK_FAILED) per caller address. */
  limiter: Pick<RateLimiter, 'isExempt' | 'hit'>;
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
  money: Pick<Money, 'format' | 'precision' | 'currency'>;
  /** Prepaid plans (issue 24): the client's balance, drawing usage from it, recording a depletion (modules/credit/prepaid.ts). */
  prepaid: Pick<PrepaidLedger, 'drawUsage' | 'view' | 'markDepleted'>;
  /** A period's quantity of each meter of a plan (modules/usage/quantities.ts `periodQuantities`): hard limits, get_info. */
  readMeters: MeterQuantityReader;
}

export function createApiKeyService(deps: ApiKeyServiceDeps) {
  const { db, secrets, limiter, money } = deps;
  const log = deps.log ?? ((error: unknown, what: string) => process.emitWarning(`serviceapikey: ${what} failed: ${String(error)}`));
  let closed = false;
  const cache = new KeyCache({ maxEntries: deps.keyCacheSize });
  const hashMemo = new KeyHashMemo(deps.keyCacheSize);
  const keyRates = new KeyRateLimiter(deps.keyRateStore);
  const metering = new Metering(db, (error) => log(error, 'usage flush'));
  metering.start();
  // Uses per usage period (what limits and bills read); its flush also announces the usage thresholds crossed.
  // Usage alerts (calls at the flush, the plan's meters after each ingested batch) share one sender and one memo.
  const alertMemo = new AnnouncedMemo();
  const alertSender = createAlertSender({ db, events: deps.events, memo: alertMemo });
  const thresholds = createThresholdWatcher({ db, sender: alertSender, memo: alertMemo });
  const meterAlerts = createMeterAlerts({ db, sender: alertSender, memo: alertMemo });
  const clientAlerts = createClientAlerts({ db, dialect: deps.dialect });
  // Its flush also draws prepaid plans' uses from their balances (usage/prepaid-draw.ts).
  const periodMeter = new Metering(db, (error) => log(error, 'usage flush'), periodUsageWriter(), async (rows) => {
    await thresholds.afterWrite(rows.map(periodOfRow));
    await prepaidDraws.afterFlush(rows);
  });
  periodMeter.start();
  // Key analytics (issue 25): answers per key and outcome, counted in memory and flushed beside the usage counts.
  const outcomeMeter = new OutcomeMeter(db, (error) => log(error, 'key analytics flush'));
  outcomeMeter.start();
  const keyAnalytics = createKeyAnalytics({ db, flush: () => outcomeMeter.flush() });
  const sync = createKeySync({ ...deps, cache, log });
  const totals = createUsageTotals({ periodMeter });
  const readCredit = async (clientId: number, orderId: number, periodStart: string) => {
    const view = await deps.prepaid.view(clientId, orderId, periodStart);
    let metersDrawn = 0;
    for (const [meter, drawn] of view.drawn) if (meter !== 'calls') metersDrawn += drawn;
    return { balance: view.balance, callsDrawn: view.drawn.get('calls') ?? 0, metersDrawn, wallet: view.wallet };
  };
  const entries = createKeyEntries({
    db,
    cache,
    keyCacheSize: deps.keyCacheSize,
    totals,
    readMeters: deps.readMeters,
    log,
    closed: () => closed,
    readCredit,
    trackCredit: (orderId, clientId) => creditSync.track(orderId, clientId),
    precision: money.precision,
  });
  // The plan meters' hard limits on the check: quantities held per order, told of ingested events (check/meter-sync.ts).
  const meterState = createMeterState({ db, read: deps.readMeters, log, closed: () => closed, onLimitReached: (orderId) => meterSync.limitReached(orderId) });
  const meterSync = createMeterSync({ entries, meterState, sync });
  // Prepaid plans (issue 24): the balance held per order, NO_CREDIT on the check; the first refusal of a depletion is
  // announced to the verifiers' streams and recorded once (wallet.depleted).
  const creditSync = createCreditSync({
    db,
    orderUsage: entries.orderUsage,
    totals,
    readView: readCredit,
    sync,
    // In the background: the check never waits for it.
    drawNow: () => void periodMeter.flush(),
    onDepleted: (orderId, clientId, balance) => {
      meterSync.limitReached(orderId);
      deps.prepaid.markDepleted(clientId, orderId, balance).catch((error: unknown) => log(error, 'recording a depleted balance'));
    },
    log,
    closed: () => closed,
  });
  const prepaidDraws = createPrepaidDraws({ db, precision: money.precision, ledger: deps.prepaid, readMeters: deps.readMeters, drawn: (clientId) => creditSync.drawn(clientId), log });
  const keyCheck = createKeyCheck({ secrets, limiter, money, cache, hashMemo, keyRates, entries, metering, periodMeter, sync, meterState, creditSync, outcomes: outcomeMeter.tally });
  const records = createKeyRecords({ db, secrets, money, totals, metering, readMeters: deps.readMeters, readCredit });
  const issuing = createKeyIssuing({ db, secrets, events: deps.events, sync, records, meters: [metering, periodMeter] });
  const severalKeys = createSeveralKeys({ db, dialect: deps.dialect, events: deps.events, freshKey: issuing.freshKey, orderKeys, orderChangedIn: sync.orderChangedIn });
  const reported = createReportedUses({ db, cache, metering, totals, thresholds, sync });

  return {
    /** For tests and the benchmark: the cache, the meter and the channel. */
    internals: { cache, hashMemo, metering, outcomeMeter, channel: sync.channel, blocked: keyCheck.blocked, meterAlerts },

    /** Figures for /metrics: answers by reason, key-cache size and hits, usage-flush lag. */
    stats() {
      return { reasons: keyCheck.reasons, cacheSize: cache.size, cacheHits: cache.hits, cacheMisses: cache.misses, flushLagMs: metering.lagMs(Date.now()) };
    },

    // ---- the check (check/key-check.ts): guest check and get_info, and the verifiers' (CONTRACT §11) ----
    check: keyCheck.check,
    getInfo: keyCheck.getInfo,
    verifierInfo: keyCheck.verifierInfo,

    /** admin/serviceapikey/report_usage: uses answered from an SDK's cache; a batch id already seen adds nothing. */
    reportUsage: reported.reportUsage,
    /** The verifiers' events stream: every key change from any process (starts listening on first use). */
    keyEvents: sync.keyEvents,

    // ---- product type hooks, inside the order's transaction (issuing/keys.ts) ----
    issue: issuing.issue,
    orderChanged: issuing.orderChanged,
    planChanged: issuing.planChanged,
    orderDeleted: issuing.orderDeleted,
    serviceFields: records.serviceFields,

    // ---- staff and clients ----
    update: issuing.update,
    reset: issuing.reset,
    /** client and admin create, delete, rename (issuing/several-keys.ts). */
    createKey: (params: { order_id: number; name?: string | undefined }, clientId?: number) => severalKeys.createKey(params, clientId),
    deleteKey: (id: number, clientId?: number) => severalKeys.deleteKey(id, clientId),
    renameKey: (id: number, name: string | null, clientId?: number) => severalKeys.renameKey(id, name, clientId),
    /** client and admin alerts_get / alerts_set: the client's own alert percentages per meter (usage/client-alerts.ts). */
    getAlerts: clientAlerts.getAlerts,
    setAlerts: clientAlerts.setAlerts,
    /** Listens to ingestion (usage.onMeasured, services.ts): the plan's meters' alerts (usage/meter-alerts.ts). */
    alertOnMeasured: meterAlerts.onMeasured,
    find: records.find,
    get: records.get,
    list: records.list,
    usage: records.usage,
    /** admin and client analytics, admin analytics_not_found, and the scheduler's retention prune (analytics/). */
    analytics: keyAnalytics.analytics,
    analyticsNotFound: keyAnalytics.notFound,
    pruneAnalytics: keyAnalytics.prune,
    /** admin/serviceapikey/get_list: keys with their last use, sorted by it (analytics/keys-by-use.ts); this process's uses written first. */
    keysByUse: async (params: KeyUseParams) => {
      await outcomeMeter.flush();
      return keysByUse(db, params);
    },

    /** Told after an ingested batch committed (modules/usage onMeasured): the meters' hard limits learn of it here and everywhere. */
    metersMeasured: meterSync.measured,
    /** Told after an ingested batch committed: prepaid plans draw the usage measured from their balances. */
    prepaidMeasured: (measured: ReadonlyArray<{ orderId: number; periodStart: string }>) => prepaidDraws.onMeasured(measured),
    /** Draws an order's usage in a period now, if its plan is prepaid (the close, before it records the period). */
    drawPrepaid: (orderId: number, periodStart: string): Promise<void> => prepaidDraws.draw(orderId, periodStart),

    /** Writes the usage counts now (tests, shutdown). */
    async flushUsage(): Promise<void> {
      await Promise.all([metering.flush(), periodMeter.flush(), outcomeMeter.flush()]);
    },

    /** Flushes the counts and closes the listener; the database must still be open. */
    async close(): Promise<void> {
      closed = true;
      sync.closeStreams();
      await metering.close();
      await periodMeter.close();
      await outcomeMeter.close();
      await sync.close();
    },
  };
}

export type ApiKeyService = ReturnType<typeof createApiKeyService>;
