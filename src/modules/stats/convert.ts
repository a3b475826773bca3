// The one place amounts in several currencies become one figure. The dashboard itself never converts: it answers
// every money figure per currency. FOSSBilling's Stats actions answer one number (FOSSBilling sums `base_income`, the
// amount at the rate of the day), so they call this function, which today keeps the default currency's amounts and
// leaves the others out (no rate is applied yet). Issue 26 turns it into a conversion at the stored rates; nothing
// else changes then (docs/dashboard.md, "Currencies").

export interface CurrencyAmount {
  currency: string;
  /** Minor units. */
  amount: number;
}

/** The amounts as one total in `defaultCurrency`'s minor units. */
export function inDefaultCurrency(amounts: readonly CurrencyAmount[], defaultCurrency: string): number {
  return amounts.reduce((sum, row) => (row.currency === defaultCurrency ? sum + row.amount : sum), 0);
}
