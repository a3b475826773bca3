// The burn-down order of prepaid credit (issue 24): a debit takes from the credit that expires soonest, then from
// promotional credit before paid credit, then from the oldest. Pure, so the property test can drive it directly.

/** A credit with something left of it. `expiresAt` is an ISO 8601 instant (fixed width, so text order is time order). */
export interface Lot {
  id: number;
  remaining: number;
  promotional: boolean;
  expiresAt: string | null;
}

export interface Allocation {
  lotId: number;
  amount: number;
}

/** Negative when `a` is spent before `b`. */
export function spendFirst(a: Lot, b: Lot): number {
  if (a.expiresAt !== b.expiresAt) {
    if (a.expiresAt === null) return 1;
    if (b.expiresAt === null) return -1;
    return a.expiresAt < b.expiresAt ? -1 : 1;
  }
  if (a.promotional !== b.promotional) return a.promotional ? -1 : 1;
  return a.id - b.id;
}

/**
 * What a debit of `amount` (> 0 minor units) takes from each lot, in burn-down order; null when the lots hold less.
 * `first`, when given, is spent before every other lot (a compensating adjust takes back what is left of the credit it
 * reverses first).
 */
export function allocate(lots: readonly Lot[], amount: number, first?: number): Allocation[] | null {
  const ordered = lots.filter((lot) => lot.remaining > 0).toSorted((a, b) => (a.id === first ? -1 : b.id === first ? 1 : spendFirst(a, b)));
  const out: Allocation[] = [];
  let left = amount;
  for (const lot of ordered) {
    if (left === 0) break;
    const take = Math.min(lot.remaining, left);
    out.push({ lotId: lot.id, amount: take });
    left -= take;
  }
  return left === 0 ? out : null;
}
