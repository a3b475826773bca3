// Sending a meter's usage alerts exactly once (CONTRACT §12, issue 23 item 7): each percentage of a meter's included
// units is announced once per order, period and meter, as the `usage.threshold_reached` event (the webhook and the
// `usage_threshold` mail listen to it and write their outbox rows in the same transaction). The row in
// `usage_thresholds` (primary key order, period, meter, percentage) is what makes it once: inserted with ON CONFLICT
// DO NOTHING in the transaction that emits, so of two batches or two processes crossing the same percentage, one
// inserts and emits and the other (which waits for the first's commit on PostgreSQL, or runs after it on SQLite)
// inserts nothing and stays silent. A failure rolls back both, so nothing is recorded that was not sent.
import type { Kysely } from 'kysely';
import type { Database } from '../../../db/schema.ts';
import type { EventBus } from '../../../platform/events.ts';
import { inTransaction } from '../../../platform/transaction.ts';
import { nowIso } from '../../../lib/time.ts';
import '../events.ts';

/** The built-in meter's alerts: every accepted check, at the plan's top-level `included`. */
export const CALLS_ALERT_METER = { code: 'calls', name: 'Calls', unit: 'calls' } as const;
/** The built-in meter's own percentages (a plan meter has its `alerts`; CONTRACT §12). */
export const CALLS_PERCENTAGES: readonly number[] = [80, 100];

/** A meter whose alerts are due a look: what it is called and the percentages (plan's and client's) it announces. */
export interface AlertMeter {
  code: string;
  name: string;
  unit: string;
  /** Units included per period (> 0; a meter without them announces nothing). */
  included: number;
  /** Sorted, without repeats. */
  percentages: readonly number[];
}

/** Whose period it is. */
export interface AlertPeriod {
  orderId: number;
  clientId: number;
  periodStart: string;
}

/** The units at which `percentage` percent of `included` is reached, rounded up (80% of 1,001 is reached at 801). */
export function thresholdUses(included: number, percentage: number): number {
  return Math.ceil((included * percentage) / 100);
}

/** The plan's percentages and the client's, sorted, each once. */
export function mergePercentages(plan: readonly number[], client: readonly number[] = []): number[] {
  return [...new Set([...plan, ...client])].toSorted((a, b) => a - b);
}

/** The percentages of `meter` that `used` has reached. */
export function reachedPercentages(meter: Pick<AlertMeter, 'included' | 'percentages'>, used: number): number[] {
  if (meter.included <= 0) return [];
  return meter.percentages.filter((percentage) => used >= thresholdUses(meter.included, percentage));
}

const memoKey = (period: Pick<AlertPeriod, 'orderId' | 'periodStart'>, meter: string): string => `${period.orderId} ${period.periodStart} ${meter}`;
/** Announcements remembered in memory to skip the database; cleared past this many (order, period, meter). */
const MAX_REMEMBERED = 100_000;

/**
 * The percentages this process knows were recorded, per order, period and meter: a meter all of whose percentages
 * are known needs no read of its quantity. Only a hint — the database row decides — and forgotten when full.
 */
export class AnnouncedMemo {
  private readonly known = new Map<string, Set<number>>();

  /** Whether every one of `meter`'s percentages is known to be recorded in this period. */
  allKnown(period: Pick<AlertPeriod, 'orderId' | 'periodStart'>, meter: Pick<AlertMeter, 'code' | 'percentages'>): boolean {
    const known = this.known.get(memoKey(period, meter.code));
    return known !== undefined && meter.percentages.every((percentage) => known.has(percentage));
  }

  remember(period: Pick<AlertPeriod, 'orderId' | 'periodStart'>, meter: string, percentages: readonly number[]): void {
    if (percentages.length === 0) return;
    const key = memoKey(period, meter);
    let known = this.known.get(key);
    if (known === undefined) {
      if (this.known.size >= MAX_REMEMBERED) this.known.clear();
      this.known.set(key, (known = new Set()));
    }
    for (const percentage of percentages) known.add(percentage);
  }
}

export interface AlertSenderDeps {
  db: Kysely<Database>;
  events: Pick<EventBus, 'emit'>;
  memo: AnnouncedMemo;
}

export function createAlertSender({ db, events, memo }: AlertSenderDeps) {
  return {
    /**
     * Announces each percentage of `meter` that `used` reached and no one announced yet in this period. Returns the
     * percentages this call announced (the others were announced before, by this process or another).
     */
    async send(period: AlertPeriod, meter: AlertMeter, used: number): Promise<number[]> {
      const reached = reachedPercentages(meter, used);
      if (reached.length === 0) return [];
      const sent: number[] = [];
      // Ascending, so two transactions inserting the same rows on PostgreSQL lock them in one order (no deadlock).
      await inTransaction(db, async (trx) => {
        for (const threshold of reached) {
          const inserted = await trx
            .insertInto('usage_thresholds')
            .values({ order_id: period.orderId, period_start: period.periodStart, meter: meter.code, threshold, used, created_at: nowIso() })
            .onConflict((oc) => oc.columns(['order_id', 'period_start', 'meter', 'threshold']).doNothing())
            .returning('threshold')
            .executeTakeFirst();
          if (inserted === undefined) continue;
          await events.emit(
            'usage.threshold_reached',
            { orderId: period.orderId, clientId: period.clientId, meter: meter.code, meterName: meter.name, unit: meter.unit, threshold, used, included: meter.included, periodStart: period.periodStart },
            trx,
          );
          sent.push(threshold);
        }
      });
      memo.remember(period, meter.code, reached);
      return sent;
    },
  };
}

export type AlertSender = ReturnType<typeof createAlertSender>;
