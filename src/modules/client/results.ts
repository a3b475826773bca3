// The client module's result schemas (CONTRACT §11): a client record as admin/client/get and get_list answer it
// (ClientRecord in service.ts), and what a login answers.
import { Type } from '@sinclair/typebox';
import { Nullable, Timestamp } from '../../platform/schemas.ts';

const Blank = (description?: string) => Nullable(Type.String(description === undefined ? {} : { description }));

export const Client = Type.Object(
  {
    id: Type.Integer(),
    email: Type.String(),
    first_name: Type.String(),
    last_name: Blank(),
    company: Blank(),
    phone: Blank('E.164 when the country is known'),
    address_1: Blank(),
    address_2: Blank(),
    city: Blank(),
    state: Blank(),
    postcode: Blank(),
    country: Blank('ISO 3166-1 alpha-2'),
    currency: Blank('ISO 4217'),
    vat_number: Blank('Shown on invoices'),
    tax_exempt: Type.Boolean({ description: 'Invoices carry no tax' }),
    status: Type.Union([Type.Literal('active'), Type.Literal('suspended'), Type.Literal('canceled')]),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'Client' },
);

/** What a successful login answers (client or staff). */
export const LoginResult = (role: 'client' | 'admin') =>
  Type.Object({ id: Type.Integer(), email: Type.String(), name: Type.String(), role: Type.Literal(role) });
