// One client's prepaid balance for staff (issue 24): the ledger newest first, an add-funds form (an adjustment with a
// reason, or a promotional grant that may expire; a negative amount takes funds away) and "Remove" on a line, which
// writes a compensating adjustment (the ledger is never edited).
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { call } from '../lib/api.ts';
import { formatDateTime, formatMoney } from '../lib/format.ts';
import { announce, Button, Confirm, ErrorMessage, Field, FormError, Loading, Pager, useAction, useLoad } from '../lib/ui.ts';

export function ClientBalance({ clientId }: { clientId: number }) {
  const [page, setPage] = useState(1);
  const [amount, setAmount] = useState('');
  const [description, setDescription] = useState('');
  const [kind, setKind] = useState<'adjust' | 'grant'>('adjust');
  const [expiresAt, setExpiresAt] = useState('');
  const [removing, setRemoving] = useState<number | null>(null);
  const lines = useLoad(() => call('admin/client/balance_get_list', { client_id: clientId, page, per_page: 20 }), [clientId, page]);
  const total = useLoad(() => call('admin/client/balance_get_total', { id: clientId }), [clientId, lines.data]);
  const add = useAction();
  const remove = useAction();
  const empty = lines.data !== undefined && lines.data.list.length === 0;
  const submit = (event: Event): void => {
    event.preventDefault();
    void add.run(async () => {
      await call('admin/client/balance_add_funds', {
        id: clientId,
        amount: amount.trim(),
        description,
        type: kind,
        ...(kind === 'grant' && expiresAt !== '' && { expires_at: new Date(expiresAt).toISOString() }),
      });
      setAmount('');
      setDescription('');
      setExpiresAt('');
      announce('Balance updated.');
      lines.reload();
    });
  };
  const reverse = (id: number): void => {
    void remove.run(async () => {
      await call('admin/client/balance_delete', { id });
      setRemoving(null);
      announce('Line reversed.');
      lines.reload();
    });
  };
  return html`<section class="card" aria-labelledby="client-balance">
    <h2 id="client-balance">Balance</h2>
    ${total.data === undefined ? null : html`<p data-testid="client-balance-total">Balance: <strong>${formatMoney(total.data, lines.data?.list[0]?.currency)}</strong></p>`}
    <${ErrorMessage} error=${lines.error ?? total.error ?? remove.error} />
    ${lines.data === undefined && lines.loading ? html`<${Loading} />` : null}
    ${empty ? html`<p>No balance movements yet.</p>` : null}
    ${lines.data !== undefined && lines.data.list.length > 0
      ? html`<div class="table-wrap"><table data-testid="client-ledger">
          <caption class="sr-only">Balance lines, newest first</caption>
          <thead><tr><th scope="col">Date</th><th scope="col">Type</th><th scope="col">Description</th><th scope="col" class="num">Amount</th><th scope="col">Expires</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
          <tbody>
            ${lines.data.list.map(
              (line) => html`<tr>
                <td>${formatDateTime(line.created_at)}</td>
                <td>${line.type}</td>
                <td>${line.description}</td>
                <td class="num">${formatMoney(line.amount, line.currency)}</td>
                <td>${line.expires_at === null ? '' : formatDateTime(line.expires_at)}</td>
                <td>
                  ${line.reverses_id !== null || line.reversed_by !== null
                    ? null
                    : removing === line.id
                      ? html`<${Confirm} question=${`Reverse this line of ${formatMoney(line.amount, line.currency)}?`} confirmLabel="Reverse" busy=${remove.busy} onConfirm=${() => reverse(line.id)} onCancel=${() => setRemoving(null)} />`
                      : html`<${Button} label=${`Remove line ${line.id}`} onClick=${() => setRemoving(line.id)}>Remove<//>`}
                </td>
              </tr>`,
            )}
          </tbody>
        </table></div>`
      : null}
    <${Pager} page=${lines.data} onPage=${setPage} label="Balance pages" />
    <form onSubmit=${submit} aria-labelledby="add-funds">
      <h3 id="add-funds">Add funds</h3>
      <${Field} label="Amount" name="amount" value=${amount} onInput=${setAmount} required=${true} inputmode="decimal" error=${add.error} hint="A negative amount takes funds away." />
      <${Field} label="Reason" name="description" value=${description} onInput=${setDescription} required=${true} error=${add.error} />
      <${Field} label="Kind" name="type" value=${kind} onInput=${(value: string) => setKind(value === 'grant' ? 'grant' : 'adjust')} options=${[['adjust', 'Adjustment'], ['grant', 'Promotional credit']]} error=${add.error} />
      ${kind === 'grant' ? html`<${Field} label="Expires" name="expires_at" type="datetime-local" value=${expiresAt} onInput=${setExpiresAt} error=${add.error} hint="Leave empty for credit that never expires." />` : null}
      <${FormError} error=${add.error} fields=${['amount', 'description', 'type', 'expires_at']} />
      <div class="actions"><${Button} type="submit" variant="primary" busy=${add.busy}>Add funds<//></div>
    </form>
  </section>`;
}
