// Tables of the currency module (migration 038): the instance's currencies and the history of their rates. Only this
// module writes them.
import type { Generated } from 'kysely';

export interface CurrencyTable {
  id: Generated<number>;
  code: string;
  /** 1 for the default currency (one at most: a partial unique index). */
  is_default: number;
  /** Canonical decimal string: units of this currency per unit of the default currency ("1" for the default). */
  conversion_rate: string;
  is_rate_manual: number;
  format_pattern: string | null;
  fraction_digits: number | null;
  rounding_step: number | null;
  rounding_ending: number | null;
  rate_updated_at: string;
  created_at: string;
  updated_at: string;
}

/** Every rate ever set, never updated: an invoice names the row (or its rate and moment) it converted at. */
export interface CurrencyRateTable {
  id: Generated<number>;
  code: string;
  rate: string;
  base_code: string;
  staff_id: number | null;
  created_at: string;
}

export interface CurrencyTables {
  currencies: CurrencyTable;
  currency_rates: CurrencyRateTable;
}
