// Tables of the invoice module: invoices and their items, the payments and refunds recorded on them
// (transactions), and the tax rules. Only this module writes them.
// Money is integer minor units of the instance currency; JSON is text; times are ISO strings.
import type { ColumnType, Generated } from 'kysely';

export type InvoiceStatus = 'unpaid' | 'paid' | 'canceled' | 'refunded';
/** `change`: a plan upgrade (CONTRACT §8), applied when the invoice is paid. */
/** `usage`: a usage period's overage (CONTRACT §12); paying it runs nothing. */
/** `deposit`: a top-up of the client's balance (issue 24); paying it credits the wallet (credit/invoice-credits.ts). */
export type InvoiceTask = 'activate' | 'renew' | 'change' | 'usage' | 'deposit';

export interface InvoiceTable {
  id: Generated<number>;
  /** 32 random characters: the guest link to the invoice. */
  hash: string;
  client_id: number;
  status: InvoiceStatus;
  currency: string;
  subtotal: number;
  total: number;
  due_at: string | null;
  paid_at: string | null;
  created_at: string;
  updated_at: string;
  /** Migration 006: `<prefix><n>`, given when the invoice becomes paid; null before (a proforma). */
  number: string | null;
  /** Migration 006: JSON snapshots taken when the invoice was issued. */
  seller: string | null;
  buyer: string | null;
  tax_name: string | null;
  /** Thousandths of a percent. */
  tax_rate: Generated<number>;
  tax: Generated<number>;
  discount: Generated<number>;
  promo_code: string | null;
  /** Migration 050: the rule that chose the rate (lib/eu-vat.ts TaxRule); `manual` before it. */
  tax_rule: ColumnType<string, string | undefined, string>;
  /** Migration 050: 1 when `tax` was extracted from the prices (then total = subtotal − discount). */
  tax_inclusive: ColumnType<number, number | undefined, number>;
  /** Migration 050: JSON evidence of the buyer's country and VAT number at issue (TaxEvidence); null before. */
  tax_evidence: ColumnType<string | null, string | null | undefined, string | null>;
  /** Migration 039: what the client's balance has paid of the unpaid invoice so far; a gateway pays the rest. */
  credit_applied: Generated<number>;
  /** Migration 048: units of `currency` per unit of `currency_base` the invoice was issued at ("1" in the default). */
  currency_rate: string | null;
  /** Migration 048: when that rate was set (its row in currency_rates). */
  currency_rate_at: string | null;
  /** Migration 048: the default currency when the invoice was issued: the rate is against it. */
  currency_base: string | null;
}

export interface InvoiceItemTable {
  id: Generated<number>;
  invoice_id: number;
  /** Null once the order was deleted. */
  order_id: number | null;
  task: InvoiceTask;
  title: string;
  period: string | null;
  quantity: number;
  /** Unit price, minor units. */
  price: number;
  /** quantity × price (+ setup for activation), minor units. */
  total: number;
  /** 0/1: the task ran. */
  executed: number;
  /**
   * Migration 006. For a 'change' item: the plan the order moves to when the invoice is paid; for a 'renew' item:
   * the plan renewed.
   */
  product_id: number | null;
  /** Migration 017. For a 'change' item: the unused part of the current period taken off the new plan's price. */
  credit: Generated<number>;
  /** Migration 017. For a 'change' item: the end of the period its credit was computed for (the invoice lapses then). */
  priced_until: string | null;
  /** Migration 017. For an executed 'renew' or 'change' item: the order's expiry it bought. */
  covers_until: string | null;
  /** Migration 050: the rule that chose the line's rate (the invoice's, as one invoice has one buyer). */
  tax_rule: ColumnType<string, string | undefined, string>;
}

export interface TransactionTable {
  id: Generated<number>;
  invoice_id: number;
  gateway_id: number | null;
  /** The gateway's reference, if any. */
  transaction_id: string | null;
  /** Minor units, positive for payments and refunds alike. */
  amount: number;
  currency: string;
  /** `payment` or `refund` (CONTRACT §9). */
  type: string;
  /** The client the invoice belongs to (added by migration 007). */
  client_id: number | null;
  /** The gateway's code (`custom`, `stripe`), null when staff recorded it without one. */
  gateway: string | null;
  /** `processed` | `failed` | `refunded` | `error`. */
  status: Generated<string>;
  /** The provider's message (decline reason, mismatch), null when there is none. */
  message: string | null;
  created_at: string;
  /**
   * On a refund of a payment that was never applied (a late payment, refunded automatically): that payment's
   * transaction id. Null on the invoice's own refunds, which are the ones an invoice's refunded total counts (025).
   */
  refund_of: ColumnType<number | null, number | null | undefined, number | null>;
}

/** Migration 006: a tax rule; the buyer's country and state pick one. */
export interface TaxTable {
  id: Generated<number>;
  name: string;
  /** Thousandths of a percent: 20% = 20000. */
  rate: number;
  /** ISO 3166-1 alpha-2, or null for the rule that applies everywhere. */
  country: string | null;
  state: string | null;
  created_at: string;
  updated_at: string;
}

/** Migration 035: a credit note against one paid invoice (issue 24 item 8). */
export interface CreditNoteTable {
  id: Generated<number>;
  /** `<credit_note_prefix><n>`, gapless. */
  number: string;
  invoice_id: number;
  client_id: number;
  currency: string;
  /** `refund`: money went back; `balance`: credited to the client's balance. */
  method: 'refund' | 'balance';
  reason: string;
  /** Net, tax and total credited, minor units. */
  subtotal: number;
  tax: number;
  total: number;
  tax_name: string | null;
  tax_rate: Generated<number>;
  /** The refund transaction it documents (method `refund`). */
  transaction_id: number | null;
  staff_id: number | null;
  /** Unique: `refund:<transaction id>`, or `staff:<uuid>` for a staff request. */
  source_key: string;
  created_at: string;
}

/** Migration 035: what a credit note credits of one invoice line, net minor units. */
export interface CreditNoteLineTable {
  id: Generated<number>;
  credit_note_id: number;
  invoice_item_id: number;
  title: string;
  amount: number;
}

/** Migration 035: the counter row credit-note numbers are taken from. */
export interface CreditNoteSequenceTable {
  name: string;
  next_number: number;
}

export interface InvoiceTables {
  credit_notes: CreditNoteTable;
  credit_note_lines: CreditNoteLineTable;
  credit_note_sequence: CreditNoteSequenceTable;
  invoices: InvoiceTable;
  invoice_items: InvoiceItemTable;
  transactions: TransactionTable;
  taxes: TaxTable;
}
