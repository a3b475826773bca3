// A stored currency as the API shows it: FOSSBilling's `toApiArray` fields (code, name, symbol, conversion_rate,
// is_rate_manual, format_pattern, fraction_digits, default) and Tollgate's own (minor_unit, price_rounding, times).
import { formatMoney, parseMoney, precisionOf } from '../../lib/money.ts';
import { isoCurrency } from '../../lib/iso-4217.ts';
import type { PriceRounding } from '../../lib/exchange.ts';
import type { CurrencyTable } from './tables.ts';

type CurrencyRow = Omit<CurrencyTable, 'id'> & { id: number };

export interface CurrencyRecord {
  code: string;
  name: string;
  symbol: string;
  /** Units of this currency per unit of the default one, as an exact decimal string ("0.92"; "1" for the default). */
  conversion_rate: string;
  is_rate_manual: boolean;
  format_pattern: string | null;
  /** A display override of the decimals (0–6); null shows the minor unit's. */
  fraction_digits: number | null;
  default: boolean;
  /** ISO 4217 decimals: what amounts in this currency are counted in. */
  minor_unit: number;
  /** The ending converted prices are rounded up to, as amounts in this currency; null for none. */
  price_rounding: { step: string; ending: string } | null;
  rate_updated_at: string;
  created_at: string;
  updated_at: string;
}

/** Name, symbol and minor unit of a code: ISO 4217's, or for a code it lacks (an old CURRENCY setting) the code itself. */
export function describeCode(code: string): { name: string; symbol: string; minorUnit: number } {
  const iso = isoCurrency(code);
  return iso ?? { name: code, symbol: code, minorUnit: precisionOf(code) };
}

export function roundingOf(row: Pick<CurrencyTable, 'rounding_step' | 'rounding_ending'>): PriceRounding | null {
  return row.rounding_step === null || row.rounding_ending === null ? null : { step: row.rounding_step, ending: row.rounding_ending };
}

export function toRecord(row: CurrencyRow): CurrencyRecord {
  const { name, symbol, minorUnit } = describeCode(row.code);
  const rounding = roundingOf(row);
  return {
    code: row.code,
    name,
    symbol,
    conversion_rate: row.conversion_rate,
    is_rate_manual: row.is_rate_manual === 1,
    format_pattern: row.format_pattern,
    fraction_digits: row.fraction_digits,
    default: row.is_default === 1,
    minor_unit: minorUnit,
    price_rounding: rounding === null ? null : { step: formatMoney(rounding.step, minorUnit), ending: formatMoney(rounding.ending, minorUnit) },
    rate_updated_at: row.rate_updated_at,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** A record's price rounding back in minor units, as the conversion helper takes it. */
export function roundingOfRecord(record: CurrencyRecord): PriceRounding | null {
  if (record.price_rounding === null) return null;
  return { step: parseMoney(record.price_rounding.step, 'price_rounding.step', record.minor_unit), ending: parseMoney(record.price_rounding.ending, 'price_rounding.ending', record.minor_unit) };
}
