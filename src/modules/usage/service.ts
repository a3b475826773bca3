// Usage events in, exactly once (issue 23, ingestion). A batch of events is checked one by one (event-checks.ts),
// each is matched to its order (by key or order_id) and to a meter on the order's plan (meters.ts), and the sound ones
// are inserted with ON CONFLICT DO NOTHING against the unique (order_id, event_id): an event id already stored, by
// this batch, an earlier one or another process at the same moment, adds no row and is reported as a duplicate.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { SecretBox } from '../../lib/crypto.ts';
import { inTransaction } from '../../platform/transaction.ts';
import { meterRejection, soundEvent, type Rejection, type SoundEvent } from './event-checks.ts';
import { metersOf, parseConfig, type MeterRule } from './meters.ts';
import type { UsageEventTable } from './tables.ts';

export interface IngestResult {
  /** Events stored by this call. */
  accepted: number;
  /** Sound events whose id was already stored for their order (or repeated in this batch): counted once, before. */
  duplicates: number;
  /** The events refused, by their index in the batch. */
  rejected: Array<{ index: number; code: string; message: string }>;
}

export interface UsageDeps {
  db: Kysely<Database>;
  secrets: Pick<SecretBox, 'hash'>;
}

/** What ingestion needs to know of an order. */
interface OrderFacts {
  clientActive: boolean;
  meters: Map<string, MeterRule>;
}

// Rows per INSERT: 7 parameters a row stays far below SQLite's 32,766 and PostgreSQL's 65,535 bound parameters.
const INSERT_CHUNK = 500;
// Values per IN list, for the same reason.
const LOOKUP_CHUNK = 500;

function chunks<T>(list: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < list.length; i += size) out.push(list.slice(i, i + size));
  return out;
}

export function createUsageService({ db, secrets }: UsageDeps) {
  /** The order of each key sent, by the key's hash: its current hash, or the replaced one during its grace period. */
  async function ordersByKeyHash(hashes: readonly string[], nowIso: string): Promise<Map<string, number>> {
    const found = new Map<string, number>();
    for (const part of chunks(hashes, LOOKUP_CHUNK)) {
      const rows = await db
        .selectFrom('api_keys')
        .select(['order_id', 'key_hash', 'grace_hash', 'grace_until'])
        .where('deleted_at', 'is', null)
        .where((eb) => eb.or([eb('key_hash', 'in', part), eb('grace_hash', 'in', part)]))
        .execute();
      for (const row of rows) {
        found.set(row.key_hash, row.order_id);
        if (row.grace_hash !== null && row.grace_until !== null && row.grace_until > nowIso) found.set(row.grace_hash, row.order_id);
      }
    }
    return found;
  }

  async function orderFacts(orderIds: readonly number[]): Promise<Map<number, OrderFacts>> {
    const facts = new Map<number, OrderFacts>();
    for (const part of chunks(orderIds, LOOKUP_CHUNK)) {
      const rows = await db
        .selectFrom('orders')
        .innerJoin('clients', 'clients.id', 'orders.client_id')
        .select(['orders.id', 'orders.config', 'clients.status as client_status'])
        .where('orders.id', 'in', part)
        .execute();
      for (const row of rows) facts.set(row.id, { clientActive: row.client_status === 'active', meters: metersOf(parseConfig(row.config)) });
    }
    return facts;
  }

  /** Inserts the rows in one transaction, sorted, and returns how many were new. */
  async function insertNew(rows: UsageEventTable[]): Promise<number> {
    // Every batch inserts in the same (order_id, event_id) order, so two batches sharing events on PostgreSQL wait for
    // each other's row locks in one direction only and never deadlock, whatever their splits.
    rows.sort((a, b) => a.order_id - b.order_id || (a.event_id < b.event_id ? -1 : a.event_id > b.event_id ? 1 : 0));
    return inTransaction(db, async (trx) => {
      let inserted = 0;
      for (const part of chunks(rows, INSERT_CHUNK)) {
        const returned = await trx
          .insertInto('usage_events')
          .values(part)
          .onConflict((oc) => oc.columns(['order_id', 'event_id']).doNothing())
          .returning('event_id')
          .execute();
        inserted += returned.length;
      }
      return inserted;
    });
  }

  return {
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
      const byHash = keyHashes.size === 0 ? new Map<string, number>() : await ordersByKeyHash([...new Set(keyHashes.values())], nowIso);
      const orderOf = (event: SoundEvent): number | undefined => (event.key !== null ? byHash.get(keyHashes.get(event.key) ?? '') : (event.orderId ?? undefined));
      const orderIds = new Set<number>();
      for (const { event } of sound) {
        const orderId = orderOf(event);
        if (orderId !== undefined) orderIds.add(orderId);
      }
      const facts = orderIds.size === 0 ? new Map<number, OrderFacts>() : await orderFacts([...orderIds]);

      // Sound events that fit their order and meter; a repeat of an id already in this batch is a duplicate at once
      // (the first one sent wins), so the insert below never sees one key twice.
      const rows: UsageEventTable[] = [];
      const seen = new Set<string>();
      let repeated = 0;
      for (const { index, event } of sound) {
        const orderId = orderOf(event);
        if (orderId === undefined) {
          refuse(index, event.key !== null ? { code: 'UNKNOWN_KEY', message: 'no live API key is this key' } : { code: 'UNKNOWN_ORDER', message: `order ${event.orderId} does not exist` });
          continue;
        }
        const order = facts.get(orderId);
        if (order === undefined) {
          refuse(index, { code: 'UNKNOWN_ORDER', message: `order ${orderId} does not exist` });
          continue;
        }
        if (!order.clientActive) {
          refuse(index, { code: 'CLIENT_INACTIVE', message: "the order's client is suspended or canceled" });
          continue;
        }
        const rule = order.meters.get(event.meter);
        if (rule === undefined) {
          refuse(index, { code: 'UNKNOWN_METER', message: `the order's plan has no meter ${event.meter}` });
          continue;
        }
        const misfit = meterRejection(event, rule);
        if (misfit !== null) {
          refuse(index, misfit);
          continue;
        }
        const identity = `${orderId}\u0000${event.id}`;
        if (seen.has(identity)) {
          repeated++;
          continue;
        }
        seen.add(identity);
        rows.push({
          order_id: orderId,
          event_id: event.id,
          meter: event.meter,
          value: event.value,
          timestamp: event.timestamp,
          properties: event.properties === null ? null : JSON.stringify(event.properties),
          received_at: nowIso,
        });
      }

      const accepted = rows.length === 0 ? 0 : await insertNew(rows);
      rejected.sort((a, b) => a.index - b.index);
      return { accepted, duplicates: repeated + rows.length - accepted, rejected };
    },
  };
}

export type UsageService = ReturnType<typeof createUsageService>;
