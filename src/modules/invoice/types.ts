// Records the invoice module hands to others (and takes from them): the invoice and its lines, the buyer as issued,
// list filters, a payment to record, and the transactions of the ledger (CONTRACT §6, §8, §9). Types only, so the
// service, the PDF, renewals and the payment seam can share them without importing one another.
import type { Selectable } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { InvoiceStatus, InvoiceTask } from './tables.ts';
import type { Company } from '../system/service.ts';

export type InvoiceRow = Selectable<Database['invoices']>;
/** One line of a usage period's overage invoice: its title and its amount in minor units, rounded once. */
export interface UsageLine {
  title: string;
  amount: number;
}

/** A usage period's overage to invoice (issueUsageInvoice): one line per meter billed, or a single line. */
export type UsageInvoice = { orderId: number; clientId: number } & ({ lines: readonly UsageLine[] } | UsageLine);

export interface InvoiceLine {
  /** Null for a line that buys no order (a `deposit`). */
  orderId: number | null;
  task: InvoiceTask;
  title: string;
  period: string | null;
  quantity: number;
  /** Unit price, minor units. */
  price: number;
  /** Line total, minor units. */
  total: number;
  /** For a `change` line: the plan the order moves to when the invoice is paid; for a `renew` line: the plan renewed. */
  productId?: number | null;
  /** For a `change` line: the credit taken off, and the end of the period it was priced for. */
  credit?: number;
  pricedUntil?: string | null;
}

/** CONTRACT §6 invoices: exactly these fields (the period is part of the title; it is stored for reports). */
export interface InvoiceItemRecord {
  title: string;
  order_id: number | null;
  task: InvoiceTask;
  quantity: number;
  price: string;
  total: string;
  /** Net credited of the line by credit notes. */
  credited: string;
  /** The rule that chose the line's rate (lib/eu-vat.ts TaxRule). */
  tax_rule: string;
}

/** Issue 26: what an EU sale's tax was decided on, stored on the invoice (JSON) when it is issued. */
export interface TaxEvidence {
  seller_country: string | null;
  /** The billing address's country, the IP's country (when a lookup is configured), the card's country (when known). */
  billing_country: string | null;
  ip_country: string | null;
  card_country: string | null;
  /** The country taxed in (lib/eu-vat.ts placeOfSupply), and whether a piece of evidence contradicted it. */
  place_of_supply: string | null;
  conflict: boolean;
  vat_number: string | null;
  /** What VIES had said of the number when the invoice was issued (or corrected). */
  vat_status: string;
  consultation_number: string | null;
  /** When a later VIES confirmation turned the invoice into a reverse-charge sale (vat-corrections.ts). */
  corrected_at: string | null;
}

/** The buyer as it was when the invoice was issued. */
export interface Buyer {
  name: string;
  email: string;
  company: string | null;
  address_1: string | null;
  address_2: string | null;
  city: string | null;
  state: string | null;
  postcode: string | null;
  country: string | null;
  vat_number: string | null;
}

export interface InvoiceRecord {
  id: number;
  hash: string;
  /** `<prefix><n>` once paid; null before (a proforma). */
  number: string | null;
  client_id: number;
  status: InvoiceStatus;
  currency: string;
  /** FOSSBilling's `currency_rate`: units of `currency` per unit of `currency_base` when the invoice was issued. */
  currency_rate: string | null;
  /** When that rate was set. */
  currency_rate_at: string | null;
  /** The default currency the rate was against. */
  currency_base: string | null;
  /** The seller (company settings) and buyer when the invoice was issued. */
  seller: Company | null;
  buyer: Buyer | null;
  /** Sum of the lines. */
  subtotal: string;
  /** The coupon's discount, taken off the subtotal before tax; `promocode` names the coupon. */
  discount: string;
  promocode: string | null;
  tax_name: string | null;
  /** Percent, e.g. "20"; "0" without tax. */
  tax_rate: string;
  tax: string;
  /** subtotal − discount + tax; with tax-inclusive prices subtotal − discount (the tax is inside it). */
  total: string;
  /** Issue 26: whether the prices included the tax, the rule that chose the rate, the reverse-charge mention, the evidence. */
  tax_inclusive: boolean;
  tax_rule: string;
  tax_note: string | null;
  tax_evidence: TaxEvidence | null;
  /** Paid of an unpaid invoice from the client's balance so far, and what is still due (total − credit_applied). */
  credit_applied: string;
  amount_due: string;
  due_at: string | null;
  paid_at: string | null;
  created_at: string;
  items: InvoiceItemRecord[];
  /** Credited by credit notes in all, and the notes (issue 24 item 8). */
  credited: string;
  credit_notes: Array<{ id: number; number: string; method: 'refund' | 'balance'; total: string; created_at: string }>;
  /** Staff lists only: the client's e-mail and name (null if the client no longer exists). */
  client_email?: string | null;
  client_name?: string | null;
}

export interface InvoiceFilters {
  status?: InvoiceStatus | undefined;
  client_id?: number | undefined;
  /** Staff only: the client's e-mail or name, the invoice number, or (digits) the invoice's id. */
  search?: string | undefined;
  /** Staff only: creation day range, inclusive. */
  date_from?: string | undefined;
  date_to?: string | undefined;
  page?: number | undefined;
  per_page?: number | undefined;
}

export interface PaymentInput {
  transactionId?: string | undefined;
  gatewayId?: number | undefined;
  /** Activate or renew the invoice's orders now (default true). */
  execute?: boolean | undefined;
}

/** A discount to take off an invoice's subtotal before tax, and the coupon code it comes from. */
export interface InvoiceDiscount {
  amount: number;
  code: string;
}

export type TransactionStatus = 'processed' | 'failed' | 'refunded' | 'error';

/** CONTRACT §9 transaction record. */
export interface TransactionRecord {
  id: number;
  invoice_id: number;
  /** The invoice's legal number once paid, null before: with invoice_id, what invoiceLabel names it by. */
  invoice_number: string | null;
  client_id: number | null;
  gateway: string | null;
  txn_id: string | null;
  type: 'payment' | 'refund';
  amount: string;
  currency: string;
  status: TransactionStatus;
  message: string | null;
  created_at: string;
}

export interface TransactionFilters {
  invoice_id?: number | undefined;
  client_id?: number | undefined;
  gateway?: string | undefined;
  status?: TransactionStatus | undefined;
  page?: number | undefined;
  per_page?: number | undefined;
}

/** An invoice as the payment module needs it to take money for it: what to charge, and the names to show the payer. */
export interface PayableInvoice {
  id: number;
  hash: string;
  /** The legal number once paid; null before (then the invoice is "Pro forma <id>"). */
  number: string | null;
  clientId: number;
  status: InvoiceStatus;
  /** What is still due in minor units: the total less what the balance has paid of it (`creditApplied`). */
  amount: number;
  total: number;
  creditApplied: number;
  currency: string;
}
