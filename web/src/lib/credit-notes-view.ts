// An invoice's credit notes (issue 24 item 8), shown to staff and to the client under the invoice: what was credited,
// each note's number, how it was settled, its total, and its PDF. The PDF is a small form posting the session's CSRF
// token (as the CSV exports do), so the browser saves the file itself and the token never lands in a URL.
import { html } from 'htm/preact';
import { readCookie } from './api.ts';
import { formatDateTime, formatMoney } from './format.ts';
import type { Invoice } from './types.ts';

/** The note's PDF download, for `area`'s own action (admin or client). */
export function CreditNotePdfButton({ area, note }: { area: 'admin' | 'client'; note: { id: number; number: string } }) {
  return html`<form class="inline-export" method="post" action=${`/api/${area}/invoice/credit_note_pdf`} aria-label=${`Credit note ${note.number} PDF`}>
    <input type="hidden" name="CSRFToken" value=${readCookie('csrf_token')} />
    <input type="hidden" name="id" value=${String(note.id)} />
    <button type="submit">Download ${note.number} (PDF)</button>
  </form>`;
}

export function CreditNotesList({ invoice, area }: { invoice: Invoice; area: 'admin' | 'client' }) {
  if (invoice.credit_notes.length === 0) return null;
  const money = (amount: string): string => formatMoney(amount, invoice.currency);
  return html`<section class="card" aria-labelledby="invoice-credit-notes">
    <h2 id="invoice-credit-notes">Credit notes</h2>
    <p>Credited so far: <strong>${money(invoice.credited)}</strong> of ${money(invoice.total)}.</p>
    <div class="table-wrap">
      <table>
        <caption class="sr-only">Credit notes of this invoice</caption>
        <thead><tr><th scope="col">Number</th><th scope="col">Settled</th><th scope="col">Issued</th><th scope="col" class="num">Total</th><th scope="col">PDF</th></tr></thead>
        <tbody>
          ${invoice.credit_notes.map(
            (note) => html`<tr>
              <td>${note.number}</td>
              <td>${note.method === 'balance' ? 'Credited to the account balance' : 'Refunded'}</td>
              <td>${formatDateTime(note.created_at)}</td>
              <td class="num">${money(note.total)}</td>
              <td><${CreditNotePdfButton} area=${area} note=${note} /></td>
            </tr>`,
          )}
        </tbody>
      </table>
    </div>
  </section>`;
}
