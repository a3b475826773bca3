// Result schemas of the EU VAT actions (issue 26): a client's VIES check, a member state's rate, the OSS report.
import { Type } from '@sinclair/typebox';
import { Money, Nullable, Timestamp } from '../../platform/schemas.ts';

const Percent = Type.String({ pattern: '^[0-9]+(\\.[0-9]+)?$', description: 'Percent as a decimal string' });

export const VatCheck = Type.Object(
  {
    vat_number: Nullable(Type.String()),
    status: Type.Union(['none', 'not_applicable', 'unchecked', 'pending', 'valid', 'invalid'].map((status) => Type.Literal(status)), {
      description: 'none: no number; not_applicable: not an EU number; unchecked: not asked yet; pending: VIES did not answer yet (retried); valid or invalid: what VIES said',
    }),
    consultation_number: Nullable(Type.String({ description: "VIES's requestIdentifier: the proof of the check" })),
    checked_at: Nullable(Timestamp),
    name: Nullable(Type.String()),
    address: Nullable(Type.String()),
    last_error: Nullable(Type.String({ description: 'Why the last attempt got no answer' })),
    attempts: Type.Integer(),
    updated_at: Nullable(Timestamp),
  },
  { $id: 'VatCheck' },
);

export const VatRate = Type.Object(
  {
    country: Type.String(),
    name: Type.String(),
    rate: Percent,
    standard_rate: Type.String({ ...Percent, description: 'The standard rate Tollgate ships (1 January 2026)' }),
    updated_at: Timestamp,
  },
  { $id: 'VatRate' },
);

export const OssReport = Type.Object(
  {
    quarter: Type.String(),
    from: Timestamp,
    to: Type.String({ format: 'date-time', description: 'Exclusive' }),
    lines: Type.Array(
      Type.Object({
        country: Type.String(),
        rate: Percent,
        currency: Type.String(),
        net: Money,
        vat: Money,
        invoices: Type.Integer({ description: 'Paid invoices of the quarter in this line' }),
        credit_notes: Type.Integer({ description: 'Credit notes of the quarter subtracted' }),
      }),
    ),
  },
  { $id: 'OssReport' },
);
