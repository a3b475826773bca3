// Result schemas of the currency module's actions (CONTRACT §11).
import { Type } from '@sinclair/typebox';
import { Money, Nullable, Timestamp } from '../../platform/schemas.ts';

/** An exchange rate: an exact decimal string, never a float. */
export const Rate = Type.String({ pattern: '^[0-9]+(\\.[0-9]+)?$' });

export const CurrencyResult = Type.Object({
  code: Type.String({ pattern: '^[A-Z]{3}$' }),
  name: Type.String(),
  symbol: Type.String(),
  conversion_rate: Rate,
  is_rate_manual: Type.Boolean(),
  format_pattern: Nullable(Type.String()),
  fraction_digits: Nullable(Type.Integer({ minimum: 0, maximum: 6 })),
  default: Type.Boolean(),
  minor_unit: Type.Integer({ minimum: 0 }),
  price_rounding: Nullable(Type.Object({ step: Money, ending: Money })),
  rate_updated_at: Timestamp,
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const RateResult = Type.Object({
  id: Type.Integer(),
  code: Type.String(),
  rate: Rate,
  base_code: Type.String(),
  staff_id: Nullable(Type.Integer()),
  created_at: Timestamp,
});

/** {code: name} (the instance's currencies) or {code: "CODE (Name)"} (every ISO 4217 one). */
export const Pairs = Type.Record(Type.String(), Type.String());
