// Keys as staff and clients read them (admin find and get, client get_list, usage, the order page's fields): the
// stored rows judged with the same rules as the check, decrypted for their owner, never from the check's cache.
import type { Kysely, Selectable } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { SecretBox } from '../../lib/crypto.ts';
import { parseObject } from '../../lib/json.ts';
import { TRIAL_ENDED_REASON } from '../../lib/trial.ts';
import type { Money } from '../../lib/money.ts';
import { pageRequest, toPage, type Page } from '../../lib/paginator.ts';
import { errors } from '../../platform/errors.ts';
import type { OrderSnapshot } from '../product/product-type.ts';
import { meterAtLimit, type MeterQuantityReader } from './check/meter-state.ts';
import { floorMinor, freeOf, meterAllowanceOf, stopAtOf } from './check/credit-state.ts';
import type { CreditViewReader } from './check/credit-sync.ts';
import { readKeyLimits } from './key-limits.ts';
import { monthlyLimitOf } from './options.ts';
import type { KeyRecord, Reason, UsageReport } from './types.ts';
import { meterSummaries } from './usage/meter-summary.ts';
import type { Metering } from './usage/metering.ts';
import { summaryOf, withLimit } from './usage/summary.ts';
import type { UsageTotals } from './usage/totals.ts';
import { periodDays, type UsagePeriod } from './usage/usage-period.ts';
import { planOf, usageOptionsOf } from './usage/usage-plan.ts';
import { usageReport } from './usage/usage-range.ts';
import { meterReports } from './usage/meter-series.ts';

type KeyRow = Selectable<Database['api_keys']>;

export interface KeyRecordsDeps {
  db: Kysely<Database>;
  secrets: Pick<SecretBox, 'hash' | 'decrypt'>;
  money: Pick<Money, 'format' | 'precision'>;
  totals: Pick<UsageTotals, 'currentUsage'>;
  /** The uses per day, for the usage reports (flushed and not yet). */
  metering: Metering;
  /** The plan meters' quantities in a period (hard limits, `usage.meters`). */
  readMeters: MeterQuantityReader;
  /** Prepaid plans: the client's balance and what calls drew in a period (NO_CREDIT, judged as the check does). */
  readCredit: CreditViewReader;
}

/** An order's state this period as the check judges it: its uses, and the plan meter at its hard limit (or null). */
interface Judged {
  /** A prepaid plan's balance is at its floor for these uses (NO_CREDIT). */
  noCredit?: boolean;
  used: number;
  meterLimit: string | null;
}

/** The live (not deleted) keys with their order's and client's facts. */
export function keysWithOrders(trx: Kysely<Database>) {
  return trx
    .selectFrom('api_keys')
    .innerJoin('orders', 'orders.id', 'api_keys.order_id')
    .innerJoin('clients', 'clients.id', 'api_keys.client_id')
    .selectAll('api_keys')
    .select(['orders.status', 'orders.reason as order_reason', 'orders.expires_at', 'orders.period as order_period', 'clients.status as client_status'])
    .where('api_keys.deleted_at', 'is', null);
}

/** Every key of an order, deleted ones included (the cache and the other processes must forget them all). */
export function orderKeys(trx: Kysely<Database>, orderId: number) {
  return trx.selectFrom('api_keys').select(['id', 'key_hash', 'grace_hash', 'options', 'deleted_at']).where('order_id', '=', orderId).orderBy('id').execute();
}

/** Whether the order's uses have reached the built-in meter's stop: the hard limit, or the quota under enforce_limit. */
function callsLimitReached(row: { options: string; config: string }, used: number): boolean {
  const options = parseObject(row.options);
  const { hardLimit, included, overage } = planOf(usageOptionsOf(options), parseObject(row.config));
  if (hardLimit !== null && used >= hardLimit) return true;
  return options.enforce_limit === true && overage === null && included !== null && used >= included;
}

/** The check's judgement of a stored key (check/key-check.ts judges the cached record by the same rules). */
function reasonOf(
  row: { valid: number; options: string; config: string },
  order: { status: string; order_reason: string | null; expires_at: string | null; client_status: string },
  judged: Judged,
): Reason {
  if (row.valid !== 1) return 'DISABLED';
  if (order.client_status !== 'active') return 'CLIENT_INACTIVE';
  if (order.status !== 'active') return order.status === 'suspended' && order.order_reason === TRIAL_ENDED_REASON ? 'TRIAL_ENDED' : 'NOT_ACTIVE';
  if (order.expires_at !== null && Date.parse(order.expires_at) <= Date.now()) return 'EXPIRED';
  if (callsLimitReached(row, judged.used) || judged.meterLimit !== null) return 'LIMIT_EXCEEDED';
  if (judged.noCredit === true) return 'NO_CREDIT';
  return 'VALID';
}

function rotatingUntil(row: { grace_until: string | null }): string | null {
  return row.grace_until !== null && Date.parse(row.grace_until) > Date.now() ? row.grace_until : null;
}

export function createKeyRecords(deps: KeyRecordsDeps) {
  const { db, secrets, totals } = deps;

  /** The plan's meters and their quantities in `period` (none read for a plan without meters). */
  async function meterQuantities(trx: Kysely<Database>, row: { order_id: number; options: string }, period: UsagePeriod) {
    const meters = usageOptionsOf(parseObject(row.options)).meters ?? [];
    const quantities = meters.length === 0 ? new Map<string, number>() : await deps.readMeters(trx, row.order_id, period.start, meters);
    return { meters, quantities };
  }

  /** The order's uses this period and the plan meter at its hard limit, as the check would judge them. */
  async function judgedOf(trx: Kysely<Database>, row: KeyRow & { expires_at: string | null; order_period: string | null }): Promise<Judged> {
    const { period, used } = await totals.currentUsage(trx, row);
    const { meters, quantities } = await meterQuantities(trx, row, period);
    const plan = planOf(usageOptionsOf(parseObject(row.options)), parseObject(row.config));
    let noCredit = false;
    if (plan.prepaidFloorMicros != null) {
      const view = await deps.readCredit(row.client_id, row.order_id, period.start);
      const free = freeOf(meterAllowanceOf(meters), view.metersDrawn);
      noCredit = used >= stopAtOf(plan, view.balance, floorMinor(plan.prepaidFloorMicros, deps.money.precision), view.callsDrawn, deps.money.precision, free);
    }
    return { used, meterLimit: meterAtLimit(meters, quantities), noCredit };
  }

  async function recordOf(trx: Kysely<Database>, row: KeyRow & { status: string; order_reason: string | null; expires_at: string | null; client_status: string; order_period: string | null }, judged?: Judged): Promise<KeyRecord> {
    return {
      id: row.id,
      name: row.name,
      order_id: row.order_id,
      client_id: row.client_id,
      api_key: secrets.decrypt(row.key_enc),
      valid: row.valid === 1 ? 1 : 0,
      config: parseObject(row.config),
      reason: reasonOf(row, row, judged ?? (await judgedOf(trx, row))),
      rotating_until: rotatingUntil(row),
      created_at: row.created_at,
      updated_at: row.updated_at,
    };
  }

  /**
   * One key, the caller's own when `clientId` is given (404 otherwise): by its `id`, by the key itself, or by
   * `order_id` when the order holds one key (an order with several needs `id` or `key`: 422).
   */
  async function requireKey(trx: Kysely<Database>, by: { id?: number | undefined; order_id?: number | undefined; key?: string | undefined }, clientId?: number) {
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

  return {
    requireKey,

    /** `{api_key, config, valid, reason}` of the order's first key for order/service; nulls before it is issued. */
    serviceFields: async (trx: Kysely<Database>, order: OrderSnapshot): Promise<Record<string, unknown>> => {
      const row = await keysWithOrders(trx).where('api_keys.order_id', '=', order.id).orderBy('api_keys.id').executeTakeFirst();
      if (row === undefined) return { api_key: null, config: null, valid: 0, reason: 'NOT_ACTIVE', usage: null };
      // This period's use and its projected overage, as get_info shows it (the client area and the admin order page).
      const { plan, period, used } = await totals.currentUsage(trx, row);
      const { meters, quantities } = await meterQuantities(trx, row, period);
      const meterLimit = meterAtLimit(meters, quantities);
      const record = await recordOf(trx, row, { used, meterLimit });
      const limit = monthlyLimitOf(record.config);
      const metered = { limited_by: callsLimitReached(row, used) ? 'calls' : meterLimit, meters: meterSummaries(deps.money, meters, quantities) };
      const usage = withLimit(summaryOf(deps.money, plan, period, used), limit, metered);
      return { api_key: record.api_key, config: record.config, valid: record.valid, reason: record.reason, usage, max_keys: readKeyLimits(parseObject(row.options)).max_keys };
    },

    /**
     * admin/serviceapikey/find: the order behind a key staff pasted (a leaked one, say), looked up by its keyed hash
     * like check; the answer names the order and client, never the key. Surrounding whitespace from a paste is ignored.
     */
    find: async (key: string): Promise<{ order_id: number; client_id: number; valid: 0 | 1; reason: Reason }> => {
      const row = await requireKey(db, { key: key.trim() });
      return { order_id: row.order_id, client_id: row.client_id, valid: row.valid === 1 ? 1 : 0, reason: reasonOf(row, row, await judgedOf(db, row)) };
    },

    /** admin/serviceapikey/get: the order's first key, and `keys`: every key of the order with its id and name. */
    get: async (orderId: number): Promise<KeyRecord & { keys: KeyRecord[] }> => {
      const rows = await keysWithOrders(db).where('api_keys.order_id', '=', orderId).orderBy('api_keys.id').execute();
      if (rows.length === 0) throw errors.apiKeyNotFound();
      const judged = await judgedOf(db, rows[0]!);
      const keys: KeyRecord[] = [];
      for (const row of rows) keys.push(await recordOf(db, row, judged));
      return { ...keys[0]!, keys };
    },

    /** client/serviceapikey/get_list: the caller's keys (each with its id and name), newest first. */
    list: async (clientId: number, params: { page?: number | undefined; per_page?: number | undefined; order_id?: number | undefined }): Promise<Page<Omit<KeyRecord, 'client_id'>>> => {
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
      const judgedByOrder = new Map<number, Judged>();
      for (const row of rows) {
        let judged = judgedByOrder.get(row.order_id);
        if (judged === undefined) judgedByOrder.set(row.order_id, (judged = await judgedOf(db, row)));
        const { client_id: _client, ...record } = await recordOf(db, row, judged);
        list.push(record);
      }
      return toPage(request, total.n, list);
    },

    /**
     * client and admin usage: per day over a range (default: the current usage period), of the order's keys or of one
     * (usage-range.ts), and the plan's own meters over the same days with their figures this period (meter-series.ts;
     * meters are measured per order, so `key_id` narrows the calls alone).
     */
    usage: async (params: { order_id: number; key_id?: number | undefined; from?: string | undefined; to?: string | undefined }, clientId?: number): Promise<UsageReport> => {
      const key = await keysWithOrders(db).where('api_keys.order_id', '=', params.order_id).orderBy('api_keys.id').executeTakeFirst();
      // No live key: the answer usageReport gives too (a client never learns more about an order than "not found").
      if (key === undefined) throw errors.apiKeyNotFound();
      const { period } = await totals.currentUsage(db, key);
      // The calls first: they refuse another client's order, or a bad range, before the meters are read.
      const calls = await usageReport(db, deps.metering, params, clientId, periodDays(period));
      const meters = usageOptionsOf(parseObject(key.options)).meters ?? [];
      return { ...calls, meters: await meterReports(db, deps.money, { orderId: params.order_id, meters, periodStart: period.start }, calls.days.map((day) => day.date)) };
    },
  };
}

export type KeyRecords = ReturnType<typeof createKeyRecords>;
