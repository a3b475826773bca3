// The prepaid check's arithmetic (check/credit-state.ts): where the balance runs out in uses, for each price mode of
// the calls meter, checked against pricing every count one by one; the floor in minor units; the projected balance.
import { describe, expect, it } from 'vitest';
import { callsCost, drawAtOf, floorMinor, freeOf, meterAllowanceOf, orderCreditOf, projectedBalance, rollCredit, stopAtOf } from '../../../src/modules/serviceapikey/check/credit-state.ts';
import type { OverageRule } from '../../../src/lib/usage-pricing.ts';
import type { UsagePlan } from '../../../src/modules/serviceapikey/usage/usage-plan.ts';

const RULES: Array<[string, OverageRule]> = [
  ['per_unit', { mode: 'per_unit', unit_price: '0.013' }],
  ['package', { mode: 'package', package_size: 7, package_price: '0.25' }],
  ['graduated', { mode: 'graduated', tiers: [{ up_to: 10, unit_price: '0.05', flat_price: '0.10' }, { up_to: null, unit_price: '0.02' }] }],
];

/** The fewest uses whose cost beyond `drawn` takes `balance` to `floor`, by trying every count. */
function slowStopAt(plan: Pick<UsagePlan, 'included' | 'overage'>, balance: number, floor: number, drawn: number): number {
  if (balance <= floor) return 0;
  for (let uses = 0; uses < 100_000; uses++) if (balance - (callsCost(plan, uses, 2) - drawn) <= floor) return uses;
  return Number.POSITIVE_INFINITY;
}

describe('stopAt', () => {
  for (const [name, overage] of RULES) {
    it(`matches pricing each count (${name})`, () => {
      for (const included of [0, 3, 50]) {
        for (const [balance, floor, drawn] of [
          [100, 0, 0],
          [37, -20, 0],
          [5, 0, 40],
          [0, 0, 0],
          [-3, -5, 10],
          [1, 0, 0],
        ] as const) {
          const plan = { included, overage };
          expect(stopAtOf(plan, balance, floor, drawn, 2), `${name} included ${included} balance ${balance} floor ${floor} drawn ${drawn}`).toBe(slowStopAt(plan, balance, floor, drawn));
        }
      }
    });
  }

  it('is never reached by calls without a price, and at once at or below the floor', () => {
    expect(stopAtOf({ included: 0, overage: null }, 100, 0, 0, 2)).toBe(Number.POSITIVE_INFINITY);
    expect(stopAtOf({ included: 0, overage: null }, 0, 0, 0, 2)).toBe(0);
    expect(stopAtOf({ included: 0, overage: null }, -5, -5, 0, 2)).toBe(0);
    // A price that rounds to nothing never exhausts the balance by calls.
    expect(stopAtOf({ included: 0, overage: { mode: 'per_unit', unit_price: '0' } }, 100, 0, 0, 2)).toBe(Number.POSITIVE_INFINITY);
  });

  it('at the floor lets through the calls the plan includes while its meters cost nothing (a trial, a free tier)', () => {
    const plan = { included: 3, overage: { mode: 'per_unit' as const, unit_price: '0.10' } };
    // Three included calls, nothing drawn: the fourth use would cost, so three are let through.
    expect(stopAtOf(plan, 0, 0, 0, 2, true)).toBe(3);
    expect(stopAtOf(plan, -5, -5, 0, 2, true)).toBe(3);
    // Calls drew 20 already (five uses): they stop at once, as before.
    expect(stopAtOf(plan, 0, 0, 20, 2, true)).toBe(5);
    // Not free: at once.
    expect(stopAtOf(plan, 0, 0, 0, 2, false)).toBe(0);
    // Calls without a price never stop a free order.
    expect(stopAtOf({ included: 0, overage: null }, 0, 0, 0, 2, true)).toBe(Number.POSITIVE_INFINITY);
    // Above the floor `free` changes nothing.
    expect(stopAtOf(plan, 100, 0, 0, 2, true)).toBe(stopAtOf(plan, 100, 0, 0, 2));
  });

  it("is free only while every priced meter includes units and none has drawn", () => {
    const priced = { mode: 'per_unit' as const, unit_price: '0.001' };
    expect(meterAllowanceOf([])).toBe(true);
    expect(meterAllowanceOf([{ included: 50_000, overage: priced }, { included: 0, overage: null }])).toBe(true);
    expect(meterAllowanceOf([{ included: null, overage: priced }])).toBe(true);
    expect(meterAllowanceOf([{ included: 0, overage: priced }])).toBe(false);
    expect(freeOf(true, 0)).toBe(true);
    expect(freeOf(true, 1)).toBe(false);
    expect(freeOf(false, 0)).toBe(false);
  });
});

describe('drawAt', () => {
  it('is halfway from the uses now to stopAt, rounded up; never when stopAt is not ahead', () => {
    expect(drawAtOf(0, 10)).toBe(5);
    expect(drawAtOf(4, 9)).toBe(7);
    expect(drawAtOf(8, 9)).toBe(9);
    expect(drawAtOf(9, 9)).toBe(Number.POSITIVE_INFINITY);
    expect(drawAtOf(12, 9)).toBe(Number.POSITIVE_INFINITY);
    expect(drawAtOf(0, Number.POSITIVE_INFINITY)).toBe(Number.POSITIVE_INFINITY);
  });
});

describe('the floor and the projected balance', () => {
  it('converts allow_negative micro-units to minor units toward zero (never a looser floor)', () => {
    expect(floorMinor(-5_000_000n, 2)).toBe(-500);
    expect(floorMinor(-5_009_999n, 2)).toBe(-500);
    expect(floorMinor(-4_999n, 2)).toBe(0);
    expect(floorMinor(0n, 2)).toBe(0);
    expect(floorMinor(-5_000_000n, 0)).toBe(-5);
    expect(floorMinor(-1_234_567n, 3)).toBe(-1234);
  });

  it('projects the unflushed uses and starts the next period from nothing drawn', () => {
    const plan = { period: 'calendar_month' as const, included: 2, overage: { mode: 'per_unit' as const, unit_price: '0.10' }, hardLimit: null, prepaidFloorMicros: -500_000n };
    const credit = orderCreditOf(7, plan, [], { balance: 100, callsDrawn: 30, metersDrawn: 0 }, 2, 0)!;
    expect(credit).toMatchObject({ clientId: 7, floor: -50, balance: 100, callsDrawn: 30 });
    // 5 uses: 3 beyond included cost 30, all drawn; 7 uses cost 50, 20 not drawn yet.
    expect(projectedBalance(credit, 5)).toBe(100);
    expect(projectedBalance(credit, 7)).toBe(80);
    // 100 + 50 above the floor, plus the 30 drawn: 180 = 18 uses beyond the 2 included.
    expect(credit.stopAt).toBe(20);
    rollCredit(credit);
    expect(credit).toMatchObject({ callsDrawn: 0, readAt: 0, stopAt: 17 });
    expect(orderCreditOf(7, plan, [], { balance: 100, callsDrawn: 30, metersDrawn: 0 }, 2, 0, 4)?.drawAt).toBe(12);
    expect(orderCreditOf(7, { ...plan, prepaidFloorMicros: null }, [], { balance: 0, callsDrawn: 0, metersDrawn: 0 }, 2, 0)).toBeNull();
  });
});
