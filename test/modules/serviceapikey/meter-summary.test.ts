// meterSummaries (issue 23 item 4): each meter's figures for a period, priced the way the close bills them.
import { describe, expect, it } from 'vitest';
import { moneyFor } from '../../../src/lib/money.ts';
import { normalizeMeters } from '../../../src/modules/serviceapikey/usage/meters-config.ts';
import { meterSummaries } from '../../../src/modules/serviceapikey/usage/meter-summary.ts';

describe('meterSummaries', () => {
  const money = moneyFor('USD');
  const meters = normalizeMeters([
    { code: 'tokens', name: 'Tokens', unit: 'token', aggregation: 'sum', included: 1_000_000, overage: { mode: 'graduated', tiers: [{ up_to: 1_000_000, unit_price: '0.000002' }, { up_to: null, unit_price: '0.000001' }] } },
    { code: 'requests', name: 'Requests', unit: 'request', aggregation: 'count', hard_limit: 50_000 },
    { code: 'users', name: 'Users', unit: 'user', aggregation: 'unique_count', property: 'user', included: 100, overage: { mode: 'per_unit', unit_price: '0.10' } },
  ]) ?? [];

  it('prices each meter beyond its included units; a meter without overage has a null amount; missing quantities are 0', () => {
    const figures = meterSummaries(money, meters, new Map([['tokens', 2_500_000], ['users', 103]]));
    expect(figures).toEqual([
      { code: 'tokens', name: 'Tokens', unit: 'token', aggregation: 'sum', used: 2_500_000, included: 1_000_000, overage_units: 1_500_000, overage_amount: '2.50', hard_limit: null },
      { code: 'requests', name: 'Requests', unit: 'request', aggregation: 'count', used: 0, included: null, overage_units: 0, overage_amount: null, hard_limit: 50_000 },
      { code: 'users', name: 'Users', unit: 'user', aggregation: 'unique_count', used: 103, included: 100, overage_units: 3, overage_amount: '0.30', hard_limit: null },
    ]);
  });
});
