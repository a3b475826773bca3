// Overage pricing (CONTRACT §12): what a period's uses beyond the included ones cost, in exact decimal arithmetic.
// Prices are decimal strings with up to 6 decimals; every amount is computed in micro-units (10^-6 of the currency's
// major unit) as BigInt, so 10^9 uses at a 6-decimal price neither overflows nor loses a digit, and the line is
// rounded half-up to the currency's minor units exactly once, at the end. Pure: no I/O.

/** Digits after the point that a price may carry. */
export const PRICE_DECIMALS = 6;
const MICROS_PER_UNIT = 10n ** BigInt(PRICE_DECIMALS);

export interface GraduatedTier {
  /** The last overage unit this tier prices (inclusive); null for the last tier (no upper bound). */
  up_to: number | null;
  unit_price: string;
  /** Charged once when any unit falls in the tier. */
  flat_price?: string;
}

export type OverageRule =
  | { mode: 'per_unit'; unit_price: string }
  | { mode: 'package'; package_size: number; package_price: string }
  | { mode: 'graduated'; tiers: GraduatedTier[] }
  // Volume (issue 23): the tier the quantity reaches prices every unit, not only the units inside it. Its tiers have
  // the graduated shape; a reached tier's flat_price is charged once. Offered on meters (usage/meters-config.ts).
  | { mode: 'volume'; tiers: GraduatedTier[] };

const PRICE = /^(\d{1,12})(?:\.(\d{1,6}))?$/;

/** A validated price string ("1", "0.000125") as micro-units. Throws on anything else. */
export function priceMicros(price: string): bigint {
  const match = PRICE.exec(price);
  if (match === null) throw new Error(`Not a price: ${price}`);
  return BigInt(match[1]!) * MICROS_PER_UNIT + BigInt((match[2] ?? '').padEnd(PRICE_DECIMALS, '0'));
}

/** The exact cost, in micro-units, of `units` overage units (units beyond the included ones). */
export function overageMicros(rule: OverageRule, units: number): bigint {
  if (!Number.isSafeInteger(units) || units <= 0) return 0n;
  const count = BigInt(units);
  switch (rule.mode) {
    case 'per_unit':
      return count * priceMicros(rule.unit_price);
    case 'package': {
      const size = BigInt(rule.package_size);
      return ((count + size - 1n) / size) * priceMicros(rule.package_price);
    }
    case 'volume':
      return volumeMicros(rule.tiers, count);
    default: {
      let total = 0n;
      let below = 0n;
      for (const tier of rule.tiers) {
        if (count <= below) break;
        const top = tier.up_to === null ? count : BigInt(tier.up_to) < count ? BigInt(tier.up_to) : count;
        const inTier = top - below;
        if (inTier > 0n) total += inTier * priceMicros(tier.unit_price) + (tier.flat_price === undefined ? 0n : priceMicros(tier.flat_price));
        if (tier.up_to === null) break;
        below = BigInt(tier.up_to);
      }
      return total;
    }
  }
}

/**
 * Volume pricing: the first tier whose `up_to` holds `count` (the last, unbounded tier otherwise) prices all `count`
 * units, plus its flat price. A count exactly at a tier's `up_to` stays in that tier, as in graduated pricing.
 */
function volumeMicros(tiers: readonly GraduatedTier[], count: bigint): bigint {
  const tier = tiers.find((candidate) => candidate.up_to === null || count <= BigInt(candidate.up_to)) ?? tiers.at(-1);
  if (tier === undefined) return 0n;
  return count * priceMicros(tier.unit_price) + (tier.flat_price === undefined ? 0n : priceMicros(tier.flat_price));
}

/** Micro-units rounded half-up to minor units of a currency with `precision` decimals (0–6). */
export function roundMicrosToMinor(micros: bigint, precision: number): bigint {
  const step = 10n ** BigInt(PRICE_DECIMALS - precision);
  return (micros + step / 2n) / step;
}

/** The overage line's amount in minor units, rounded half-up once. Throws when it cannot be a safe integer. */
export function overageMinor(rule: OverageRule, units: number, precision: number): number {
  const minor = roundMicrosToMinor(overageMicros(rule, units), precision);
  if (minor > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error('The overage amount is too large');
  return Number(minor);
}

/** Uses beyond the included ones (0 when unlimited or within). */
export function overageUnits(used: number, included: number | null): number {
  return included === null ? 0 : Math.max(0, used - included);
}
