// The client's wallet (issue 24): the prepaid balance, its history (the ledger, newest first), the packs and a top-up
// form that issue a top-up invoice and open it to be paid, auto-recharge and the low-balance alert
// (wallet-topups.ts), and "Pay from balance" on an unpaid invoice.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { call } from '../lib/api.ts';
import { formatDateTime, formatMoney } from '../lib/format.ts';
import { navigate } from '../lib/router.ts';
import { announce, Button, ErrorMessage, Field, FormError, Loading, Pager, useAction, useLoad } from '../lib/ui.ts';
import { AutoRechargeForm, LowBalanceForm, PackList } from './wallet-topups.ts';

const KIND_LABELS: Record<string, string> = {
  top_up: 'Top-up',
  grant: 'Promotional credit',
  consume: 'Spent',
  expire: 'Expired',
  refund: 'Refund',
  adjust: 'Adjustment',
};

export function WalletPage() {
  const [page, setPage] = useState(1);
  const [amount, setAmount] = useState('');
  const total = useLoad(() => call('client/client/balance_get_total'), []);
  const lines = useLoad(() => call('client/client/balance_get_list', { page, per_page: 20 }), [page]);
  const topUp = useAction();
  const currency = lines.data?.list[0]?.currency ?? null;
  const submit = (event: Event): void => {
    event.preventDefault();
    void topUp.run(async () => {
      const hash = await call('client/invoice/funds_invoice', { amount: amount.trim() });
      const invoice = await call('guest/invoice/get', { hash });
      navigate(`/invoices/${invoice.id}`);
    });
  };
  return html`<h1>Wallet</h1>
    <section class="card" aria-labelledby="balance-title">
      <h2 id="balance-title">Balance</h2>
      <${ErrorMessage} error=${total.error} />
      ${total.data === undefined ? html`<${Loading} />` : html`<p class="balance" data-testid="wallet-balance"><strong>${formatMoney(total.data, currency)}</strong></p>`}
      <p>Your balance pays the invoices you choose (“Pay from balance” on an unpaid invoice). Promotional credit is used first and may expire.</p>
    </section>
    <section class="card" aria-labelledby="top-up-title">
      <h2 id="top-up-title">Add funds</h2>
      <${PackList} />
      <h3>Another amount</h3>
      <form onSubmit=${submit}>
        <${Field} label="Amount" name="amount" value=${amount} onInput=${setAmount} required=${true} inputmode="decimal" error=${topUp.error} hint="An invoice for this amount is issued; the balance grows once it is paid." />
        <${FormError} error=${topUp.error} fields=${['amount']} />
        <div class="actions"><${Button} type="submit" variant="primary" busy=${topUp.busy}>Create top-up invoice<//></div>
      </form>
    </section>
    <${AutoRechargeForm} />
    <${LowBalanceForm} />
    <section aria-labelledby="history-title">
      <h2 id="history-title">History</h2>
      <${ErrorMessage} error=${lines.error} />
      ${lines.data === undefined && lines.loading ? html`<${Loading} />` : null}
      ${lines.data !== undefined && lines.data.list.length === 0 ? html`<p>No balance movements yet.</p>` : null}
      ${lines.data !== undefined && lines.data.list.length > 0
        ? html`<div class="table-wrap"><table data-testid="wallet-history">
            <caption class="sr-only">Balance movements, newest first</caption>
            <thead><tr><th scope="col">Date</th><th scope="col">Type</th><th scope="col">Description</th><th scope="col" class="num">Amount</th><th scope="col">Expires</th></tr></thead>
            <tbody>
              ${lines.data.list.map(
                (line) => html`<tr>
                  <td>${formatDateTime(line.created_at)}</td>
                  <td>${KIND_LABELS[line.type] ?? line.type}</td>
                  <td>${line.description}</td>
                  <td class="num">${formatMoney(line.amount, line.currency)}</td>
                  <td>${line.expires_at === null ? '' : formatDateTime(line.expires_at)}</td>
                </tr>`,
              )}
            </tbody>
          </table></div>`
        : null}
      <${Pager} page=${lines.data} onPage=${setPage} label="History pages" />
    </section>`;
}

/**
 * "Pay from balance" on an own unpaid invoice (client/invoice/pay_with_credits); `onPaid` reloads the invoice. When the
 * balance is short of what is due, it applies what the balance holds and the rest stays due for a card.
 */
export function PayFromBalance({ invoice, onPaid }: { invoice: { id: number; status: string; total: string; amount_due: string; currency: string; items: ReadonlyArray<{ task: string }> }; onPaid: () => void }) {
  const balance = useLoad(() => call('client/client/balance_get_total'), [invoice.id, invoice.amount_due]);
  const action = useAction();
  // A top-up invoice is never paid from the balance it adds to.
  if (invoice.status !== 'unpaid' || invoice.items.some((item) => item.task === 'deposit')) return null;
  if (balance.data === undefined || Number(balance.data) <= 0) return null;
  const held = balance.data;
  // Compared in cents: both are decimal strings of the invoice's currency.
  const short = Math.round(Number(held) * 100) < Math.round(Number(invoice.amount_due) * 100);
  const pay = (): void => {
    void action.run(async () => {
      await call('client/invoice/pay_with_credits', short ? { id: invoice.id, amount: held } : { id: invoice.id });
      announce(short ? `${formatMoney(held, invoice.currency)} of your balance was applied to this invoice.` : 'Paid from your balance.');
      onPaid();
    });
  };
  return html`<section class="card" aria-labelledby="balance-pay-title">
    <h2 id="balance-pay-title">Pay from balance</h2>
    <p>Your balance: <strong>${formatMoney(held, invoice.currency)}</strong>. Due on this invoice: ${formatMoney(invoice.amount_due, invoice.currency)}.</p>
    ${short ? html`<p>Your balance does not cover it all: apply what it holds, then pay the rest by card.</p>` : null}
    <${ErrorMessage} error=${action.error} />
    <div class="actions"><${Button} busy=${action.busy} onClick=${pay}>${short ? `Apply ${formatMoney(held, invoice.currency)} from balance` : 'Pay from balance'}<//></div>
  </section>`;
}
