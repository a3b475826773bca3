// The shop's currency choice (issue 26): a buyer picks one of the shop's currencies; the cart is set to it
// (guest/cart/set_currency or client/cart/set_currency) and the plans and the cart show their prices in it. A client
// whose first order fixed their currency is told so (the 409's message) and keeps it.
import { html } from 'htm/preact';
import { call } from '../lib/api.ts';
import { ErrorMessage, Field, useAction, useLoad } from '../lib/ui.ts';
import { cartPath, refreshCart } from './state.ts';

/** Shown only when the shop sells in more than one currency. */
export function CurrencyPicker({ currency, onChange }: { currency: string | null; onChange: (code: string) => void }) {
  const pairs = useLoad(() => call('guest/currency/get_pairs'), []);
  const action = useAction();
  const codes = Object.entries(pairs.data ?? {});
  if (codes.length < 2 || currency === null) return null;
  const choose = (code: string): void => {
    void action.run(async () => {
      await call(cartPath('set_currency'), { currency: code });
      await refreshCart();
      onChange(code);
    });
  };
  return html`<div class="currency-picker">
    <${Field} label="Currency" name="currency" value=${currency} onInput=${choose} error=${action.error} options=${codes.map(([code, name]) => [code, `${code} — ${name}`] as const)} />
    <${ErrorMessage} error=${action.error} />
  </div>`;
}
