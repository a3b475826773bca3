// Prepaid plans draw their usage from the client's balance as it is measured (issue 24 item 2): after each flush of
// the counted uses (the `calls` meter) and after each ingested batch (the plan's meters), every prepaid order touched
// has each meter priced at its period's cumulative quantity — the close's pricing (close-lines.ts `billMeter`: the
// units beyond `included`, the same price modes, rounded once per meter) — and the credit ledger draws the difference
// from what that meter drew already (modules/credit/prepaid.ts), so pricing is never incremental per event and a retry
// or another process never draws twice. Then the check's view of the balance is re-read here and everywhere
// (check/credit-sync.ts). The close (overage.ts) draws once more before it records a prepaid period, and bills nothing.
import type { Kysely } from 'kysely';
import type { Database } from '../../../db/schema.ts';
import { parseObject } from '../../../lib/json.ts';
import type { PrepaidLedger } from '../../credit/prepaid.ts';
import type { MeterQuantityReader } from '../check/meter-state.ts';
import { billMeter, CALLS_NAME, CALLS_UNIT } from './close-lines.ts';
import { orderPeriodUses, periodOfRow } from './period-usage.ts';
import type { UsageRow } from './metering.ts';
import { periodOf } from './totals.ts';
import { planOf, usageOptionsOf } from './usage-plan.ts';

/** Stored options hold `"prepaid":true` exactly so (JSON.stringify): how a flush finds the prepaid keys among its rows. */
const PREPAID_OPTION = '%"prepaid":true%';
const KEYS_PER_QUERY = 500;

export interface PrepaidDrawDeps {
  db: Kysely<Database>;
  precision: number;
  ledger: Pick<PrepaidLedger, 'drawUsage'>;
  readMeters: MeterQuantityReader;
  /** The client's balance was drawn from: re-read the check's views here and tell the other processes. */
  drawn: (clientId: number) => Promise<void>;
  log: (error: unknown, what: string) => void;
}

export function createPrepaidDraws({ db, precision, ledger, readMeters, drawn, log }: PrepaidDrawDeps) {
  /** Order and period → the draw under way, and whether another was asked for meanwhile (then it runs once more). */
  const running = new Map<string, { promise: Promise<void>; again: boolean }>();

  /** Prices the order's meters in the period (the current one when `periodStart` is null) and draws the difference. */
  async function drawOnce(orderId: number, periodStart: string | null): Promise<void> {
    const key = await db
      .selectFrom('api_keys as k')
      .innerJoin('orders as o', 'o.id', 'k.order_id')
      .select(['k.client_id', 'k.options', 'k.config', 'o.period', 'o.expires_at'])
      .where('k.order_id', '=', orderId)
      .orderBy('k.id')
      .executeTakeFirst();
    if (key === undefined) return;
    const options = usageOptionsOf(parseObject(key.options));
    if (options.prepaid !== true) return;
    const plan = planOf(options, parseObject(key.config));
    const start = periodStart ?? periodOf(plan, Date.now(), { period: key.period, expiresAtMs: key.expires_at === null ? null : Date.parse(key.expires_at) }).start;
    // A closed period drew at its close; uses counted after it are not billed (CONTRACT §14), nor drawn.
    const closed = await db.selectFrom('usage_closes').select('id').where('order_id', '=', orderId).where('period_start', '=', start).executeTakeFirst();
    if (closed !== undefined) return;
    const meters = options.meters ?? [];
    const calls = billMeter({ code: 'calls', name: CALLS_NAME, unit: CALLS_UNIT, aggregation: 'count', included: plan.included, overage: plan.overage }, await orderPeriodUses(db, orderId, start), precision);
    const quantities = meters.length === 0 ? new Map<string, number>() : await readMeters(db, orderId, start, meters);
    const billed = [calls, ...meters.map((meter) => billMeter(meter, quantities.get(meter.code) ?? 0, precision))];
    const draws = billed.filter((meter) => meter.amount > 0).map((meter) => ({ meter: meter.code, amount: meter.amount }));
    if (draws.length === 0) return;
    await ledger.drawUsage({ clientId: key.client_id, orderId, periodStart: start, draws });
    await drawn(key.client_id);
  }

  /** One draw at a time per order and period; asked again meanwhile, it draws once more when the first ends. */
  function draw(orderId: number, periodStart: string | null): Promise<void> {
    const id = `${orderId} ${periodStart ?? ''}`;
    const current = running.get(id);
    if (current !== undefined) {
      current.again = true;
      return current.promise;
    }
    const state = { promise: Promise.resolve(), again: false };
    state.promise = (async () => {
      try {
        do {
          state.again = false;
          await drawOnce(orderId, periodStart);
        } while (state.again);
      } catch (error) {
        // Nothing is lost: the next draw prices the whole period again, and the close draws before it records it.
        log(error, `prepaid draw of order ${orderId}`);
      } finally {
        running.delete(id);
      }
    })();
    running.set(id, state);
    return state.promise;
  }

  return {
    draw,

    /** After a flush of uses per period: draws for the prepaid orders among the keys written. */
    async afterFlush(rows: readonly UsageRow[]): Promise<void> {
      const periods = new Map<number, Set<string>>();
      for (const row of rows) {
        const { api_key_id: keyId, period_start: start } = periodOfRow(row);
        const set = periods.get(keyId) ?? new Set<string>();
        set.add(start);
        periods.set(keyId, set);
      }
      const ids = [...periods.keys()];
      const draws: Array<Promise<void>> = [];
      const seen = new Set<string>();
      for (let i = 0; i < ids.length; i += KEYS_PER_QUERY) {
        const keys = await db
          .selectFrom('api_keys')
          .select(['id', 'order_id'])
          .where('id', 'in', ids.slice(i, i + KEYS_PER_QUERY))
          .where('options', 'like', PREPAID_OPTION)
          .execute();
        for (const key of keys) {
          for (const start of periods.get(key.id) ?? []) {
            if (seen.has(`${key.order_id} ${start}`)) continue;
            seen.add(`${key.order_id} ${start}`);
            draws.push(draw(key.order_id, start));
          }
        }
      }
      await Promise.all(draws);
    },

    /** After an ingested batch committed (modules/usage onMeasured): draws for each prepaid order and period it measured. */
    async onMeasured(measured: ReadonlyArray<{ orderId: number; periodStart: string }>): Promise<void> {
      const orderIds = [...new Set(measured.map((item) => item.orderId))];
      const prepaid = new Set<number>();
      for (let i = 0; i < orderIds.length; i += KEYS_PER_QUERY) {
        const rows = await db
          .selectFrom('api_keys')
          .select('order_id')
          .distinct()
          .where('order_id', 'in', orderIds.slice(i, i + KEYS_PER_QUERY))
          .where('options', 'like', PREPAID_OPTION)
          .execute();
        for (const row of rows) prepaid.add(row.order_id);
      }
      await Promise.all(measured.filter((item) => prepaid.has(item.orderId)).map((item) => draw(item.orderId, item.periodStart)));
    },
  };
}

export type PrepaidDraws = ReturnType<typeof createPrepaidDraws>;
