// Usage events in, exactly once (issue 23, ingestion). A batch of events is checked one by one (event-checks.ts),
// each is matched to its order (by key or order_id), to a meter of the plan in force and to the usage period of its
// timestamp (order-plans.ts); the sound ones are inserted with ON CONFLICT DO NOTHING against the unique
// (order_id, event_id): an event id already stored, by this batch, an earlier one or another process at the same
// moment, adds no row and is reported as a duplicate. The events the insert returned — only those — are folded into
// the meters' day rows in the same transaction (rollup.ts), so what a meter measured and the events it measured commit
// together. An event whose period was already closed (its overage billed) is refused with PERIOD_CLOSED.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { DialectName } from '../../db/database.ts';
import type { SecretBox } from '../../lib/crypto.ts';
import { errors } from '../../platform/errors.ts';
import { inTransaction } from '../../platform/transaction.ts';
import { chunks } from './chunks.ts';
import { meterRejection, soundEvent, type Rejection, type SoundEvent } from './event-checks.ts';
import { CALLS_METER, holdOrders, orderPlans, type IngestMeter, type OrderPlan } from './order-plans.ts';
import { foldIntoRollups, type StoredEvent } from './rollup.ts';
import type { UsageEventTable } from './tables.ts';
import type { UsagePeriod } from '../serviceapikey/usage/usage-period.ts';

export interface IngestResult {
  /** Events stored by this call. */
  accepted: number;
  /** Sound events whose id was already stored for their order (or repeated in this batch): counted once, before. */
  duplicates: number;
  /** The events refused, by their index in the batch. */
  rejected: Array<{ index: number; code: string; message: string }>;
}

/** What a batch measured: each order, period and meter whose quantity changed (after the transaction committed). */
export interface Measured {
  orderId: number;
  periodStart: string;
  periodEnd: string;
  /** Codes of the meters whose quantity the batch changed (`calls` included when it carried calls events). */
  meters: string[];
  /**
   * Whether an alert may be due: the plan in force has a meter with included units, or the batch carried `calls`
   * events (whose included uses are the plan's own). Alerts are percentages of included units, so without any there
   * is nothing for them to look at — and a busy ingestion is spared reading the plan again for nothing.
   */
  mayAlert: boolean;
}

/** Told after a batch committed what it measured: the hard limits and the alerts react to it (services.ts wires them). */
export type MeasuredListener = (measured: readonly Measured[]) => void | Promise<void>;

export interface UsageDeps {
  db: Kysely<Database>;
  dialect: DialectName;
  secrets: Pick<SecretBox, 'hash'>;
  log?: (message: string, error: unknown) => void;
}

/** A sound event placed: its order, meter, period and the row to insert. */
interface Placed {
  index: number;
  orderId: number;
  plan: OrderPlan;
  meter: IngestMeter;
  period: UsagePeriod;
  keyId: number | null;
  event: SoundEvent;
}

// Rows per INSERT: 7 parameters a row stays far below SQLite's 32,766 and PostgreSQL's 65,535 bound parameters.
const INSERT_CHUNK = 500;
const LOOKUP_CHUNK = 500;

const identity = (orderId: number, eventId: string): string => `${orderId}\u0000${eventId}`;

/**
 * A batch whose events all fall in periods ending more than this after it started neither waits for the orders' rows
 * nor looks for a close: a period is closed CLOSE_GRACE_MS (10 s) after its end at the earliest, long after this
 * batch's transaction has ended — which `store` makes sure of, refusing to commit a batch that took longer.
 */
const OPEN_PERIOD_MARGIN_MS = 5 * 60 * 1000;
/** Kept free of the margin, for the commit itself. */
const CLOSE_SAFETY_MS = 60 * 1000;

/** What the batch's new events touched: one entry per order and period, with the meters. */
function measuredOf(fresh: readonly Placed[]): Measured[] {
  const touched = new Map<string, Measured>();
  for (const { orderId, period, meter, plan } of fresh) {
    const key = `${orderId} ${period.start}`;
    const entry = touched.get(key) ?? { orderId, periodStart: period.start, periodEnd: period.end, meters: [], mayAlert: plan.hasIncluded };
    if (!entry.meters.includes(meter.code)) entry.meters.push(meter.code);
    if (meter.code === CALLS_METER) entry.mayAlert = true;
    touched.set(key, entry);
  }
  return [...touched.values()];
}

export function createUsageService({ db, dialect, secrets, log }: UsageDeps) {
  const listeners: MeasuredListener[] = [];

  /** Tells every listener; one that fails is logged and never fails the batch (its events are stored). */
  async function tell(measured: readonly Measured[]): Promise<void> {
    if (measured.length === 0) return;
    for (const listener of listeners) {
      try {
        await listener(measured);
      } catch (error) {
        log?.('a listener of ingested usage failed', error);
      }
    }
  }

  /** The live key of each key hash sent (its current hash, or the replaced one during its grace period). */
  async function keysByHash(hashes: readonly string[], nowIso: string): Promise<Map<string, { orderId: number; keyId: number }>> {
    const found = new Map<string, { orderId: number; keyId: number }>();
    for (const part of chunks(hashes, LOOKUP_CHUNK)) {
      const rows = await db
        .selectFrom('api_keys')
        .select(['id', 'order_id', 'key_hash', 'grace_hash', 'grace_until'])
        .where('deleted_at', 'is', null)
        .where((eb) => eb.or([eb('key_hash', 'in', part), eb('grace_hash', 'in', part)]))
        .execute();
      for (const row of rows) {
        found.set(row.key_hash, { orderId: row.order_id, keyId: row.id });
        if (row.grace_hash !== null && row.grace_until !== null && row.grace_until > nowIso) found.set(row.grace_hash, { orderId: row.order_id, keyId: row.id });
      }
    }
    return found;
  }

  /** The (order, period start) pairs among `placed` whose period is closed. */
  async function closedPeriods(trx: Kysely<Database>, placed: readonly Placed[]): Promise<Set<string>> {
    const closed = new Set<string>();
    const orderIds = [...new Set(placed.map((item) => item.orderId))];
    const starts = [...new Set(placed.map((item) => item.period.start))];
    for (const part of chunks(orderIds, LOOKUP_CHUNK)) {
      const rows = await trx.selectFrom('usage_closes').select(['order_id', 'period_start']).where('order_id', 'in', part).where('period_start', 'in', starts).execute();
      for (const row of rows) closed.add(`${row.order_id} ${row.period_start}`);
    }
    return closed;
  }

  /**
   * In one transaction: holds the orders against a concurrent close, refuses events of closed periods, inserts the
   * rest sorted and folds the ones that were new into the rollups. Returns the new events and the refused indexes.
   */
  async function store(placed: Placed[], nowIso: string, nowMs: number): Promise<{ accepted: number; closed: number[]; measured: Measured[] }> {
    const began = Date.now();
    // Every batch inserts in the same (order_id, event_id) order, so two batches sharing events on PostgreSQL wait for
    // each other's row locks in one direction only and never deadlock, whatever their splits.
    placed.sort((a, b) => a.orderId - b.orderId || (a.event.id < b.event.id ? -1 : a.event.id > b.event.id ? 1 : 0));
    // Only the events of a period that may be closing need the orders held and the closes read (OPEN_PERIOD_MARGIN_MS).
    const closable = placed.filter((item) => item.period.endMs <= nowMs + OPEN_PERIOD_MARGIN_MS);
    return inTransaction(db, async (trx) => {
      const closedSet = closable.length === 0 ? new Set<string>() : await (async () => {
        await holdOrders(trx, dialect, [...new Set(closable.map((item) => item.orderId))]);
        return closedPeriods(trx, closable);
      })();
      const closed: number[] = [];
      const open = placed.filter((item) => {
        if (!closedSet.has(`${item.orderId} ${item.period.start}`)) return true;
        closed.push(item.index);
        return false;
      });
      const byIdentity = new Map(open.map((item) => [identity(item.orderId, item.event.id), item]));
      const fresh: Placed[] = [];
      for (const part of chunks(open, INSERT_CHUNK)) {
        const rows: UsageEventTable[] = part.map(({ orderId, event }) => ({
          order_id: orderId,
          event_id: event.id,
          meter: event.meter,
          value: event.value,
          timestamp: event.timestamp,
          properties: event.properties === null ? null : JSON.stringify(event.properties),
          received_at: nowIso,
        }));
        const returned = await trx
          .insertInto('usage_events')
          .values(rows)
          .onConflict((oc) => oc.columns(['order_id', 'event_id']).doNothing())
          .returning(['order_id', 'event_id'])
          .execute();
        for (const row of returned) {
          const item = byIdentity.get(identity(row.order_id, row.event_id));
          if (item !== undefined) fresh.push(item);
        }
      }
      // Folded in the order the events were sent, so a `latest` tie goes to the later one as lib/meters says.
      fresh.sort((a, b) => a.index - b.index);
      const stored: StoredEvent[] = fresh.map((item) => ({
        orderId: item.orderId,
        meter: item.meter,
        period: item.period,
        keyId: item.keyId,
        value: item.event.value,
        timestamp: item.event.timestamp,
        properties: item.event.properties,
      }));
      await foldIntoRollups(trx, stored);
      // The margin that let this batch skip the closes holds only while the batch is quick: a batch that took longer
      // (a stalled database) rolls back rather than risk landing in a period closed meanwhile; its events count once
      // when it is sent again.
      if (closable.length < placed.length && Date.now() - began > OPEN_PERIOD_MARGIN_MS - CLOSE_SAFETY_MS) throw errors.tryAgain('The batch took too long to store and was not stored: send it again (each event counts once)');
      return { accepted: fresh.length, closed, measured: measuredOf(fresh) };
    });
  }

  return {
    /** Registers a listener told after each batch that stored events (services.ts: hard limits, alerts). */
    onMeasured(listener: MeasuredListener): void {
      listeners.push(listener);
    },

    /**
     * Ingests a batch: each event is accepted, a duplicate, or rejected with its index. `events` are the request's
     * items as sent (objects whose fields are unchecked); `now` decides the timestamp window and the default.
     */
    async ingest(events: ReadonlyArray<Record<string, unknown>>, now: Date = new Date()): Promise<IngestResult> {
      const nowMs = now.getTime();
      const nowIso = now.toISOString();
      const rejected: IngestResult['rejected'] = [];
      const refuse = (index: number, rejection: Rejection) => rejected.push({ index, ...rejection });

      const sound: Array<{ index: number; event: SoundEvent }> = [];
      events.forEach((raw, index) => {
        const checked = soundEvent(raw, nowMs);
        if ('code' in checked) refuse(index, checked);
        else sound.push({ index, event: checked });
      });

      const keyHashes = new Map<string, string>();
      for (const { event } of sound) if (event.key !== null && !keyHashes.has(event.key)) keyHashes.set(event.key, secrets.hash(event.key));
      const byHash = keyHashes.size === 0 ? new Map<string, { orderId: number; keyId: number }>() : await keysByHash([...new Set(keyHashes.values())], nowIso);
      const keyOf = (event: SoundEvent) => (event.key === null ? undefined : byHash.get(keyHashes.get(event.key) ?? ''));
      const orderIds = new Set<number>();
      for (const { event } of sound) {
        const orderId = event.key !== null ? keyOf(event)?.orderId : (event.orderId ?? undefined);
        if (orderId !== undefined) orderIds.add(orderId);
      }
      const plans = orderIds.size === 0 ? new Map<number, OrderPlan>() : await orderPlans(db, [...orderIds]);

      // Sound events that fit their order and meter; a repeat of an id already in this batch is a duplicate at once
      // (the first one sent wins), so the insert below never sees one key twice.
      const placed: Placed[] = [];
      const seen = new Set<string>();
      let repeated = 0;
      for (const { index, event } of sound) {
        const key = keyOf(event);
        const orderId = event.key !== null ? key?.orderId : (event.orderId ?? undefined);
        if (orderId === undefined) {
          refuse(index, event.key !== null ? { code: 'UNKNOWN_KEY', message: 'no live API key is this key' } : { code: 'UNKNOWN_ORDER', message: `order ${event.orderId} does not exist` });
          continue;
        }
        const plan = plans.get(orderId);
        if (plan === undefined) {
          refuse(index, { code: 'UNKNOWN_ORDER', message: `order ${orderId} does not exist or has no API key` });
          continue;
        }
        if (!plan.clientActive) {
          refuse(index, { code: 'CLIENT_INACTIVE', message: "the order's client is suspended or canceled" });
          continue;
        }
        const meter = plan.meters.get(event.meter);
        if (meter === undefined) {
          refuse(index, { code: 'UNKNOWN_METER', message: `the order's plan has no meter ${event.meter}` });
          continue;
        }
        const misfit = meterRejection(event, meter);
        if (misfit !== null) {
          refuse(index, misfit);
          continue;
        }
        const id = identity(orderId, event.id);
        if (seen.has(id)) {
          repeated++;
          continue;
        }
        seen.add(id);
        placed.push({ index, orderId, plan, meter, period: plan.periodAt(Date.parse(event.timestamp)), keyId: meter.code === 'calls' ? (key?.keyId ?? plan.callsKeyId) : null, event });
      }

      const stored = placed.length === 0 ? { accepted: 0, closed: [], measured: [] } : await store(placed, nowIso, nowMs);
      await tell(stored.measured);
      for (const index of stored.closed) refuse(index, { code: 'PERIOD_CLOSED', message: "the event's usage period is closed: its usage was billed" });
      rejected.sort((a, b) => a.index - b.index);
      return { accepted: stored.accepted, duplicates: repeated + placed.length - stored.closed.length - stored.accepted, rejected };
    },
  };
}

export type UsageService = ReturnType<typeof createUsageService>;
