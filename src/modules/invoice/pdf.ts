// The invoice as a PDF (CONTRACT §8): seller, buyer (each with its VAT number), number (or "Proforma" before
// payment), lines, discount, tax, totals, status and the reverse-charge mention (issue 26), drawn with pdfkit's
// built-in Helvetica so no font file is needed. Pure: record in, bytes out.
import { invoiceLabel } from '../../lib/invoice-label.ts';
import type { InvoiceRecord } from './types.ts';

const LEFT = 50;
const RIGHT = 545;

function addressLines(party: Record<string, unknown> | null, fields: readonly string[]): string[] {
  if (party === null) return [];
  return fields.map((field) => party[field]).filter((value): value is string => typeof value === 'string' && value !== '');
}

export async function renderInvoicePdf(invoice: InvoiceRecord): Promise<Buffer> {
  // Loaded on the first PDF: pdfkit and its fonts take ~150 ms to load, too much for every start (issue 13).
  const { default: PDFDocument } = await import('pdfkit');
  return new Promise((resolve, reject) => {
    const doc = new PDFDocument({ size: 'A4', margin: 50, info: { Title: invoiceLabel(invoice), Author: invoice.seller?.name ?? '' } });
    const chunks: Buffer[] = [];
    doc.on('data', (chunk: Buffer) => chunks.push(chunk));
    doc.on('end', () => resolve(Buffer.concat(chunks)));
    doc.on('error', reject);

    const money = (amount: string): string => `${amount} ${invoice.currency}`;
    doc.font('Helvetica-Bold').fontSize(20).text(invoiceLabel(invoice), LEFT, 50);
    doc.font('Helvetica').fontSize(10).text(`Status: ${invoice.status}`);
    doc.text(`Issued: ${invoice.created_at.slice(0, 10)}`);
    if (invoice.due_at !== null) doc.text(`Due: ${invoice.due_at.slice(0, 10)}`);
    if (invoice.paid_at !== null) doc.text(`Paid: ${invoice.paid_at.slice(0, 10)}`);
    if (invoice.number === null) doc.text('Pro forma: the invoice number is given on payment');

    const top = 160;
    const seller = invoice.seller as unknown as Record<string, unknown> | null;
    const sellerLines = [
      ...addressLines(seller, ['name', 'address_1', 'address_2', 'address_3']),
      [seller?.postcode, seller?.city].filter((part) => typeof part === 'string' && part !== '').join(' '),
      ...addressLines(seller, ['country', 'email']),
      ...(typeof seller?.vat_number === 'string' ? [`VAT: ${seller.vat_number}`] : []),
    ].filter((line) => line !== '');
    doc.font('Helvetica-Bold').text('Seller', LEFT, top);
    doc.font('Helvetica').text(sellerLines.join('\n'), LEFT, top + 14, { width: 230 });

    const buyer = invoice.buyer as unknown as Record<string, unknown> | null;
    const buyerLines = [
      ...addressLines(buyer, ['name', 'company', 'address_1', 'address_2']),
      [buyer?.postcode, buyer?.city, buyer?.state].filter((part) => typeof part === 'string' && part !== '').join(' '),
      ...addressLines(buyer, ['country', 'email']),
      ...(typeof buyer?.vat_number === 'string' ? [`VAT: ${buyer.vat_number}`] : []),
    ].filter((line) => line !== '');
    doc.font('Helvetica-Bold').text('Bill to', 310, top);
    doc.font('Helvetica').text(buyerLines.join('\n'), 310, top + 14, { width: 235 });

    let y = Math.max(doc.y, top + 110) + 20;
    const row = (cells: [string, string, string, string], bold = false): void => {
      doc.font(bold ? 'Helvetica-Bold' : 'Helvetica');
      doc.text(cells[0], LEFT, y, { width: 270 });
      const height = doc.y - y;
      doc.text(cells[1], 330, y, { width: 40, align: 'right' });
      doc.text(cells[2], 380, y, { width: 75, align: 'right' });
      doc.text(cells[3], 460, y, { width: 85, align: 'right' });
      y += Math.max(height, 14) + 4;
    };
    row(['Item', 'Qty', 'Price', 'Total'], true);
    doc.moveTo(LEFT, y - 2).lineTo(RIGHT, y - 2).stroke();
    for (const item of invoice.items) row([item.title, String(item.quantity), item.price, money(item.total)]);
    doc.moveTo(LEFT, y).lineTo(RIGHT, y).stroke();
    y += 6;
    const total = (label: string, amount: string, bold = false): void => row([label, '', '', amount], bold);
    total('Subtotal', money(invoice.subtotal));
    if (/[1-9]/.test(invoice.discount)) {
      total(`Discount${invoice.promocode === null ? '' : ` (${invoice.promocode})`}`, money(`-${invoice.discount}`));
    }
    total(invoice.tax_name === null ? 'Tax' : `${invoice.tax_name} (${invoice.tax_rate}%)`, money(invoice.tax));
    total('Total', money(invoice.total), true);
    // Part paid from the client's balance (pay_with_credits with an amount): what it paid, and what is still due.
    if (/[1-9]/.test(invoice.credit_applied)) {
      total('Paid from balance', money(`-${invoice.credit_applied}`));
      if (invoice.status === 'unpaid') total('Amount due', money(invoice.amount_due), true);
    }
    // Issue 26: what the tax line means, and the mention a reverse-charged invoice must carry (Article 226(11a)).
    const notes = [
      ...(invoice.tax_inclusive ? [`Prices include ${invoice.tax_name ?? 'tax'}: the tax shown is part of the total.`] : []),
      ...(invoice.tax_note === null ? [] : [invoice.tax_note]),
    ];
    if (notes.length > 0) doc.font('Helvetica').text(notes.join('\n'), LEFT, y + 10, { width: RIGHT - LEFT });
    doc.end();
  });
}
