// How the meters' quantities the check holds (meter-state.ts) learn of ingested events: from the usage module in
// this process after a batch committed (`measured`, wired in services.ts), and from the other processes through the key
// invalidation channel (`heard`). Also where a meter newly at its hard limit is announced as a key change, so the
// verifiers' events stream tells the SDKs to drop their cached answers (as the calls hard limit does).
import type { KeySync } from '../sync/key-sync.ts';
import type { KeyEntries } from './entries.ts';
import type { MeterState } from './meter-state.ts';

/** What an ingested batch changed, as the usage module tells it (modules/usage/service.ts `Measured`). */
export interface MeasuredOrder {
  orderId: number;
  periodStart: string;
  /** Codes of the meters whose quantity changed (`calls` included when the batch carried calls events). */
  meters: readonly string[];
}

/** Ingested `calls` events are uses of a key (api_key_period_usage): the calls count's own refresh reads them. */
const CALLS_METER = 'calls';

export interface MeterSyncDeps {
  entries: Pick<KeyEntries, 'orderUsage'>;
  meterState: Pick<MeterState, 'refresh'>;
  sync: Pick<KeySync, 'metersChanged' | 'onMetersChanged' | 'announce'>;
}

export function createMeterSync({ entries, meterState, sync }: MeterSyncDeps) {
  /**
   * The order's quantities changed: re-read them now (a hard limit must hold, and get_info shows every meter), one read
   * at a time per order however many batches arrive. Resolves once re-read; nothing to do for an order whose keys this
   * process has not loaded, or whose period is not the one held (a backfill into the period before).
   */
  function changed(orderId: number, periodStart: string | null): Promise<void> | null {
    const state = entries.orderUsage(orderId)?.meters ?? null;
    if (state === null || (periodStart !== null && state.periodStart !== periodStart)) return null;
    return meterState.refresh(orderId, state);
  }

  sync.onMetersChanged((orderId) => void changed(orderId, null));

  return {
    /** After an ingested batch committed: tells the other processes, and re-reads the quantities held here. */
    measured: async (list: readonly MeasuredOrder[]): Promise<void> => {
      const orders = new Set<number>();
      const reads: Array<Promise<void>> = [];
      for (const measured of list) {
        if (measured.meters.every((code) => code === CALLS_METER)) continue;
        orders.add(measured.orderId);
        const read = changed(measured.orderId, measured.periodStart);
        if (read !== null) reads.push(read);
      }
      sync.metersChanged([...orders]);
      await Promise.all(reads);
    },

    /** A meter reached its hard limit: every key of the order changed quota state (the events stream, CONTRACT §11). */
    limitReached: (orderId: number): void => {
      for (const keyId of entries.orderUsage(orderId)?.keyIds ?? []) sync.announce(keyId, orderId);
    },
  };
}

export type MeterSync = ReturnType<typeof createMeterSync>;
