// The arithmetic of credit notes (issue 24 item 8), on integer minor units with half-up rounding (BigInt inside
// fractionOf, so no floating point). Pure: no I/O.
//
// An invoice is lines (net totals t_i), a discount D taken off their sum S, and a tax T on the rest B = S − D. Each line's
// creditable base is its total less its share of the discount (shared by size, largest remainder first), so the bases
// add up to B exactly. Tax is credited cumulatively: after credit notes crediting a net N in all, the tax credited in
// all is round(N × T / B); each note takes the difference from the notes before it. So each note's tax is its
// proportional share, rounding never makes the notes' tax add up to more than T, and crediting everything credits
// exactly T.
import { fractionOf } from './rates.ts';

/** `total` shared among `weights` in proportion, largest remainder first (ties: the earlier); parts add up to `total`. */
export function shareByWeight(total: number, weights: readonly number[]): number[] {
  const sum = weights.reduce((a, b) => a + b, 0);
  if (sum <= 0 || total <= 0) return weights.map(() => 0);
  const parts = weights.map((weight) => Math.floor(Number((BigInt(total) * BigInt(weight)) / BigInt(sum))));
  const rests = weights.map((weight, index) => ({ index, rest: Number((BigInt(total) * BigInt(weight)) % BigInt(sum)) }));
  let left = total - parts.reduce((a, b) => a + b, 0);
  for (const { index } of rests.filter((entry) => entry.rest > 0).toSorted((a, b) => b.rest - a.rest || a.index - b.index)) {
    if (left === 0) break;
    parts[index]! += 1;
    left -= 1;
  }
  return parts;
}

/** Each line's creditable base: its total less its share of the discount. */
export function lineBases(totals: readonly number[], discount: number): number[] {
  const shares = shareByWeight(Math.min(discount, totals.reduce((a, b) => a + b, 0)), totals);
  return totals.map((total, index) => total - shares[index]!);
}

/** What the invoice's tax, as credited so far, is: `tax` in proportion to the net credited of `base`. */
export function taxCredited(net: number, base: number, tax: number): number {
  return base <= 0 ? 0 : fractionOf(tax, Math.min(net, base), base);
}

/** The state of an invoice's credit: its totals and what the notes before credited (net per line, and tax). */
export interface CreditState {
  /** Each line's creditable base (lineBases). */
  bases: readonly number[];
  /** Net credited so far of each line. */
  credited: readonly number[];
  /** The invoice's tax, and the tax credited so far. */
  tax: number;
  taxCredited: number;
}

export interface CreditSplit {
  /** Net credited of each line by this note. */
  lines: number[];
  net: number;
  tax: number;
  total: number;
}

const sum = (values: readonly number[]): number => values.reduce((a, b) => a + b, 0);

/** What is left to credit, gross (net left plus tax left). */
export function leftToCredit(state: CreditState): number {
  return sum(state.bases) - sum(state.credited) + state.tax - state.taxCredited;
}

/**
 * A note crediting `amounts` net of each line (each no more than what is left of it: the caller checks) and the
 * cumulative share of the tax.
 */
export function splitByLines(state: CreditState, amounts: readonly number[]): CreditSplit {
  const base = sum(state.bases);
  const net = sum(amounts);
  const tax = taxCredited(sum(state.credited) + net, base, state.tax) - state.taxCredited;
  return { lines: [...amounts], net, tax: Math.max(0, tax), total: net + Math.max(0, tax) };
}

/**
 * A note for a gross `amount` (a refund of money: it names no lines), no more than leftToCredit: the net part is the
 * cumulative proportion of the gross credited, kept within what is left of net and of tax so the two add up to
 * `amount` exactly; the net is shared among the lines by what is left of each.
 */
export function splitByAmount(state: CreditState, amount: number): CreditSplit {
  const base = sum(state.bases);
  const creditedNet = sum(state.credited);
  const gross = base + state.tax;
  const creditedGross = creditedNet + state.taxCredited;
  const netLeft = base - creditedNet;
  const taxLeft = state.tax - state.taxCredited;
  let net = gross <= 0 ? 0 : fractionOf(base, creditedGross + amount, gross) - creditedNet;
  net = Math.min(Math.max(net, amount - taxLeft, 0), amount, netLeft);
  const left = state.bases.map((lineBase, index) => lineBase - state.credited[index]!);
  const lines = shareByWeight(net, left);
  return { lines, net, tax: amount - net, total: amount };
}
