// Overage pricing (CONTRACT §12) against a direct formula: random plans and use counts are priced by the library
// (BigInt micro-units, tiers walked once) and by a reference that prices unit by unit (or tier by tier in decimal
// strings for huge counts), and the two must agree to the minor unit, rounded half-up once per line. Pure: no app.
import { describe, expect, it } from 'vitest';
import { overageMinor, overageUnits, priceMicros, roundMicrosToMinor, type OverageRule } from '../../src/lib/usage-pricing.ts';
import { normalizeUsageOptions } from '../../src/modules/serviceapikey/usage/usage-plan.ts';

/** A small deterministic PRNG (mulberry32), so a failure names its seed and replays. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const int = (random: () => number, max: number) => Math.floor(random() * (max + 1));

/** A random price with 0–6 decimals, as a decimal string. */
function randomPrice(random: () => number): string {
  const decimals = int(random, 6);
  const whole = String(int(random, 20));
  if (decimals === 0) return whole;
  let fraction = '';
  for (let i = 0; i < decimals; i++) fraction += String(int(random, 9));
  return `${whole}.${fraction}`;
}

/** The reference: a price string as an exact fraction n / 10^6, done with string arithmetic, not priceMicros. */
function micros(price: string): bigint {
  const [whole, fraction = ''] = price.split('.');
  return BigInt(`${whole}${fraction.padEnd(6, '0')}`);
}

/** Unit by unit: which tier prices the n-th overage unit, plus each tier's flat price the first time it is used. */
function referenceMicros(rule: OverageRule, units: number): bigint {
  if (rule.mode === 'per_unit') {
    let total = 0n;
    for (let i = 0; i < units; i++) total += micros(rule.unit_price);
    return total;
  }
  if (rule.mode === 'package') {
    let total = 0n;
    for (let used = 0; used < units; used += rule.package_size) total += micros(rule.package_price);
    return total;
  }
  let total = 0n;
  const flatCharged = new Set<number>();
  for (let n = 1; n <= units; n++) {
    const index = rule.tiers.findIndex((tier) => tier.up_to === null || n <= tier.up_to);
    const tier = rule.tiers[index]!;
    total += micros(tier.unit_price);
    if (!flatCharged.has(index) && tier.flat_price !== undefined) {
      flatCharged.add(index);
      total += micros(tier.flat_price);
    }
  }
  return total;
}

/** Half-up to cents from micro-units, with decimal strings: "…xyz" micros → look at the 4th decimal digit. */
function referenceCents(totalMicros: bigint): number {
  const text = totalMicros.toString().padStart(7, '0');
  const cents = BigInt(text.slice(0, -4));
  const rest = Number(text.slice(-4));
  return Number(rest >= 5000 ? cents + 1n : cents);
}

function randomRule(random: () => number): OverageRule {
  const mode = int(random, 2);
  if (mode === 0) return { mode: 'per_unit', unit_price: randomPrice(random) };
  if (mode === 1) return { mode: 'package', package_size: 1 + int(random, 250), package_price: randomPrice(random) };
  const tiers: OverageRule & { mode: 'graduated' } = { mode: 'graduated', tiers: [] };
  let upTo = 0;
  const count = 1 + int(random, 4);
  for (let i = 0; i < count; i++) {
    const last = i === count - 1;
    upTo += 1 + int(random, 400);
    const tier = { up_to: last ? null : upTo, unit_price: randomPrice(random), ...(random() < 0.4 && { flat_price: randomPrice(random) }) };
    tiers.tiers.push(tier);
  }
  return tiers;
}

describe('overage pricing against a direct formula', () => {
  it('agrees with a unit-by-unit reference on 400 random plans and counts (tier and package boundaries included)', () => {
    for (let seed = 1; seed <= 400; seed++) {
      const random = rng(seed);
      const rule = randomRule(random);
      // Counts around the boundaries as often as anywhere: exactly at, one below, one above.
      const boundaries =
        rule.mode === 'graduated' ? rule.tiers.flatMap((tier) => (tier.up_to === null ? [] : [tier.up_to - 1, tier.up_to, tier.up_to + 1])) : rule.mode === 'package' ? [rule.package_size - 1, rule.package_size, rule.package_size + 1, rule.package_size * 3] : [];
      for (const units of [0, 1, int(random, 2000), ...boundaries]) {
        const expected = referenceCents(referenceMicros(rule, units));
        expect(overageMinor(rule, units, 2), `seed ${seed}, ${units} units, ${JSON.stringify(rule)}`).toBe(expected);
      }
    }
  });

  it('prices a package boundary hit exactly as whole packages, and one use more as one package more', () => {
    const rule: OverageRule = { mode: 'package', package_size: 100, package_price: '1' };
    expect(overageMinor(rule, 700, 2)).toBe(700);
    expect(overageMinor(rule, 701, 2)).toBe(800);
    expect(overageMinor(rule, 750, 2)).toBe(800);
  });

  it('crosses graduated tiers, charging each flat price once', () => {
    const rule: OverageRule = {
      mode: 'graduated',
      tiers: [
        { up_to: 1000, unit_price: '0.01' },
        { up_to: 5000, unit_price: '0.005', flat_price: '2' },
        { up_to: null, unit_price: '0.001' },
      ],
    };
    expect(overageMinor(rule, 1000, 2)).toBe(1000);
    // 1000 × 0.01 + 1 × 0.005 + 2 flat = 12.005 → 12.01 (half-up)
    expect(overageMinor(rule, 1001, 2)).toBe(1201);
    // 10 + 4000 × 0.005 + 2 + 1000 × 0.001 = 33
    expect(overageMinor(rule, 6000, 2)).toBe(3300);
  });

  it('bills nothing for no overage', () => {
    expect(overageUnits(999, 1000)).toBe(0);
    expect(overageUnits(1000, 1000)).toBe(0);
    expect(overageUnits(5, null)).toBe(0);
    expect(overageMinor({ mode: 'per_unit', unit_price: '5' }, 0, 2)).toBe(0);
  });

  it('prices 10^9 uses at 6-decimal prices exactly (no overflow, one rounding)', () => {
    // 10^9 × 0.000001 = 1000.00 exactly; × 0.0000015 = 1500.00; × 0.000123456 = 123456.00
    expect(overageMinor({ mode: 'per_unit', unit_price: '0.000001' }, 1_000_000_000, 2)).toBe(100_000);
    expect(overageMinor({ mode: 'per_unit', unit_price: '0.123457' }, 1_000_000_000, 2)).toBe(12_345_700_000);
    // 3 × 0.000005 = 0.000015 → 0.00; 1001 × 0.000005 = 0.005005 → 0.01: rounded once per line, not per unit.
    expect(overageMinor({ mode: 'per_unit', unit_price: '0.000005' }, 3, 2)).toBe(0);
    expect(overageMinor({ mode: 'per_unit', unit_price: '0.000005' }, 1001, 2)).toBe(1);
    // 999,999,999 × 999.999999 needs more than 2^53 micro-units: BigInt keeps every digit.
    expect(overageMinor({ mode: 'per_unit', unit_price: '999.999999' }, 999_999_999, 2)).toBe(99_999_999_800_000);
    const graduated: OverageRule = { mode: 'graduated', tiers: [{ up_to: 1_000_000, unit_price: '0.000333' }, { up_to: null, unit_price: '0.000001', flat_price: '0.5' }] };
    // 10^6 × 0.000333 = 333 + (10^9 − 10^6) × 0.000001 = 999 + 0.5 → 1332.50
    expect(overageMinor(graduated, 1_000_000_000, 2)).toBe(133_250);
  });

  it('rounds half-up to the currency precision (0, 2 and 3 decimals)', () => {
    expect(roundMicrosToMinor(priceMicros('0.005'), 2)).toBe(1n);
    expect(roundMicrosToMinor(priceMicros('0.004999'), 2)).toBe(0n);
    expect(roundMicrosToMinor(priceMicros('2.5'), 0)).toBe(3n);
    expect(roundMicrosToMinor(priceMicros('1.0005'), 3)).toBe(1001n);
  });
});

describe('usage options validation', () => {
  const invalid = (config: Record<string, unknown>, param: string) => {
    expect(() => normalizeUsageOptions(config)).toThrow(expect.objectContaining({ message: expect.stringContaining(param) }));
  };

  it('normalises prices and keeps only the options set', () => {
    expect(normalizeUsageOptions({})).toEqual({});
    expect(normalizeUsageOptions({ included: '1000', overage: { mode: 'per_unit', unit_price: '0.0100' }, usage_period: 'billing_period', hard_limit: 5000 })).toEqual({
      included: 1000,
      overage: { mode: 'per_unit', unit_price: '0.01' },
      usage_period: 'billing_period',
      hard_limit: 5000,
    });
  });

  it('refuses bad shapes naming the field', () => {
    invalid({ included: -1 }, 'config.included');
    invalid({ hard_limit: 0 }, 'config.hard_limit');
    invalid({ included: 10, hard_limit: 5 }, 'config.hard_limit');
    invalid({ usage_period: 'weekly' }, 'config.usage_period');
    invalid({ overage: 'cheap' }, 'config.overage');
    invalid({ overage: { mode: 'auction' } }, 'config.overage.mode');
    invalid({ overage: { mode: 'per_unit', unit_price: '-1' } }, 'config.overage.unit_price');
    invalid({ overage: { mode: 'per_unit', unit_price: '0.0000001' } }, 'config.overage.unit_price');
    invalid({ overage: { mode: 'per_unit', unit_price: 'one' } }, 'config.overage.unit_price');
    invalid({ overage: { mode: 'package', package_size: 0, package_price: '1' } }, 'config.overage.package_size');
    invalid({ overage: { mode: 'graduated', tiers: [] } }, 'config.overage.tiers');
    invalid({ overage: { mode: 'graduated', tiers: [{ up_to: 100, unit_price: '1' }, { up_to: 50, unit_price: '1' }, { up_to: null, unit_price: '1' }] } }, 'config.overage.tiers[1].up_to');
    invalid({ overage: { mode: 'graduated', tiers: [{ up_to: 100, unit_price: '1' }, { up_to: 100, unit_price: '1' }, { up_to: null, unit_price: '1' }] } }, 'config.overage.tiers[1].up_to');
    invalid({ overage: { mode: 'graduated', tiers: [{ up_to: null, unit_price: '1' }, { up_to: 100, unit_price: '1' }] } }, 'config.overage.tiers[0].up_to');
    invalid({ overage: { mode: 'graduated', tiers: [{ up_to: 100, unit_price: '1' }] } }, 'config.overage.tiers[0].up_to');
    invalid({ overage: { mode: 'graduated', tiers: [{ up_to: null, unit_price: '1', flat_price: '1.1234567' }] } }, 'config.overage.tiers[0].flat_price');
  });
});
