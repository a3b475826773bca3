// Usage alerts of a plan's meters (issue 23 item 7), told by ingestion after each batch committed (usage.onMeasured,
// wired in services.ts): for each order and period the batch measured, every meter of the plan with `included` is
// held against its percentages — the meter's `alerts` and the ones its client added — and each one reached is
// announced once per period through alert-sender.ts. The `calls` meter is looked at too when the batch carried
// `calls` events (its other uses are watched at the usage flush, thresholds.ts).
//
// Every meter of a measured order is looked at, not only the ones the batch touched, and the quantities are read after
// the commit (the period's whole quantity, not the batch's part): so a listener that failed — the database away for a
// moment — loses nothing for good. The (order, period)s it failed on are kept and looked at again with the next batch
// this process ingests, and any later batch for the same order and period, through any process, catches up too.
import type { Kysely } from 'kysely';
import type { Database } from '../../../db/schema.ts';
import { parseObject } from '../../../lib/json.ts';
import { periodQuantities } from '../../usage/quantities.ts';
import { CALLS_ALERT_METER, CALLS_PERCENTAGES, mergePercentages, type AlertMeter, type AlertPeriod, type AlertSender, type AnnouncedMemo } from './alert-sender.ts';
import { clientPercentages } from './client-alerts.ts';
import type { MeterOptions } from './meters-config.ts';
import { orderPeriodUses } from './period-usage.ts';
import { planOf, usageOptionsOf } from './usage-plan.ts';

/** What a batch measured, as ingestion tells it (src/modules/usage/service.ts `Measured`). */
export interface MeasuredPeriod {
  orderId: number;
  periodStart: string;
  /** Codes of the meters the batch changed (`calls` included when it carried calls events). */
  meters: readonly string[];
  /** False when no alert can be due (no meter with included units, no calls): nothing is read for it. */
  mayAlert?: boolean;
}

/** Failed (order, period)s kept for the next batch; past this many the oldest are dropped (a later batch catches up). */
const MAX_PENDING = 10_000;

export interface MeterAlertsDeps {
  db: Kysely<Database>;
  sender: Pick<AlertSender, 'send'>;
  memo: Pick<AnnouncedMemo, 'allKnown'>;
}

/** An order's plan as its alerts read it: the options of its first key (deleted or not), which every key shares. */
interface AlertPlan {
  clientId: number;
  options: ReturnType<typeof usageOptionsOf>;
  config: Record<string, unknown>;
  /** The client's own percentages, per meter. */
  own: Map<string, number[]> | undefined;
}

const LOOKUP_CHUNK = 500;

export function createMeterAlerts({ db, sender, memo }: MeterAlertsDeps) {
  /** `<order> <period start>` → what is still to be looked at after a failure. */
  const pending = new Map<string, MeasuredPeriod>();

  /** The plans of these orders in two reads (not two per order: a batch may name hundreds of orders). */
  async function plansOf(orderIds: readonly number[]): Promise<Map<number, AlertPlan>> {
    const plans = new Map<number, AlertPlan>();
    for (let i = 0; i < orderIds.length; i += LOOKUP_CHUNK) {
      const part = orderIds.slice(i, i + LOOKUP_CHUNK);
      const keys = await db.selectFrom('api_keys').select(['order_id', 'client_id', 'options', 'config']).where('order_id', 'in', part).orderBy('id').execute();
      const own = await clientPercentages(db, part);
      for (const key of keys) {
        if (plans.has(key.order_id)) continue;
        plans.set(key.order_id, { clientId: key.client_id, options: usageOptionsOf(parseObject(key.options)), config: parseObject(key.config), own: own.get(key.order_id) });
      }
    }
    return plans;
  }

  /** Looks at one order's meters in one period and announces what they reached. */
  async function lookAt(measured: MeasuredPeriod, plan: AlertPlan): Promise<void> {
    const { options, own } = plan;
    const period: AlertPeriod = { orderId: measured.orderId, clientId: plan.clientId, periodStart: measured.periodStart };
    const due = (meter: AlertMeter): boolean => meter.included > 0 && meter.percentages.length > 0 && !memo.allKnown(period, meter);

    const meters: Array<AlertMeter & Pick<MeterOptions, 'aggregation'>> = [];
    for (const meter of options.meters ?? []) {
      if (meter.included === null) continue;
      const alert = { code: meter.code, name: meter.name, unit: meter.unit, aggregation: meter.aggregation, included: meter.included, percentages: mergePercentages(meter.alerts, own?.get(meter.code)) };
      if (due(alert)) meters.push(alert);
    }
    if (meters.length > 0) {
      const quantities = await periodQuantities(db, measured.orderId, measured.periodStart, meters);
      for (const meter of meters) await sender.send(period, meter, quantities.get(meter.code) ?? 0);
    }

    if (!measured.meters.includes(CALLS_ALERT_METER.code)) return;
    const included = planOf(options, plan.config).included;
    if (included === null) return;
    const calls: AlertMeter = { ...CALLS_ALERT_METER, included, percentages: mergePercentages(CALLS_PERCENTAGES, own?.get(CALLS_ALERT_METER.code)) };
    if (due(calls)) await sender.send(period, calls, await orderPeriodUses(db, measured.orderId, measured.periodStart));
  }

  /** Keeps an entry to be looked at with the next batch. */
  function keep(id: string, entry: MeasuredPeriod): void {
    if (!pending.has(id) && pending.size >= MAX_PENDING) pending.delete(pending.keys().next().value!);
    pending.set(id, entry);
  }

  return {
    /** The usage listener: looks at what a batch measured (and what failed before); throws the first failure, after trying all. */
    onMeasured: async (measured: readonly MeasuredPeriod[]): Promise<void> => {
      const work = new Map(pending);
      pending.clear();
      for (const entry of measured) {
        if (entry.mayAlert === false) continue;
        const id = `${entry.orderId} ${entry.periodStart}`;
        const before = work.get(id);
        work.set(id, before === undefined ? entry : { ...entry, meters: [...new Set([...before.meters, ...entry.meters])] });
      }
      if (work.size === 0) return;
      let plans: Map<number, AlertPlan>;
      try {
        plans = await plansOf([...new Set([...work.values()].map((entry) => entry.orderId))]);
      } catch (error) {
        for (const [id, entry] of work) keep(id, entry);
        throw error;
      }
      let failure: unknown;
      for (const [id, entry] of work) {
        const plan = plans.get(entry.orderId);
        // An order without a key has no plan to alert on.
        if (plan === undefined) continue;
        try {
          await lookAt(entry, plan);
        } catch (error) {
          failure ??= error;
          keep(id, entry);
        }
      }
      if (failure !== undefined) throw failure;
    },

    /** For tests: the (order, period)s waiting to be looked at again. */
    pendingCount: (): number => pending.size,
  };
}

export type MeterAlerts = ReturnType<typeof createMeterAlerts>;
