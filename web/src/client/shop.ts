// The plan catalogue and the cart with checkout.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { ApiError, call, fieldOf } from '../lib/api.ts';
import { formatMoney, formatValue, humanize, isZeroMoney, trialWording } from '../lib/format.ts';
import { Link, navigate } from '../lib/router.ts';
import { useStore } from '../lib/store.ts';
import { announce, Button, ErrorMessage, Field, Loading, Pager, useAction, useLoad } from '../lib/ui.ts';
import type { Cart, Product } from '../lib/types.ts';
import { account, cartPath, refreshCart } from './state.ts';
import { periodLabel, periods } from '../lib/labels.ts';
import { usageTerms } from '../../../src/lib/usage-terms.ts';
import { useBillingInfo, type BillingInfo } from '../lib/billing-info.ts';
import { CurrencyPicker } from './currency-picker.ts';

// Kept here for the pages that import them from the shop; they live in lib/labels.ts.
export { periodLabel, periods } from '../lib/labels.ts';

function customParams(product: Product): [string, unknown][] {
  const custom = product.config?.custom;
  return typeof custom === 'object' && custom !== null ? Object.entries(custom as Record<string, unknown>) : [];
}

function PlanCard({ product, labels, currency }: { product: Product; labels: Record<string, string> | undefined; currency: string | null }) {
  const pricing = product.pricing ?? { type: 'free' };
  const recurrent = Object.entries(pricing.recurrent ?? {}).filter(([, entry]) => entry.enabled);
  const [period, setPeriod] = useState(recurrent[0]?.[0] ?? '');
  const action = useAction();
  const titleId = `plan-${product.id}`;
  const add = (event: Event): void => {
    event.preventDefault();
    void action.run(async () => {
      await call(cartPath('add_item'), { id: product.id, ...(pricing.type === 'recurrent' && { period }) });
      await refreshCart();
      navigate('/cart');
    });
  };
  const features = customParams(product);
  // What the plan's use costs beyond its price, worded as the invoice line words it (src/lib/usage-terms.ts).
  const terms = usageTerms(product.config, currency ?? '');
  const trial = trialWording(product.config);
  let price;
  if (pricing.type === 'free') price = html`<p class="price">Free</p>`;
  else if (pricing.type === 'once') {
    price = html`<p class="price">${formatMoney(pricing.once?.price, currency)} <small>once</small></p>
      ${!isZeroMoney(pricing.once?.setup) ? html`<p>Setup fee ${formatMoney(pricing.once?.setup, currency)}</p>` : null}`;
  } else {
    price = html`<ul class="plan-list prices">
      ${recurrent.map(
        ([code, entry]) =>
          html`<li><strong>${formatMoney(entry.price, currency)}</strong> ${periodLabel(labels, code).toLowerCase()}${!isZeroMoney(entry.setup) ? html` + ${formatMoney(entry.setup, currency)} setup` : null}</li>`,
      )}
    </ul>`;
  }
  return html`<article class="card" aria-labelledby=${titleId}>
    <h2 id=${titleId}>${product.title}</h2>
    ${product.description ? html`<p>${product.description}</p>` : null}
    ${price}
    ${trial !== null ? html`<p class="trial" data-testid="plan-trial"><strong>${trial}</strong></p>` : null}
    ${product.type === 'apikey'
      ? html`<p class="includes">Includes an API key, ready under API keys ${trial !== null ? 'at once: nothing is paid during the trial' : 'once the invoice is paid'}.</p>`
      : null}
    ${terms.length > 0
      ? html`<h3 class="usage-terms-title">Usage</h3>
          <ul class="plan-list usage-terms" data-testid="usage-terms">
            ${terms.map((term) => html`<li>${term.charAt(0).toUpperCase()}${term.slice(1)}</li>`)}
          </ul>`
      : null}
    ${features.length > 0
      ? html`<h3 class="sr-only">Plan features</h3>
          <ul class="plan-list features">
            ${features.map(([name, value]) => html`<li>${humanize(name)}: <strong>${formatValue(value)}</strong></li>`)}
          </ul>`
      : null}
    <form onSubmit=${add}>
      ${pricing.type === 'recurrent'
        ? recurrent.length > 0
          ? html`<${Field}
              label="Billing period"
              name="period"
              value=${period}
              onInput=${setPeriod}
              error=${action.error}
              options=${recurrent.map(([code, entry]) => [code, `${periodLabel(labels, code)}, ${formatMoney(entry.price, currency)}`] as const)}
            />`
          : html`<p>Not available at the moment.</p>`
        : null}
      <${ErrorMessage} error=${action.error} />
      <${Button} type="submit" variant="primary" busy=${action.busy} disabled=${pricing.type === 'recurrent' && recurrent.length === 0} label=${`Add to cart: ${product.title}`}>Add to cart<//>
    </form>
  </article>`;
}

export function PlansPage() {
  const [page, setPage] = useState(1);
  const billing = useBillingInfo();
  // The cart's currency (chosen, else the client's, else the default): the plans are priced in it.
  const cartCurrency = useLoad(() => call(cartPath('get_currency')), []);
  const [chosen, setChosen] = useState<string | null>(null);
  const currency = chosen ?? cartCurrency.data?.code ?? null;
  const products = useLoad(() => (currency === null ? Promise.resolve(undefined) : call('guest/product/get_list', { page, per_page: 12, currency })), [page, currency]);
  const labels = useLoad(periods, []);
  return html`<h1>Plans</h1>
    <p>Choose a plan, add it to the cart and pay the invoice. ${billing?.tax_applies ? html`<span data-testid="tax-mode">${billing.tax_inclusive ? 'Prices incl. VAT.' : 'Prices excl. VAT.'}</span>` : null}</p>
    <${CurrencyPicker} currency=${currency} onChange=${setChosen} />
    <${ErrorMessage} error=${cartCurrency.error} />
    <${ErrorMessage} error=${products.error} />
    ${products.data === undefined && products.loading ? html`<${Loading} label="Loading the plans…" />` : null}
    ${products.data !== undefined && products.data.list.length === 0 ? html`<p>No plans are on sale yet.</p>` : null}
    <div class="grid" aria-busy=${products.loading ? 'true' : 'false'}>
      ${products.data?.list.map((product) => html`<${PlanCard} key=${product.id} product=${product} labels=${labels.data} currency=${product.currency} />`)}
    </div>
    <${Pager} page=${products.data} onPage=${setPage} label="Plan pages" />`;
}

/** The coupon field: apply a code, or remove the applied one (CONTRACT §8). */
function CouponForm({ cart, onChange }: { cart: Cart; onChange: () => void }) {
  const [code, setCode] = useState('');
  const action = useAction();
  const apply = (event: Event): void => {
    event.preventDefault();
    void action.run(async () => {
      await call(cartPath('apply_promo'), { promocode: code.trim() });
      setCode('');
      announce('Coupon applied');
      onChange();
    });
  };
  const remove = (): void => {
    void action.run(async () => {
      await call(cartPath('remove_promo'));
      announce('Coupon removed');
      onChange();
    });
  };
  return html`<form class="coupon" onSubmit=${apply} aria-label="Coupon">
    ${cart.promocode
      ? html`<p>Coupon <strong>${cart.promocode}</strong> applied. <${Button} busy=${action.busy} onClick=${remove} label="Remove the coupon">Remove coupon<//></p>`
      : html`<${Field} label="Coupon code" name="promocode" value=${code} onInput=${setCode} error=${action.error} autocomplete="off" />
          <${Button} type="submit" busy=${action.busy} disabled=${code.trim() === ''}>Apply coupon<//>`}
    ${cart.promocode ? html`<${ErrorMessage} error=${action.error} />` : null}
  </form>`;
}

/** Checkout refused because the e-mail address is not confirmed yet (REQUIRE_EMAIL_VERIFICATION). */
function unconfirmed(error: unknown): boolean {
  return error instanceof ApiError && error.code === 403 && /confirm your email/i.test(error.message);
}

/** What the cart says of tax: included in the prices, added by the invoice, or none (issue 26). */
function taxWording(billing: BillingInfo | undefined): string {
  if (billing?.tax_inclusive === true) return 'Prices incl. VAT: you pay the total shown; the invoice shows the VAT it contains.';
  return 'Prices excl. VAT: the invoice adds the tax of your country (none for an EU business with a valid VAT number in another member state).';
}

export function CartPage() {
  const user = useStore(account);
  const billing = useBillingInfo();
  const cart = useLoad(() => refreshCart(), [user?.id]);
  const labels = useLoad(periods, []);
  const action = useAction();
  const [removing, setRemoving] = useState<number | null>(null);
  const remove = (id: number): void => {
    setRemoving(id);
    void action
      .run(async () => {
        await call(cartPath('remove_item'), { id });
        cart.reload();
      })
      .finally(() => setRemoving(null));
  };
  const checkout = (): void => {
    void action.run(async () => {
      const result = await call('client/cart/checkout');
      await refreshCart().catch(() => undefined);
      // A free trial that needs a card waits for one: off to the card page; the trial starts when the card is saved.
      if (typeof result.setup_url === 'string') window.location.assign(result.setup_url);
      else if (result.invoice_id !== null && result.invoice_id !== undefined) navigate(`/invoices/${result.invoice_id}`);
      else navigate('/keys?new=1');
    });
  };
  const data: Cart | undefined = cart.data;
  return html`<h1>Cart</h1>
    <${ErrorMessage} error=${cart.error} />
    ${data === undefined && cart.loading ? html`<${Loading} />` : null}
    ${data !== undefined && data.items.length === 0 ? html`<p>Your cart is empty. <${Link} href="/">See the plans<//>.</p>` : null}
    ${data !== undefined && data.items.length > 0
      ? html`<section class="card" aria-labelledby="cart-items">
          <h2 id="cart-items">Items</h2>
          <div class="table-wrap">
            <table>
              <thead><tr><th scope="col">Plan</th><th scope="col">Period</th><th scope="col" class="num">Qty</th><th scope="col" class="num">Price</th><th scope="col" class="num">Setup</th><th scope="col" class="num">Total</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
              <tbody>
                ${data.items.map(
                  (item) => html`<tr>
                    <td>${item.title}${item.usage_terms ? html`<br /><small class="usage-terms" data-testid="cart-usage-terms">${item.usage_terms}</small>` : null}</td>
                    <td>${periodLabel(labels.data, item.period)}</td>
                    <td class="num">${item.quantity}</td>
                    <td class="num">${formatMoney(item.price, data.currency)}</td>
                    <td class="num">${formatMoney(item.setup_price, data.currency)}</td>
                    <td class="num">${formatMoney(item.total, data.currency)}</td>
                    <td><${Button} busy=${removing === item.id} onClick=${() => remove(item.id)} label=${`Remove ${item.title}`}>Remove<//></td>
                  </tr>`,
                )}
              </tbody>
              <tfoot>
                ${data.promocode
                  ? html`<tr><th scope="row" colspan="5">Subtotal</th><td class="num">${formatMoney(data.subtotal, data.currency)}</td><td></td></tr>
                      <tr><th scope="row" colspan="5">Discount (${data.promocode})</th><td class="num">−${formatMoney(data.discount, data.currency)}</td><td></td></tr>`
                  : null}
                <tr><th scope="row" colspan="5">Total</th><td class="num"><strong>${formatMoney(data.total, data.currency)}</strong></td><td></td></tr>
              </tfoot>
            </table>
          </div>
          <p><small data-testid="tax-mode">${taxWording(billing)}</small></p>
          <${CouponForm} cart=${data} onChange=${cart.reload} />
          <${ErrorMessage} error=${action.error} />
          ${unconfirmed(action.error) ? html`<p>No mail? <${Link} href="/profile">Send the confirmation link again from your profile<//>.</p>` : null}
          ${fieldOf(action.error) === 'country' ? html`<p data-testid="set-country"><${Link} href="/profile">Set your billing country in your profile<//>, then check out again; your cart is kept.</p>` : null}
          ${user
            ? html`<div class="actions"><${Button} variant="primary" busy=${action.busy && removing === null} onClick=${checkout}>Check out<//></div>`
            : html`<p>To check out, <${Link} href="/login?next=/cart">log in<//> or <${Link} href="/signup">create an account<//>; your cart comes with you.</p>`}
        </section>`
      : null}`;
}
