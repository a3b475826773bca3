// What the close bills per meter (close-lines.ts): the same figures get_info projects (meterSummaries), the lines in
// order (calls first, then the plan's meters, only those with an amount) and their titles.
import { describe, expect, it } from 'vitest';
import { moneyFor } from '../../../src/lib/money.ts';
import { normalizeMeters } from '../../../src/modules/serviceapikey/usage/meters-config.ts';
import { meterSummaries } from '../../../src/modules/serviceapikey/usage/meter-summary.ts';
import { billMeter, invoiceLines, usageLineTitle } from '../../../src/modules/serviceapikey/usage/close-lines.ts';

const money = moneyFor('USD');
const meters =
  normalizeMeters([
    { code: 'tokens', name: 'Tokens', unit: 'tokens', aggregation: 'sum', included: 1000, overage: { mode: 'volume', tiers: [{ up_to: 5000, unit_price: '0.0015' }, { up_to: null, unit_price: '0.001' }] } },
    { code: 'requests', name: 'Requests', unit: 'requests', aggregation: 'count', included: 10, overage: { mode: 'package', package_size: 7, package_price: '0.333333' } },
    { code: 'storage', name: 'Storage', unit: 'GB', aggregation: 'max', included: 5 },
    { code: 'seats', name: 'Seats', unit: 'seats', aggregation: 'latest', included: 0, overage: { mode: 'graduated', tiers: [{ up_to: 3, unit_price: '1.005', flat_price: '0.5' }, { up_to: null, unit_price: '0.25' }] } },
  ]) ?? [];

describe('billMeter', () => {
  it('bills what meterSummaries projects, in minor units, for any quantity', () => {
    for (let used = 0; used < 12_000; used += 37) {
      const quantities = new Map(meters.map((meter) => [meter.code, used]));
      const projected = meterSummaries(money, meters, quantities);
      meters.forEach((meter, index) => {
        const billed = billMeter(meter, used, money.precision);
        const summary = projected[index]!;
        expect([billed.used, billed.included, billed.overage_units]).toEqual([summary.used, summary.included, summary.overage_units]);
        expect(money.format(billed.amount)).toBe(summary.overage_amount ?? '0.00');
      });
    }
  });

  it('rounds half-up once per meter', () => {
    // 3 seats: the first tier's flat 0.50 and 3 × 1.005 = 3.015: 3.515, billed 3.52 (3 × 1.01 + 0.50 would be 3.53).
    expect(billMeter(meters[3]!, 3, 2).amount).toBe(352);
    // 4 extra requests: one started package of 0.333333, billed 0.33.
    expect(billMeter(meters[1]!, 14, 2).amount).toBe(33);
  });
});

describe('the invoice lines', () => {
  const calls = billMeter({ code: 'calls', name: 'Calls', unit: 'calls', aggregation: 'count', included: 100, overage: { mode: 'per_unit', unit_price: '0.01' } }, 150, 2);
  const billed = meters.map((meter) => billMeter(meter, 2000, 2));

  it('calls first, then the meters in the plan\'s order, only those with an amount', () => {
    expect(invoiceLines('AI API', '2026-11-01T00:00:00Z', '2026-12-01T00:00:00Z', calls, billed)).toEqual([
      { title: 'AI API — usage 2026-11-01 to 2026-11-30: 50 calls over the 100 included', amount: 50 },
      // Volume: 1,000 beyond, all at the first tier's 0.0015. Seats: 3.515 in the first tier, 1,997 × 0.25: 502.765.
      { title: 'AI API — usage 2026-11-01 to 2026-11-30: 1,000 tokens over the 1,000 included', amount: 150 },
      { title: 'AI API — usage 2026-11-01 to 2026-11-30: 1,990 requests over the 10 included', amount: 9500 },
      { title: 'AI API — usage 2026-11-01 to 2026-11-30: 2,000 seats over the 0 included', amount: 50_277 },
    ]);
    // Nothing beyond anywhere: no lines.
    const within = billMeter({ code: 'calls', name: 'Calls', unit: 'calls', aggregation: 'count', included: 100, overage: { mode: 'per_unit', unit_price: '0.01' } }, 100, 2);
    expect(invoiceLines('AI API', '2026-11-01T00:00:00Z', '2026-12-01T00:00:00Z', within, [billMeter(meters[2]!, 900, 2)])).toEqual([]);
  });

  it('names the meter when its name is not its unit, and keeps titles within 255 characters', () => {
    expect(usageLineTitle('AI API', '2026-11-01T00:00:00Z', '2026-12-01T00:00:00Z', 2_500_000, 1_000_000, { name: 'Large-model tokens', unit: 'tokens' })).toBe(
      'AI API — Large-model tokens, usage 2026-11-01 to 2026-11-30: 2,500,000 tokens over the 1,000,000 included',
    );
    // A billing period ending mid-day ends on the day of its last second.
    expect(usageLineTitle('Pro', '2027-01-10T14:23:05Z', '2027-02-10T14:23:05Z', 2, null)).toBe('Pro — usage 2027-01-10 to 2027-02-10: 2 calls over the 0 included');
    const long = usageLineTitle('A'.repeat(255), '2026-11-01T00:00:00Z', '2026-12-01T00:00:00Z', 5, 10, { name: 'N'.repeat(100), unit: 'u'.repeat(100) });
    expect(long.length).toBe(255);
    const shortened = usageLineTitle('B'.repeat(250), '2026-11-01T00:00:00Z', '2026-12-01T00:00:00Z', 5, 10);
    expect(shortened.length).toBeLessThanOrEqual(255);
    expect(shortened).toMatch(/^B+… — usage 2026-11-01 to 2026-11-30: 5 calls over the 10 included$/);
  });
});
