// The wallet's ways to buy credit beyond a custom amount (issue 24): top-up packs staff offer (buying one issues its
// top-up invoice and opens it to be paid), auto-recharge (a threshold and an amount charged to the saved card), and
// the low-balance alert. Labels avoid the word "amount": the custom top-up field owns that label.
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { call } from '../lib/api.ts';
import { formatMoney } from '../lib/format.ts';
import { navigate } from '../lib/router.ts';
import { announce, Button, Checkbox, ErrorMessage, Field, FormError, Loading, useAction, useLoad } from '../lib/ui.ts';

/** The enabled packs, each with a Buy button; nothing when staff offer none. */
export function PackList() {
  const packs = useLoad(() => call('client/credit/pack_get_list'), []);
  const buy = useAction();
  if (packs.data !== undefined && packs.data.list.length === 0) return null;
  const purchase = (id: number): void => {
    void buy.run(async () => {
      const hash = await call('client/credit/pack_buy', { id });
      const invoice = await call('guest/invoice/get', { hash });
      navigate(`/invoices/${invoice.id}`);
    });
  };
  return html`<div class="packs" data-testid="wallet-packs">
    <h3>Packs</h3>
    <${ErrorMessage} error=${packs.error ?? buy.error} />
    ${packs.data === undefined ? html`<${Loading} />` : null}
    <ul>
      ${(packs.data?.list ?? []).map(
        (pack) => html`<li>
          <strong>${pack.title}</strong>: ${formatMoney(pack.amount, pack.currency)}
          ${Number(pack.bonus) > 0
            ? html` + ${formatMoney(pack.bonus, pack.currency)} bonus${pack.bonus_days === null ? '' : ` (valid ${pack.bonus_days} days)`}`
            : null}
          ${' '}<${Button} busy=${buy.busy} label=${`Buy ${pack.title}`} onClick=${() => purchase(pack.id)}>Buy<//>
        </li>`,
      )}
    </ul>
  </div>`;
}

/** Auto-recharge: on/off, the threshold and the amount; needs a saved card. */
export function AutoRechargeForm() {
  const current = useLoad(() => call('client/credit/auto_recharge_get'), []);
  const save = useAction();
  const [enabled, setEnabled] = useState(false);
  const [threshold, setThreshold] = useState('');
  const [amount, setAmount] = useState('');
  useEffect(() => {
    if (current.data === undefined) return;
    setEnabled(current.data.enabled);
    setThreshold(current.data.threshold ?? '');
    setAmount(current.data.amount ?? '');
  }, [current.data]);
  const submit = (event: Event): void => {
    event.preventDefault();
    void save.run(async () => {
      const params = { enabled, ...(threshold.trim() !== '' && { threshold: threshold.trim() }), ...(amount.trim() !== '' && { amount: amount.trim() }) };
      const saved = await call('client/credit/auto_recharge_set', params);
      setEnabled(saved.enabled);
      announce(saved.enabled ? 'Auto-recharge is on.' : 'Auto-recharge is off.');
    });
  };
  return html`<section class="card" aria-labelledby="recharge-title">
    <h2 id="recharge-title">Auto-recharge</h2>
    ${current.data === undefined ? html`<${ErrorMessage} error=${current.error} />` : null}
    ${current.data !== undefined && !current.data.has_card
      ? html`<p data-testid="recharge-no-card">Auto-recharge charges your saved card. Pay an invoice by card to save one.</p>`
      : null}
    <form aria-label="Auto-recharge" onSubmit=${submit}>
      <${Checkbox} label="Recharge automatically" checked=${enabled} onChange=${setEnabled} name="enabled" />
      <${Field} label="When the balance falls below" name="threshold" value=${threshold} onInput=${setThreshold} inputmode="decimal" error=${save.error} />
      <${Field} label="Charge my card" name="amount" value=${amount} onInput=${setAmount} inputmode="decimal" error=${save.error} hint="Charged once each time the balance falls below the threshold." />
      <${FormError} error=${save.error} fields=${['threshold', 'amount']} />
      <div class="actions"><${Button} type="submit" busy=${save.busy}>Save auto-recharge<//></div>
    </form>
  </section>`;
}

/** The low-balance alert: a mail (and the operator's webhook) each time the balance falls below it. */
export function LowBalanceForm() {
  const current = useLoad(() => call('client/credit/low_balance_get'), []);
  const save = useAction();
  const [value, setValue] = useState('');
  useEffect(() => {
    if (current.data !== undefined) setValue(current.data.amount ?? '');
  }, [current.data]);
  const submit = (event: Event): void => {
    event.preventDefault();
    void save.run(async () => {
      const saved = await call('client/credit/low_balance_set', value.trim() === '' ? {} : { amount: value.trim() });
      announce(saved.amount === null ? 'Low-balance alert is off.' : `You will be told when the balance falls below ${formatMoney(saved.amount, saved.currency)}.`);
    });
  };
  return html`<section class="card" aria-labelledby="alert-title">
    <h2 id="alert-title">Low-balance alert</h2>
    <form aria-label="Low-balance alert" onSubmit=${submit}>
      <${Field} label="Mail me when the balance falls below" name="amount" value=${value} onInput=${setValue} inputmode="decimal" error=${save.error} hint="Leave empty for no alert." />
      <${FormError} error=${save.error} fields=${['amount']} />
      <div class="actions"><${Button} type="submit" busy=${save.busy}>Save alert<//></div>
    </form>
  </section>`;
}

