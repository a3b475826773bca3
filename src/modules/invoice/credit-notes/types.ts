// Records of credit notes (issue 24 item 8), as the actions answer them and the PDF draws them.
import type { Buyer } from '../types.ts';
import type { Company } from '../../system/service.ts';

export type CreditNoteMethod = 'refund' | 'balance';

export interface CreditNoteLineRecord {
  /** The invoice line's index in the invoice's `items` (from 0). */
  item: number;
  title: string;
  /** Net credited of that line. */
  amount: string;
}

export interface CreditNoteRecord {
  id: number;
  number: string;
  invoice_id: number;
  invoice_number: string | null;
  client_id: number;
  currency: string;
  method: CreditNoteMethod;
  reason: string;
  subtotal: string;
  tax_name: string | null;
  tax_rate: string;
  tax: string;
  total: string;
  transaction_id: number | null;
  created_at: string;
  lines: CreditNoteLineRecord[];
}

/** A credit note with the parties of its invoice, for the PDF. */
export interface CreditNoteDocument extends CreditNoteRecord {
  seller: Company | null;
  buyer: Buyer | null;
}

/** admin/invoice/credit_note_create, parsed: net amounts in minor units (null: all that is left of the line). */
export interface CreditNoteRequest {
  invoiceId: number;
  reason: string;
  lines: Array<{ item: number; amount: number | null }> | null;
  /** A gross amount instead of lines; neither: everything left. */
  amount: number | null;
  staffId: number | null;
  /** The caller's own key, so a retried request makes one note; without one every request is new. */
  key: string | null;
}

export interface CreditNoteFilters {
  invoice_id?: number | undefined;
  client_id?: number | undefined;
  page?: number | undefined;
  per_page?: number | undefined;
}

/** What an invoice record shows of its credit notes. */
export interface InvoiceCredit {
  /** Gross credited in all, minor units. */
  total: number;
  notes: Array<{ id: number; number: string; method: CreditNoteMethod; total: number; created_at: string }>;
  /** Net credited of each invoice line, by the line's row id. */
  byItem: Map<number, number>;
}
