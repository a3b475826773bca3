// Result schemas of the balance actions.
import { Type } from '@sinclair/typebox';
import { Money, Nullable, Timestamp } from '../../platform/schemas.ts';

export const CreditKindSchema = Type.Union(
  [Type.Literal('top_up'), Type.Literal('grant'), Type.Literal('consume'), Type.Literal('expire'), Type.Literal('refund'), Type.Literal('adjust')],
  {
    description:
      'top_up: a paid top-up invoice; grant: promotional credit (spent first, may expire); consume: spent (an invoice paid from the balance); expire: what was left of a grant at its expiry; refund: a refund moving money into or out of the balance; adjust: staff, with a reason (balance_delete writes one that reverses a line)',
  },
);

/** One ledger line: FOSSBilling's {id, description, amount, currency, created_at}, plus where it came from. */
export const BalanceLine = Type.Object(
  {
    id: Type.Integer(),
    client_id: Type.Integer(),
    type: CreditKindSchema,
    description: Type.String(),
    amount: Money,
    currency: Type.String(),
    expires_at: Nullable(Timestamp),
    invoice_id: Nullable(Type.Integer()),
    staff_id: Nullable(Type.Integer()),
    reverses_id: Nullable(Type.Integer({ description: 'The line this compensating adjust reverses (balance_delete)' })),
    reversed_by: Nullable(Type.Integer({ description: 'The compensating adjust that reversed this line, if one did' })),
    created_at: Timestamp,
  },
  { $id: 'BalanceLine' },
);
