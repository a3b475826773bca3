// The staff form that credits a paid invoice to the client's balance (admin/invoice/credit_note_create): a reason and,
// per line, the net amount to credit (left empty: nothing of that line). With every amount empty the note credits all
// that is left. What is left of each line is shown beside it, and the server refuses anything more (422).
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { call, type Params } from '../lib/api.ts';
import { formatMoney } from '../lib/format.ts';
import { Button, ErrorMessage, Field, FormError, Notice, useAction } from '../lib/ui.ts';
import type { Invoice } from '../lib/types.ts';

/** "12.30" − "2.05" on decimal strings, in minor units (the invoice's amounts have the currency's decimals). */
function leftOf(total: string, credited: string): string {
  const decimals = total.split('.')[1]?.length ?? 0;
  const minor = (text: string): number => Math.round(Number(text) * 10 ** decimals);
  return ((minor(total) - minor(credited)) / 10 ** decimals).toFixed(decimals);
}

export function CreditNoteForm({ invoice, onDone }: { invoice: Invoice; onDone: () => void }) {
  const [reason, setReason] = useState('');
  const [amounts, setAmounts] = useState<Record<number, string>>({});
  const [done, setDone] = useState<string | null>(null);
  const action = useAction();
  // Nothing left to credit (or not paid): no form.
  if (invoice.status !== 'paid' || Number(leftOf(invoice.total, invoice.credited)) <= 0) return null;
  const money = (amount: string): string => formatMoney(amount, invoice.currency);
  const submit = (event: Event): void => {
    event.preventDefault();
    setDone(null);
    const lines = Object.entries(amounts)
      .filter(([, amount]) => amount.trim() !== '')
      .map(([item, amount]) => ({ item: Number(item), amount: amount.trim() }));
    const params: Params<'admin/invoice/credit_note_create'> = { invoice_id: invoice.id, reason: reason.trim(), ...(lines.length > 0 && { lines }) };
    void action.run(async () => {
      const id = await call('admin/invoice/credit_note_create', params);
      const note = await call('admin/invoice/credit_note_get', { id });
      setDone(`Credit note ${note.number} credited ${money(note.total)} to the client's balance.`);
      setReason('');
      setAmounts({});
      onDone();
    });
  };
  return html`<section class="card" aria-labelledby="credit-note-form">
    <h2 id="credit-note-form">Credit to the client's balance</h2>
    <p>Issues a numbered credit note and adds its total (with its share of the tax) to the client's balance; no money is refunded. Leave every amount empty to credit all that is left.</p>
    <form onSubmit=${submit} aria-label="Credit note">
      <${Field} label="Reason" name="reason" value=${reason} onInput=${setReason} required=${true} error=${action.error} />
      ${invoice.items.map(
        (item, index) => html`<${Field}
          label=${`${item.title}: amount to credit (net, ${money(leftOf(item.total, item.credited))} left)`}
          name=${`lines[${index}].amount`}
          value=${amounts[index] ?? ''}
          onInput=${(value: string) => setAmounts({ ...amounts, [index]: value })}
          error=${action.error}
        />`,
      )}
      <${FormError} error=${action.error} fields=${['reason', 'amount', 'lines', ...invoice.items.map((_, index) => `lines[${index}].amount`)]} />
      <div class="actions"><${Button} type="submit" variant="primary" busy=${action.busy}>Issue credit note<//></div>
    </form>
    <${ErrorMessage} error=${action.error} />
    <${Notice}>${done}<//>
  </section>`;
}
