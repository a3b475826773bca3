// What a plan's meters measured in a period, as get_info's `usage.meters`, the usage reads and the charts show them
// (issue 23 item 4): per meter its quantity so far, the included units, the units beyond them and their projected
// price at today's quantity (the same pricing the close bills: overageUnits / overageMinor, rounded once per meter).
import type { Money } from '../../../lib/money.ts';
import { overageMinor, overageUnits } from '../../../lib/usage-pricing.ts';
import type { MeterOptions } from './meters-config.ts';

export interface MeterSummary {
  code: string;
  name: string;
  unit: string;
  aggregation: MeterOptions['aggregation'];
  /** The period's quantity so far (count, sum, max, unique count or latest value). */
  used: number;
  /** Units included per period; null: unlimited. */
  included: number | null;
  overage_units: number;
  /** The projected price of the units beyond `included`; null when the meter bills no overage. */
  overage_amount: string | null;
  hard_limit: number | null;
}

/** The meters' figures for the quantities measured (a meter missing from `quantities` measured 0). */
export function meterSummaries(money: Pick<Money, 'format' | 'precision'>, meters: readonly MeterOptions[], quantities: ReadonlyMap<string, number>): MeterSummary[] {
  return meters.map((meter) => {
    const used = quantities.get(meter.code) ?? 0;
    const units = meter.overage === null ? 0 : overageUnits(used, meter.included);
    return {
      code: meter.code,
      name: meter.name,
      unit: meter.unit,
      aggregation: meter.aggregation,
      used,
      included: meter.included,
      overage_units: units,
      overage_amount: meter.overage === null ? null : money.format(overageMinor(meter.overage, units, money.precision)),
      hard_limit: meter.hard_limit,
    };
  });
}
