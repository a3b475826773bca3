// One invoice as a document (CONTRACT §8), shared by the client, guest and staff pages: number (or proforma), the
// seller and the buyer as they were when it was issued, the lines, discount, tax and totals, and the PDF download.
import { html } from 'htm/preact';
import { invoiceFileName, invoiceLabel } from '../../../src/lib/invoice-label.ts';
import { formatDateTime, formatMoney, isZeroMoney } from './format.ts';
import { Badge, DefinitionList } from './ui.ts';
import { useCountryName } from './countries.ts';
import type { Invoice } from './types.ts';

type Party = Record<string, string | null | undefined> | null;

function PartyBlock({ title, party, id }: { title: string; party: Party; id: string }) {
  const country = useCountryName(party?.country);
  const lines = party === null ? [] : [
    party.name,
    party.company,
    party.address_1,
    party.address_2,
    party.address_3,
    [party.postcode, party.city, party.state].filter(Boolean).join(' '),
    country,
    party.email,
    party.vat_number ? `VAT ${party.vat_number}` : null,
  ].filter((line): line is string => typeof line === 'string' && line !== '');
  return html`<section class="party" aria-labelledby=${id}>
    <h3 id=${id}>${title}</h3>
    ${lines.length === 0 ? html`<p>—</p>` : html`<address>${lines.map((line) => html`${line}<br />`)}</address>`}
  </section>`;
}

/** The invoice's one name, as the server's mails and PDFs call it: "Invoice NWD-4" once paid, "Pro forma 12" before. */
export function invoiceTitle(invoice: Pick<Invoice, 'id' | 'number'>): string {
  return invoiceLabel(invoice);
}

/** A link's text for an invoice known only by id and, when paid, number (lists of payments, orders). */
export { invoiceLabel };

/** Where the invoice's PDF is: the guest action by hash works in every area without a CSRF token in the URL. */
export function pdfUrl(invoice: Pick<Invoice, 'hash'>): string {
  return `/api/guest/invoice/pdf?hash=${encodeURIComponent(invoice.hash)}`;
}

export function InvoiceDocument({ invoice, extra = [] }: { invoice: Invoice; extra?: readonly (readonly [string, unknown])[] }) {
  const money = (amount: string): string => formatMoney(amount, invoice.currency);
  return html`<section class="card" aria-labelledby="invoice-summary">
    <h2 id="invoice-summary">Summary</h2>
    <${DefinitionList}
      items=${[
        ['Status', html`<${Badge} status=${invoice.status} />`],
        ...extra,
        ['Total', money(invoice.total)],
        ['Issued', formatDateTime(invoice.created_at)],
        ['Due', formatDateTime(invoice.due_at)],
        ['Paid', formatDateTime(invoice.paid_at)],
      ]}
    />
    <div class="parties">
      <${PartyBlock} title="Seller" party=${invoice.seller as Party} id="invoice-seller" />
      <${PartyBlock} title="Bill to" party=${invoice.buyer as Party} id="invoice-buyer" />
    </div>
    <div class="table-wrap">
      <table>
        <caption class="sr-only">Invoice items</caption>
        <thead><tr><th scope="col">Item</th><th scope="col" class="num">Qty</th><th scope="col" class="num">Price</th><th scope="col" class="num">Total</th></tr></thead>
        <tbody>
          ${invoice.items.map(
            (item) => html`<tr><td>${item.title}${item.task === 'renew' ? ' (renewal)' : ''}</td><td class="num">${item.quantity}</td><td class="num">${money(item.price)}</td><td class="num">${money(item.total)}</td></tr>`,
          )}
        </tbody>
        <tfoot>
          <tr><th scope="row" colspan="3">Subtotal</th><td class="num">${money(invoice.subtotal)}</td></tr>
          ${isZeroMoney(invoice.discount)
            ? null
            : html`<tr><th scope="row" colspan="3">Discount${invoice.promocode ? ` (${invoice.promocode})` : ''}</th><td class="num">−${money(invoice.discount)}</td></tr>`}
          <tr><th scope="row" colspan="3">${invoice.tax_name ? `${invoice.tax_name} (${invoice.tax_rate}%)` : 'Tax'}</th><td class="num">${money(invoice.tax)}</td></tr>
          <tr><th scope="row" colspan="3">Total</th><td class="num"><strong>${money(invoice.total)}</strong></td></tr>
          ${isZeroMoney(invoice.credit_applied)
            ? null
            : html`<tr data-testid="credit-applied"><th scope="row" colspan="3">Paid from balance</th><td class="num">−${money(invoice.credit_applied)}</td></tr>`}
          ${isZeroMoney(invoice.credit_applied) || invoice.status !== 'unpaid'
            ? null
            : html`<tr data-testid="amount-due"><th scope="row" colspan="3">Amount due</th><td class="num"><strong>${money(invoice.amount_due)}</strong></td></tr>`}
        </tfoot>
      </table>
    </div>
    <p><a href=${pdfUrl(invoice)} download=${invoiceFileName(invoice)} class="button">Download PDF</a></p>
  </section>`;
}
