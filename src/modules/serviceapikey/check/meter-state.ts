// The meters' side of the check (issue 23 item 3): each process holds, per order it has keys cached for, the current
// usage period's quantity of every meter of the plan, so `check` can refuse a key whose order is at a meter's
// hard_limit with a property read — never a database or Redis round trip per check.
//
// The quantities are
// - read with the key's record when the check loads it (a cache miss or a key change: entries.ts);
// - re-read at once, in the background, when this process ingested events for the order (`measured`, told by the
//   usage module after the batch committed) or another process says it did (an `m<order id>` token on the key
//   invalidation channel, sync/invalidation.ts);
// - re-read in the background at most every REFRESH_MS while the order has a hard-limited meter and keys are checked
//   (the fallback when a message was lost), and zeroed when the usage period ends (the next period is clean).
// What the check reads is `limitedBy`, worked out whenever the quantities change, never per check.
import type { Kysely } from 'kysely';
import type { Database } from '../../../db/schema.ts';
import type { MeterOptions } from '../usage/meters-config.ts';

/** A period's quantity of each of `meters` (0 for one with no events): modules/usage/quantities.ts, handed in by services.ts. */
export type MeterQuantityReader = (db: Kysely<Database>, orderId: number, periodStart: string, meters: readonly Pick<MeterOptions, 'code' | 'aggregation'>[]) => Promise<Map<string, number>>;

/** How old an order's quantities may be, when a meter has a hard limit, before a check re-reads them in the background. */
export const METER_REFRESH_MS = 2000;

/** An order's meters and their quantities in the usage period starting at `periodStart`, shared by its keys' records. */
export interface OrderMeters {
  /** The plan's meters (every one: get_info shows them all; the hard-limited ones refuse the key). */
  meters: readonly MeterOptions[];
  /** Whether any meter has a hard limit (only then do checks keep the quantities fresh). */
  limited: boolean;
  periodStart: string;
  quantities: Map<string, number>;
  /** The code of the first meter at its hard limit, or null: what the check reads. */
  limitedBy: string | null;
  /** When the quantities were last read (epoch ms); 0 asks for a read at the next check. */
  readAt: number;
  /** The read under way, if any (callers who wait share it). */
  reading: Promise<void> | null;
  /** A change was heard while a read was under way: read once more when it ends. */
  again: boolean;
}

/** The first meter whose quantity has reached its hard limit (in the plan's order), or null. */
export function meterAtLimit(meters: readonly MeterOptions[], quantities: ReadonlyMap<string, number>): string | null {
  for (const meter of meters) {
    if (meter.hard_limit !== null && (quantities.get(meter.code) ?? 0) >= meter.hard_limit) return meter.code;
  }
  return null;
}

/** The meters' state for a period, from quantities just read (null when the plan has no meters). */
export function orderMetersOf(meters: readonly MeterOptions[], periodStart: string, quantities: Map<string, number>, now: number): OrderMeters | null {
  if (meters.length === 0) return null;
  return {
    meters,
    limited: meters.some((meter) => meter.hard_limit !== null),
    periodStart,
    quantities,
    limitedBy: meterAtLimit(meters, quantities),
    readAt: now,
    reading: null,
    again: false,
  };
}

/** The next usage period began: its quantities start at 0 and are read at the next check (events may be backfilled). */
export function rollMeters(state: OrderMeters, periodStart: string): void {
  state.periodStart = periodStart;
  state.quantities = new Map(state.meters.map((meter) => [meter.code, 0]));
  state.limitedBy = meterAtLimit(state.meters, state.quantities);
  state.readAt = 0;
}

export interface MeterStateDeps {
  db: Kysely<Database>;
  read: MeterQuantityReader;
  log: (error: unknown, what: string) => void;
  /** True once the service is closing: no read starts then. */
  closed: () => boolean;
  /** Told when a read finds a meter newly at its hard limit (the key change is announced from there). */
  onLimitReached: (orderId: number, meter: string) => void;
}

export function createMeterState(deps: MeterStateDeps) {
  const { db, read, log } = deps;

  /**
   * Reads the order's quantities for the period it holds. Resolves when the read is applied (or failed, logged);
   * a change heard meanwhile reads once more before resolving, so the last change is always seen.
   */
  function refresh(orderId: number, state: OrderMeters): Promise<void> {
    if (state.reading !== null) {
      state.again = true;
      return state.reading;
    }
    if (deps.closed()) return Promise.resolve();
    state.reading = readLoop(orderId, state).finally(() => {
      state.reading = null;
    });
    return state.reading;
  }

  async function readLoop(orderId: number, state: OrderMeters): Promise<void> {
    try {
      do {
        state.again = false;
        const periodStart = state.periodStart;
        const quantities = await read(db, orderId, periodStart, state.meters);
        // The period ended while reading: these quantities are of the old one; read the new one's.
        if (state.periodStart !== periodStart) {
          state.again = true;
          continue;
        }
        const before = state.limitedBy;
        state.quantities = quantities;
        state.limitedBy = meterAtLimit(state.meters, quantities);
        state.readAt = Date.now();
        if (before === null && state.limitedBy !== null) deps.onLimitReached(orderId, state.limitedBy);
      } while (state.again && !deps.closed());
    } catch (error) {
      log(error, 'meter quantities refresh');
    }
  }

  return {
    refresh,
    /**
     * A check's fallback: re-reads in the background when a hard-limited meter's quantities are older than REFRESH_MS
     * (`shown`: get_info shows every meter's figures, so it keeps any plan's quantities that fresh).
     */
    keepFresh(orderId: number, state: OrderMeters, now: number, shown = false): void {
      if ((state.limited || shown) && state.reading === null && now - state.readAt > METER_REFRESH_MS) void refresh(orderId, state);
    },
  };
}

export type MeterState = ReturnType<typeof createMeterState>;
