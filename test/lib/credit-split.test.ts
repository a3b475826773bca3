// The arithmetic of credit notes (src/lib/credit-split.ts): exact examples of proportional tax and its rounding, and
// seeded random sequences of notes (by lines and by amount, mixed) that never credit more than a line, the tax or
// the invoice, and credit the invoice exactly once everything is credited.
import { describe, expect, it } from 'vitest';
import { leftToCredit, lineBases, shareByWeight, splitByAmount, splitByLines, taxCredited, type CreditState } from '../../src/lib/credit-split.ts';
import { percentOf } from '../../src/lib/rates.ts';

function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4294967296;
  };
}

const sum = (values: readonly number[]): number => values.reduce((a, b) => a + b, 0);

describe('credit-note arithmetic', () => {
  it('shares by weight with the largest remainder first, adding up exactly', () => {
    expect(shareByWeight(100, [1, 1, 1])).toEqual([34, 33, 33]);
    expect(shareByWeight(10, [3, 0, 7])).toEqual([3, 0, 7]);
    expect(shareByWeight(0, [3, 4])).toEqual([0, 0]);
    expect(shareByWeight(5, [0, 0])).toEqual([0, 0]);
    // A discount shared by line size: bases add up to subtotal − discount.
    expect(lineBases([1000, 500], 300)).toEqual([800, 400]);
    expect(sum(lineBases([333, 333, 334], 100))).toBe(900);
  });

  it('takes the tax in proportion, rounded half up on the running total', () => {
    // 10.00 at 7.25 % = 0.725 → 0.73 of tax; credited as 3.33, 3.33 and 3.34.
    const tax = percentOf(1000, 7250);
    expect(tax).toBe(73);
    let state: CreditState = { bases: [1000], credited: [0], tax, taxCredited: 0 };
    const taxes: number[] = [];
    for (const amount of [333, 333, 334]) {
      const split = splitByLines(state, [amount]);
      taxes.push(split.tax);
      state = { ...state, credited: [state.credited[0]! + amount], taxCredited: state.taxCredited + split.tax };
    }
    // round(3.33 × 0.073) = 0.24, round(6.66 × …) = 0.49 → 0.25, then the rest 0.24: 0.73 in all.
    expect(taxes).toEqual([24, 25, 24]);
    expect(taxCredited(500, 1000, 73)).toBe(37);
    expect(leftToCredit(state)).toBe(0);
  });

  it('splits a gross amount into net and tax that add up to it exactly', () => {
    const state: CreditState = { bases: [800, 400], credited: [0, 0], tax: 240, taxCredited: 0 };
    expect(splitByAmount(state, 1440)).toEqual({ lines: [800, 400], net: 1200, tax: 240, total: 1440 });
    const part = splitByAmount(state, 1);
    expect(part.net + part.tax).toBe(1);
    expect(splitByAmount(state, 600)).toEqual({ lines: [333, 167], net: 500, tax: 100, total: 600 });
  });

  it('never credits more than a line, the tax or the invoice, over random sequences of notes', () => {
    const next = random(20261126);
    const int = (max: number): number => Math.floor(next() * (max + 1));
    for (let run = 0; run < 1500; run += 1) {
      const totals = Array.from({ length: 1 + int(4) }, () => int(100_000));
      const subtotal = sum(totals);
      const discount = int(3) === 0 ? int(subtotal) : 0;
      const bases = lineBases(totals, discount);
      const rate = [0, 7250, 19000, 20000, 33333][int(4)]!;
      const tax = percentOf(subtotal - discount, rate);
      let state: CreditState = { bases, credited: bases.map(() => 0), tax, taxCredited: 0 };
      for (let step = 0; step < 8 && leftToCredit(state) > 0; step += 1) {
        const left = leftToCredit(state);
        const byAmount = int(1) === 0;
        const split = byAmount
          ? splitByAmount(state, 1 + int(left - 1))
          : splitByLines(
              state,
              bases.map((base, index) => int(base - state.credited[index]!)),
            );
        expect(split.total).toBe(split.net + split.tax);
        expect(split.net).toBe(sum(split.lines));
        expect(split.tax).toBeGreaterThanOrEqual(0);
        expect(split.total).toBeLessThanOrEqual(left);
        const credited = state.credited.map((value, index) => value + split.lines[index]!);
        credited.forEach((value, index) => expect(value).toBeLessThanOrEqual(bases[index]!));
        state = { ...state, credited, taxCredited: state.taxCredited + split.tax };
        expect(state.taxCredited).toBeLessThanOrEqual(tax);
      }
      // Whatever was credited before, crediting all that is left comes to the invoice's total exactly.
      if (leftToCredit(state) > 0) {
        const rest = splitByLines(
          state,
          bases.map((base, index) => base - state.credited[index]!),
        );
        expect(rest.total).toBe(leftToCredit(state));
      }
    }
  });
});
