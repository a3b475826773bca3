// A credit note as a PDF: number, the invoice it credits, seller and buyer (as on that invoice), reason, lines, tax
// and totals, drawn with pdfkit's built-in Helvetica like the invoice. Pure: record in, bytes out.
import type { CreditNoteDocument } from './types.ts';

const LEFT = 50;
const RIGHT = 545;

function partyLines(party: Record<string, unknown> | null, fields: readonly string[]): string[] {
  if (party === null) return [];
  return fields.map((field) => party[field]).filter((value): value is string => typeof value === 'string' && value !== '');
}

export async function renderCreditNotePdf(note: CreditNoteDocument): Promise<Buffer> {
  // Loaded on first use, as the invoice's: pdfkit takes ~150 ms to load.
  const { default: PDFDocument } = await import('pdfkit');
  return new Promise((resolve, reject) => {
    const doc = new PDFDocument({ size: 'A4', margin: 50, info: { Title: `Credit note ${note.number}`, Author: note.seller?.name ?? '' } });
    const chunks: Buffer[] = [];
    doc.on('data', (chunk: Buffer) => chunks.push(chunk));
    doc.on('end', () => resolve(Buffer.concat(chunks)));
    doc.on('error', reject);

    const amount = (text: string): string => `${text} ${note.currency}`;
    doc.font('Helvetica-Bold').fontSize(20).text(`Credit note ${note.number}`, LEFT, 50);
    doc.font('Helvetica').fontSize(10).text(`Credits invoice ${note.invoice_number ?? `#${note.invoice_id}`}`);
    doc.text(`Issued: ${note.created_at.slice(0, 10)}`);
    doc.text(note.method === 'balance' ? 'Credited to the account balance' : 'Refunded to the payer');
    doc.text(`Reason: ${note.reason}`, { width: RIGHT - LEFT });

    const top = Math.max(doc.y + 20, 160);
    const seller = note.seller as unknown as Record<string, unknown> | null;
    doc.font('Helvetica-Bold').text('Seller', LEFT, top);
    doc.font('Helvetica').text(partyLines(seller, ['name', 'address_1', 'address_2', 'address_3', 'city', 'country', 'vat_number']).join('\n'), LEFT, top + 14, { width: 230 });
    const buyer = note.buyer as unknown as Record<string, unknown> | null;
    doc.font('Helvetica-Bold').text('Credited to', 310, top);
    doc.font('Helvetica').text(partyLines(buyer, ['name', 'company', 'address_1', 'address_2', 'city', 'country', 'email', 'vat_number']).join('\n'), 310, top + 14, { width: 235 });

    let y = Math.max(doc.y, top + 100) + 20;
    const row = (label: string, value: string, bold = false): void => {
      doc.font(bold ? 'Helvetica-Bold' : 'Helvetica');
      doc.text(label, LEFT, y, { width: 380 });
      const height = doc.y - y;
      doc.text(value, 440, y, { width: 105, align: 'right' });
      y += Math.max(height, 14) + 4;
    };
    row('Item', 'Credited', true);
    doc.moveTo(LEFT, y - 2).lineTo(RIGHT, y - 2).stroke();
    for (const line of note.lines) row(line.title, amount(line.amount));
    doc.moveTo(LEFT, y).lineTo(RIGHT, y).stroke();
    y += 6;
    row('Subtotal', amount(note.subtotal));
    row(note.tax_name === null ? 'Tax' : `${note.tax_name} (${note.tax_rate}%)`, amount(note.tax));
    row('Total credited', amount(note.total), true);
    doc.end();
  });
}
