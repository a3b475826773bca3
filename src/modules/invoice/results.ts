// The invoice module's result schemas (CONTRACT §11): the invoice (InvoiceRecord), tax rules (TaxRecord),
// transactions (TransactionRecord), payment gateways and the start of a payment, as the services build them.
import { Type } from '@sinclair/typebox';
import { Money, Nullable, PageOf, Timestamp } from '../../platform/schemas.ts';

const Blank = () => Nullable(Type.String());

/** A percentage as a decimal string ("20", "7.25"); "0" without tax. */
const Percent = Type.String({ pattern: '^[0-9]+(\\.[0-9]+)?$', description: 'Percent as a decimal string' });

const InvoiceItem = Type.Object(
  {
    title: Type.String(),
    order_id: Nullable(Type.Integer()),
    task: Type.Union([Type.Literal('activate'), Type.Literal('renew'), Type.Literal('change'), Type.Literal('usage'), Type.Literal('deposit')], {
      description: 'What paying does to the order: activate it, renew it, or move it to another plan; usage: an overage line, paying changes nothing; deposit: a top-up, paying credits the balance',
    }),
    quantity: Type.Integer(),
    price: Money,
    total: Money,
    credited: Type.String({ ...Money, description: 'Net credited of the line by credit notes' }),
  },
  { $id: 'InvoiceItem' },
);

/** The seller (company settings) as it was when the invoice was issued. */
const InvoiceSeller = Type.Object(
  {
    name: Blank(),
    email: Blank(),
    address_1: Blank(),
    address_2: Blank(),
    address_3: Blank(),
    city: Blank(),
    postcode: Blank(),
    country: Blank(),
    vat_number: Blank(),
    logo_url: Blank(),
  },
  { $id: 'InvoiceSeller' },
);

/** The buyer as it was when the invoice was issued. */
const InvoiceBuyer = Type.Object(
  {
    name: Type.String(),
    email: Type.String(),
    company: Blank(),
    address_1: Blank(),
    address_2: Blank(),
    city: Blank(),
    state: Blank(),
    postcode: Blank(),
    country: Blank(),
    vat_number: Blank(),
  },
  { $id: 'InvoiceBuyer' },
);

export const Invoice = Type.Object(
  {
    id: Type.Integer(),
    hash: Type.String({ description: 'Opens the invoice as a guest (guest/invoice/get)' }),
    number: Nullable(Type.String({ description: '`<prefix><n>` once paid; null before (a proforma)' })),
    client_id: Type.Integer(),
    status: Type.Union([Type.Literal('unpaid'), Type.Literal('paid'), Type.Literal('canceled'), Type.Literal('refunded')]),
    currency: Type.String(),
    currency_rate: Nullable(Type.String({ description: 'Units of `currency` per unit of `currency_base` when issued ("1" in the default), stored once' })),
    currency_rate_at: Nullable(Timestamp),
    currency_base: Nullable(Type.String({ description: 'The default currency the rate is against' })),
    seller: Nullable(InvoiceSeller),
    buyer: Nullable(InvoiceBuyer),
    subtotal: Type.String({ ...Money, description: 'Sum of the lines' }),
    discount: Type.String({ ...Money, description: "The coupon's discount, taken off before tax" }),
    promocode: Nullable(Type.String()),
    tax_name: Nullable(Type.String()),
    tax_rate: Percent,
    tax: Money,
    total: Type.String({ ...Money, description: 'subtotal − discount + tax' }),
    due_at: Nullable(Timestamp),
    paid_at: Nullable(Timestamp),
    created_at: Timestamp,
    items: Type.Array(InvoiceItem),
    credited: Type.String({ ...Money, description: 'Credited by credit notes in all (refunds and credit to the balance)' }),
    credit_notes: Type.Array(
      Type.Object({
        id: Type.Integer(),
        number: Type.String(),
        method: Type.Union([Type.Literal('refund'), Type.Literal('balance')]),
        total: Money,
        created_at: Timestamp,
      }),
      { description: "The invoice's credit notes, oldest first" },
    ),
  },
  { $id: 'Invoice' },
);

export const TaxRule = Type.Object(
  {
    id: Type.Integer(),
    name: Type.String(),
    rate: Percent,
    country: Nullable(Type.String({ description: 'ISO 3166-1 alpha-2; null: every country' })),
    state: Nullable(Type.String({ description: 'null: the whole country' })),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'TaxRule' },
);

export const Transaction = Type.Object(
  {
    id: Type.Integer(),
    invoice_id: Type.Integer(),
    invoice_number: Nullable(Type.String({ description: "The invoice's number once paid; null before (a pro forma)" })),
    client_id: Nullable(Type.Integer()),
    gateway: Nullable(Type.String({ description: 'The gateway code' })),
    txn_id: Nullable(Type.String({ description: "The provider's or staff's reference" })),
    type: Type.Union([Type.Literal('payment'), Type.Literal('refund')]),
    amount: Money,
    currency: Type.String(),
    status: Type.Union([Type.Literal('processed'), Type.Literal('failed'), Type.Literal('refunded'), Type.Literal('error')]),
    message: Nullable(Type.String()),
    created_at: Timestamp,
  },
  { $id: 'Transaction' },
);

export const Gateway = Type.Object(
  {
    id: Type.Integer(),
    code: Type.String({ description: '`custom` (manual) or `stripe`' }),
    title: Type.String(),
    instructions: Nullable(Type.String({ description: 'What to do to pay (manual gateway)' })),
  },
  { $id: 'Gateway' },
);

export const PaymentStart = Type.Union(
  [
    Type.Object({ redirect_url: Type.String({ description: "The provider's payment page" }) }),
    Type.Object({ instructions: Nullable(Type.String({ description: 'What to do to pay (manual gateway)' })) }),
  ],
  { $id: 'PaymentStart' },
);

/** An invoice as staff read it in a list: the record and whose it is (admin/invoice/get_list). */
export const StaffInvoiceListItem = Type.Object(
  { ...Invoice.properties, client_email: Nullable(Type.String()), client_name: Nullable(Type.String()) },
  { $id: 'StaffInvoiceListItem' },
);

export const StaffInvoicePage = PageOf(StaffInvoiceListItem);
