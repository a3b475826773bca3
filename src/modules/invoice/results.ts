// The invoice module's result schemas (CONTRACT §11): the invoice (InvoiceRecord), tax rules (TaxRecord),
// transactions (TransactionRecord), payment gateways and the start of a payment, as the services build them.
import { Type } from '@sinclair/typebox';
import { Money, Nullable, PageOf, Timestamp } from '../../platform/schemas.ts';

const Blank = () => Nullable(Type.String());

/** A percentage as a decimal string ("20", "7.25"); "0" without tax. */
const Percent = Type.String({ pattern: '^[0-9]+(\\.[0-9]+)?$', description: 'Percent as a decimal string' });

/** The rule that chose a rate (issue 26, docs/eu-vat.md). */
const TaxRuleName = Type.Union(
  ['domestic', 'reverse_charge', 'oss', 'export', 'manual', 'exempt', 'untaxed'].map((rule) => Type.Literal(rule)),
  { description: "domestic: the seller's rate; reverse_charge: 0%, the buyer accounts for the VAT; oss: the buyer's EU country's rate; export: no EU VAT; manual: the tax rules by country; exempt: a tax-exempt client; untaxed: a top-up" },
);

/** What an EU sale's tax was decided on. */
const TaxEvidence = Type.Object(
  {
    seller_country: Nullable(Type.String()),
    billing_country: Nullable(Type.String()),
    ip_country: Nullable(Type.String()),
    card_country: Nullable(Type.String()),
    place_of_supply: Nullable(Type.String({ description: 'The country taxed in: the billing country (docs/eu-vat.md)' })),
    conflict: Type.Boolean({ description: 'Another piece of evidence named another country' }),
    vat_number: Nullable(Type.String()),
    vat_status: Type.String({ description: 'What VIES had said of the number: valid, invalid, pending, unchecked or none' }),
    consultation_number: Nullable(Type.String()),
    corrected_at: Nullable(Timestamp),
  },
  { $id: 'TaxEvidence' },
);

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
    tax_rule: TaxRuleName,
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
    total: Type.String({ ...Money, description: 'subtotal − discount + tax; with tax_inclusive, subtotal − discount (the tax is inside it)' }),
    tax_inclusive: Type.Boolean({ description: 'The prices included the tax: it was extracted from them' }),
    tax_rule: TaxRuleName,
    tax_note: Nullable(Type.String({ description: 'The reverse-charge mention, when it applies' })),
    tax_evidence: Nullable(TaxEvidence),
    credit_applied: Type.String({ ...Money, description: "Paid from the client's balance (pay_with_credits with an amount); a card pays the rest" }),
    amount_due: Type.String({ ...Money, description: 'What is still to pay: total − credit_applied while unpaid, else 0' }),
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
