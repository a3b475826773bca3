// The `pricing` parameter of admin/product/update, typed (CONTRACT §4: `{type, once: {price, setup}, recurrent:
// {"<period>": {price, setup, enabled}}}`) so the OpenAPI document and the clients generated from it know its shape,
// and a misspelt key (`tpye`) is refused with a 422 naming it rather than silently ignored. Amounts and period codes
// are still read by parsePricing (pricing.ts), which knows the currency's decimals and the period grammar.
import { Type } from '@sinclair/typebox';

/** An amount: a decimal string ("10.00") or a number (10.5); parseMoney reads both, digit by digit. */
const Amount = Type.Union([Type.String({ maxLength: 40 }), Type.Number()], { description: 'A decimal amount, e.g. "10.00"' });

const PeriodPrice = Type.Object(
  {
    price: Type.Optional(Amount),
    setup: Type.Optional(Amount),
    enabled: Type.Optional(Type.Boolean({ description: 'Whether buyers may choose this period (default true)' })),
  },
  { additionalProperties: false },
);

/** Own prices in another currency: only what they cost; which periods are offered is the default pricing's. */
const Pair = Type.Object({ price: Type.Optional(Amount), setup: Type.Optional(Amount) }, { additionalProperties: false });
const CurrencyPrice = Type.Object(
  { once: Type.Optional(Type.Union([Pair, Type.Null()])), recurrent: Type.Optional(Type.Union([Type.Record(Type.String({ maxLength: 8 }), Pair), Type.Null()])) },
  { additionalProperties: false },
);

export const PricingParam = Type.Object(
  {
    prices: Type.Optional(
      Type.Record(Type.String({ maxLength: 3 }), CurrencyPrice, {
        description: 'Currency code → own prices in it (amounts in its decimals); replaces the stored map, {} removes them all',
      }),
    ),
    type: Type.Optional(Type.Union([Type.Literal('free'), Type.Literal('once'), Type.Literal('recurrent')])),
    once: Type.Optional(Type.Object({ price: Type.Optional(Amount), setup: Type.Optional(Amount) }, { additionalProperties: false })),
    recurrent: Type.Optional(
      Type.Record(Type.String({ maxLength: 8 }), PeriodPrice, { description: 'Period code (1-90D, 1-52W, 1-24M, 1-5Y) → price, setup fee and whether it is offered' }),
    ),
  },
  { additionalProperties: false, description: 'Parts left out keep their stored value; unknown keys are refused' },
);
