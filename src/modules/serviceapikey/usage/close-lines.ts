// What the close of a usage period bills (CONTRACT §12, issue 23 item 5): each meter's figures — the period's quantity,
// the included units, the units beyond them and their price in minor units, rounded half-up once per meter — and the
// overage invoice's lines: `calls` first, then the plan's meters in the plan's order, one line per meter with an
// amount. The pricing is meterSummaries' (meter-summary.ts: overageUnits, then overageMinor), so what get_info
// projected is what the close bills; the dashboard's projected overage (stats/projected-overage.ts) prices with the
// same billIn. Pure: no I/O.
import { convertMinor } from '../../../lib/exchange.ts';
import { overageMinor, overageUnits, type OverageRule } from '../../../lib/usage-pricing.ts';
import { unitWords } from '../../../lib/usage-terms.ts';
import type { UsageLine } from '../../invoice/service.ts';
import type { SaleCurrency } from '../../currency/selling.ts';
import type { MeterOptions } from './meters-config.ts';
import type { UsagePlan } from './usage-plan.ts';

/** One meter as billed at a close. */
export interface BilledMeter {
  code: string;
  name: string;
  unit: string;
  aggregation: MeterOptions['aggregation'];
  used: number;
  /** Null: unlimited. */
  included: number | null;
  overage_units: number;
  /** Minor units; 0 when the meter has no overage price or stayed within its included units. */
  amount: number;
}

/** The built-in meter's name and unit, as its invoice line has always read ("750 calls over the 1,000 included"). */
export const CALLS_NAME = 'Calls';
export const CALLS_UNIT = 'calls';

/** invoice_items.title is varchar(255). */
const MAX_TITLE = 255;

/** A meter's figures for the period's quantity `used`, priced by `overage` (null: nothing is billed). */
export function billMeter(meter: PricedMeter, used: number, precision: number): BilledMeter {
  const units = meter.overage === null ? 0 : overageUnits(used, meter.included);
  const amount = meter.overage === null ? 0 : overageMinor(meter.overage, units, precision);
  return { code: meter.code, name: meter.name, unit: meter.unit, aggregation: meter.aggregation, used, included: meter.included, overage_units: units, amount };
}

/** A meter as billMeter prices it: its figures' labels, its included units and its overage price. */
export type PricedMeter = Pick<BilledMeter, 'code' | 'name' | 'unit' | 'aggregation' | 'included'> & { overage: OverageRule | null };

/** The built-in `calls` meter of a plan, priced by the plan's top-level included and overage. */
export function callsMeter(plan: Pick<UsagePlan, 'included' | 'overage'>): PricedMeter {
  return { code: 'calls', name: CALLS_NAME, unit: CALLS_UNIT, aggregation: 'count', included: plan.included, overage: plan.overage };
}

/** Micro-units: the finest a meter price is written in (CONTRACT §12: up to 6 decimals). */
const MICRO = 6;

/**
 * One meter's overage in the order's currency. In the default currency as the plan prices it; in another, priced to
 * the micro-unit and converted at the currency's rate of the close, rounded half up once, as a plan's prices are.
 */
export function billIn(meter: PricedMeter, used: number, sale: Pick<SaleCurrency, 'isDefault' | 'minorUnit' | 'rate'>): BilledMeter {
  if (sale.isDefault) return billMeter(meter, used, sale.minorUnit);
  const micro = billMeter(meter, used, MICRO);
  return { ...micro, amount: convertMinor(micro.amount, sale.rate, MICRO, sale.minorUnit) };
}

const count = (n: number): string => n.toLocaleString('en-US');

/**
 * The invoice line's title: "AI API — usage 2026-11-01 to 2026-11-30: 1,500,000 tokens over the 1,000,000 included"
 * (the units billed: those beyond the included ones).
 * The meter is named by its unit; when its name says something else ("Large-model tokens" counted in tokens) the name
 * comes first: "AI API — Large-model tokens, usage …". A title past 255 characters shortens the order's title.
 */
export function usageLineTitle(
  orderTitle: string,
  periodStart: string,
  periodEnd: string,
  units: number,
  included: number | null,
  meter: { name: string; unit: string } = { name: CALLS_NAME, unit: CALLS_UNIT },
): string {
  const last = new Date(Date.parse(periodEnd) - 1000).toISOString().slice(0, 10);
  // The unit in words as the plans page says it (lib/usage-terms.ts): "token" → "1 token", "1,500,000 tokens".
  const words = unitWords(meter.unit);
  const named = [meter.unit, words.many].some((unit) => unit.toLowerCase() === meter.name.toLowerCase()) ? '' : `${meter.name}, `;
  const tail = ` — ${named}usage ${periodStart.slice(0, 10)} to ${last}: ${count(units)} ${units === 1 ? words.one : words.many} over the ${count(included ?? 0)} included`;
  const room = MAX_TITLE - tail.length;
  const head = orderTitle.length <= room ? orderTitle : `${orderTitle.slice(0, Math.max(0, room - 1))}…`;
  return `${head}${tail}`.slice(0, MAX_TITLE);
}

/** The overage invoice's lines: `calls` first, then `meters` in their order, each with an amount. */
export function invoiceLines(orderTitle: string, periodStart: string, periodEnd: string, calls: BilledMeter, meters: readonly BilledMeter[]): UsageLine[] {
  return [calls, ...meters]
    .filter((meter) => meter.amount > 0)
    .map((meter) => ({ title: usageLineTitle(orderTitle, periodStart, periodEnd, meter.overage_units, meter.included, meter), amount: meter.amount }));
}
