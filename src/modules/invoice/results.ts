// The invoice record's result schema (CONTRACT §6 "invoices", §8, §11): what admin/invoice/get_list answers for each
// invoice.
import { Type } from '@sinclair/typebox';
import { Money, Nullable, PageOf, Timestamp } from '../../http/result-schemas.ts';

const Text = Type.String();
const MaybeText = Type.Optional(Nullable(Text));

/** The seller and buyer as they were at issue: snapshots, so a field added later may be absent from older ones. */
const Party = Nullable(
  Type.Object({
    name: MaybeText,
    email: MaybeText,
    company: MaybeText,
    address_1: MaybeText,
    address_2: MaybeText,
    address_3: MaybeText,
    city: MaybeText,
    state: MaybeText,
    postcode: MaybeText,
    country: MaybeText,
    vat_number: MaybeText,
    logo_url: MaybeText,
  }),
);

const Item = Type.Object({
  title: Text,
  order_id: Nullable(Type.Integer()),
  task: Type.Union([Type.Literal('activate'), Type.Literal('renew'), Type.Literal('change')]),
  quantity: Type.Integer(),
  price: Money,
  total: Money,
});

/** An invoice as staff read it in a list: the record and whose it is. */
export const StaffInvoiceListItem = Type.Object({
  id: Type.Integer(),
  hash: Text,
  number: Nullable(Text),
  client_id: Type.Integer(),
  status: Type.Union([Type.Literal('unpaid'), Type.Literal('paid'), Type.Literal('canceled'), Type.Literal('refunded')]),
  currency: Text,
  seller: Party,
  buyer: Party,
  subtotal: Money,
  discount: Money,
  promocode: Nullable(Text),
  tax_name: Nullable(Text),
  tax_rate: Type.String({ pattern: '^[0-9]+(\\.[0-9]+)?$' }),
  tax: Money,
  total: Money,
  due_at: Nullable(Timestamp),
  paid_at: Nullable(Timestamp),
  created_at: Timestamp,
  items: Type.Array(Item),
  client_email: Nullable(Text),
  client_name: Nullable(Text),
});

export const StaffInvoicePage = PageOf(StaffInvoiceListItem);
