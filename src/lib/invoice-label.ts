// The one name of an invoice, shared by the server (mails, PDFs, exports, the card gateway's line) and the web UI
// (src/lib is imported by web/ too). A paid invoice is called by its legal number ("Invoice NWD-4"); before payment
// it has none, and is called "Pro forma 12" — never "Invoice #12", which reads like a number it does not have
// (CONTRACT §14). Pure: no I/O, no imports.

export interface NamedInvoice {
  id: number;
  /** `<prefix><n>`, given at payment; null before. */
  number: string | null;
}

/** "Invoice NWD-4" once numbered, "Pro forma 12" before: what every person reads. */
export function invoiceLabel(invoice: NamedInvoice): string {
  return invoice.number !== null && invoice.number !== '' ? `Invoice ${invoice.number}` : `Pro forma ${invoice.id}`;
}

/** The invoice's PDF file name: `NWD-4.pdf` once numbered, `proforma-12.pdf` before. */
export function invoiceFileName(invoice: NamedInvoice): string {
  return `${invoice.number !== null && invoice.number !== '' ? invoice.number : `proforma-${invoice.id}`}.pdf`;
}

/** The reference to quote on a payment: the number once there is one, else the pro forma label. */
export function invoiceReference(invoice: NamedInvoice): string {
  return invoice.number !== null && invoice.number !== '' ? invoice.number : `Pro forma ${invoice.id}`;
}
