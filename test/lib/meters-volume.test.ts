// The `volume` overage mode (issue 23 item 1): the whole overage quantity priced at the tier it reaches, against
// hand-computed values, and its validation on a meter (and its refusal on the top-level `calls` overage).
import { describe, expect, it } from 'vitest';
import { overageMicros, overageMinor, type OverageRule } from '../../src/lib/usage-pricing.ts';
import { normalizeOverage } from '../../src/modules/serviceapikey/usage/overage-rules.ts';
import { normalizeUsageOptions } from '../../src/modules/serviceapikey/usage/usage-plan.ts';

const volume: OverageRule = {
  mode: 'volume',
  tiers: [
    { up_to: 1000, unit_price: '0.01' },
    { up_to: 5000, unit_price: '0.008', flat_price: '2' },
    { up_to: null, unit_price: '0.005' },
  ],
};

describe('volume overage pricing', () => {
  it('prices every unit at the first tier while the quantity stays in it, its top included', () => {
    expect(overageMinor(volume, 1, 2)).toBe(1); // 1 × 0.01
    expect(overageMinor(volume, 999, 2)).toBe(999); // 9.99
    expect(overageMinor(volume, 1000, 2)).toBe(1000); // 10.00
  });

  it('prices every unit at the tier reached, with that tier flat price once, not tier by tier', () => {
    // 1001 × 0.008 = 8.008 + 2 = 10.008 → 10.01 (graduated would give 10 + 0.008 + 2 = 12.008)
    expect(overageMinor(volume, 1001, 2)).toBe(1001);
    // 5000 × 0.008 + 2 = 42
    expect(overageMinor(volume, 5000, 2)).toBe(4200);
    // 5001 × 0.005 = 25.005 → 25.01 (the cheaper last tier now prices all of them; no flat price there)
    expect(overageMinor(volume, 5001, 2)).toBe(2501);
    expect(overageMicros(volume, 5001)).toBe(25_005_000n);
    // 10^9 × 0.005 = 5,000,000.00
    expect(overageMinor(volume, 1_000_000_000, 2)).toBe(500_000_000);
  });

  it('charges nothing for no overage, and a single unbounded tier is a unit price', () => {
    expect(overageMinor(volume, 0, 2)).toBe(0);
    expect(overageMinor({ mode: 'volume', tiers: [{ up_to: null, unit_price: '0.0015', flat_price: '0.5' }] }, 3, 2)).toBe(50); // 0.0045 + 0.5 → 0.50
    expect(overageMinor({ mode: 'volume', tiers: [{ up_to: null, unit_price: '0.0015' }] }, 3, 3)).toBe(5); // 0.0045 → 0.005 half-up
  });
});

describe('volume overage validation', () => {
  const invalid = (value: unknown, param: string, volumeAllowed = true) => {
    expect(() => normalizeOverage(value, 'config.meters[0].overage', { volume: volumeAllowed })).toThrow(expect.objectContaining({ message: expect.stringContaining(param) }));
  };

  it('normalises volume tiers as graduated ones on a meter', () => {
    expect(normalizeOverage({ mode: 'volume', tiers: [{ up_to: '100', unit_price: '0.50' }, { up_to: null, unit_price: 0.25, flat_price: '1.000' }] }, 'x', { volume: true })).toEqual({
      mode: 'volume',
      tiers: [
        { up_to: 100, unit_price: '0.5' },
        { up_to: null, unit_price: '0.25', flat_price: '1' },
      ],
    });
  });

  it('refuses bad volume tiers naming the field', () => {
    invalid({ mode: 'volume', tiers: [] }, 'config.meters[0].overage.tiers');
    invalid({ mode: 'volume' }, 'config.meters[0].overage.tiers');
    invalid({ mode: 'volume', tiers: [{ up_to: 10, unit_price: '1' }] }, 'config.meters[0].overage.tiers[0].up_to');
    invalid({ mode: 'volume', tiers: [{ up_to: 10, unit_price: '1' }, { up_to: 5, unit_price: '1' }, { up_to: null, unit_price: '1' }] }, 'config.meters[0].overage.tiers[1].up_to');
    invalid({ mode: 'volume', tiers: [{ up_to: null, unit_price: '-1' }] }, 'config.meters[0].overage.tiers[0].unit_price');
    invalid({ mode: 'auction' }, 'config.meters[0].overage.mode');
  });

  it('keeps the top-level calls overage to the three modes of CONTRACT §12', () => {
    invalid({ mode: 'volume', tiers: [{ up_to: null, unit_price: '1' }] }, 'config.meters[0].overage.mode', false);
    expect(() => normalizeUsageOptions({ included: 10, overage: { mode: 'volume', tiers: [{ up_to: null, unit_price: '1' }] } })).toThrow(expect.objectContaining({ message: expect.stringContaining('config.overage.mode') }));
  });
});
