// The usage plan of an apikey product as form fields (CONTRACT §12): included uses per period, the usage period, the
// overage price in its three modes (tier rows for graduated), the hard limit, the per-key rate limit and the keys per
// order; and the price preview a customer would read ("10 USD/month includes 10,000 calls, then 1 USD per 1,000").
import { html } from 'htm/preact';
import { Checkbox, Field } from '../lib/ui.ts';

export interface TierRow {
  up_to: string;
  unit_price: string;
  flat_price: string;
}

export interface PlanForm {
  included: string;
  usage_period: string;
  enforce_limit: boolean;
  mode: '' | 'per_unit' | 'package' | 'graduated';
  unit_price: string;
  package_size: string;
  package_price: string;
  tiers: TierRow[];
  hard_limit: string;
  rate_limit: string;
  rate_window: string;
  max_keys: string;
}

const text = (value: unknown): string => (typeof value === 'number' || typeof value === 'string' ? String(value) : '');

function record(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

/** The form's values from a stored config (included: the explicit option, else the monthlyLimit parameter). */
export function toPlanForm(config: Record<string, unknown>): PlanForm {
  const overage = record(config.overage);
  const rate = record(config.rate_limit);
  const custom = record(config.custom);
  const mode = overage.mode === 'per_unit' || overage.mode === 'package' || overage.mode === 'graduated' ? overage.mode : '';
  const tiers = Array.isArray(overage.tiers) ? overage.tiers.map((tier: unknown) => ({ up_to: text(record(tier).up_to), unit_price: text(record(tier).unit_price), flat_price: text(record(tier).flat_price) })) : [];
  return {
    included: text(config.included ?? custom.monthlyLimit),
    usage_period: config.usage_period === 'billing_period' ? 'billing_period' : 'calendar_month',
    enforce_limit: config.enforce_limit === true,
    mode,
    unit_price: text(overage.unit_price),
    package_size: text(overage.package_size),
    package_price: text(overage.package_price),
    tiers: tiers.length > 0 ? tiers : [{ up_to: '', unit_price: '', flat_price: '' }],
    hard_limit: text(config.hard_limit),
    rate_limit: text(rate.limit),
    rate_window: text(rate.window_seconds) || '1',
    max_keys: text(config.max_keys),
  };
}

const blankToNull = (value: string): string | null => (value.trim() === '' ? null : value.trim());

/** The config options the form edits; the included uses also set the monthlyLimit parameter get_info reports. */
export function planConfig(form: PlanForm, custom: Record<string, unknown>): Record<string, unknown> {
  let overage: Record<string, unknown> | null = null;
  if (form.mode === 'per_unit') overage = { mode: 'per_unit', unit_price: form.unit_price };
  if (form.mode === 'package') overage = { mode: 'package', package_size: form.package_size, package_price: form.package_price };
  if (form.mode === 'graduated') {
    overage = {
      mode: 'graduated',
      tiers: form.tiers.map((tier, index) => ({
        up_to: index === form.tiers.length - 1 ? null : blankToNull(tier.up_to),
        unit_price: tier.unit_price,
        ...(tier.flat_price.trim() !== '' && { flat_price: tier.flat_price }),
      })),
    };
  }
  const included = blankToNull(form.included);
  const nextCustom = { ...custom };
  if (included === null) delete nextCustom.monthlyLimit;
  else nextCustom.monthlyLimit = Number(included);
  return {
    custom: nextCustom,
    included,
    usage_period: form.usage_period,
    enforce_limit: form.enforce_limit,
    overage,
    hard_limit: blankToNull(form.hard_limit),
    rate_limit: blankToNull(form.rate_limit) === null ? null : { limit: form.rate_limit.trim(), window_seconds: form.rate_window.trim() || '1' },
    max_keys: blankToNull(form.max_keys),
  };
}

/** "10.50 EUR", in the instance's currency (never a hard-coded "$"); trailing ".00" dropped. */
export function money(amount: string, currency: string): string {
  const trimmed = amount.includes('.') ? amount.replace(/\.?0+$/, '') : amount;
  return currency === '' ? trimmed : `${trimmed} ${currency}`;
}

const count = (value: string): string => (/^\d+$/.test(value.trim()) ? Number(value).toLocaleString('en-US') : value);

/** The plan in one sentence: "10 EUR/month includes 10,000 calls, then 1 EUR per 1,000; at most 50,000 calls". */
export function pricePreview(base: string | null, form: PlanForm, currency: string): string {
  const parts: string[] = [];
  const period = form.usage_period === 'billing_period' ? 'billing period' : 'month';
  const included = form.included.trim();
  let head = base ?? 'The plan';
  head += included === '' ? ' includes unlimited calls' : ` includes ${count(included)} calls${base === null ? ` per ${period}` : ''}`;
  parts.push(head);
  if (included !== '') {
    if (form.mode === 'per_unit' && form.unit_price !== '') parts.push(`then ${money(form.unit_price, currency)} per call`);
    else if (form.mode === 'package' && form.package_price !== '' && form.package_size !== '') parts.push(`then ${money(form.package_price, currency)} per ${count(form.package_size)}`);
    else if (form.mode === 'graduated') {
      // up_to counts calls beyond the included ones; the preview shows totals.
      const first = Number(included);
      const steps = form.tiers.map((tier, index) => {
        const last = index === form.tiers.length - 1;
        const previous = index === 0 ? 0 : Number(form.tiers[index - 1]!.up_to);
        const range = last ? `beyond ${count(String(first + previous))}` : `up to ${count(String(first + Number(tier.up_to)))}`;
        return `${money(tier.unit_price || '0', currency)} per call ${range}${tier.flat_price ? ` (+${money(tier.flat_price, currency)})` : ''}`;
      });
      parts.push(`then ${steps.join(', ')}`);
    } else if (form.enforce_limit) parts.push('then stops');
    else parts.push('then keeps working at no extra charge');
  }
  if (form.hard_limit.trim() !== '') parts.push(`at most ${count(form.hard_limit)} calls`);
  return `${parts.join(', ')}.`;
}

export function PlanFields({ form, onChange, error }: { form: PlanForm; onChange: (form: PlanForm) => void; error: unknown }) {
  const set = (patch: Partial<PlanForm>) => onChange({ ...form, ...patch });
  const setTier = (index: number, patch: Partial<TierRow>) => set({ tiers: form.tiers.map((tier, at) => (at === index ? { ...tier, ...patch } : tier)) });
  return html`<fieldset>
    <legend>Usage and overage</legend>
    <div class="row">
      <${Field} label="Included calls per period" name="config.included" type="number" min=${0} value=${form.included} onInput=${(value: string) => set({ included: value })} error=${error} hint="Empty: unlimited. Also reported to your app as monthlyLimit." />
      <${Field}
        label="Usage period"
        name="config.usage_period"
        value=${form.usage_period}
        onInput=${(value: string) => set({ usage_period: value })}
        options=${[['calendar_month', 'Calendar month (UTC)'], ['billing_period', "The order's billing period"]]}
        error=${error}
      />
      <${Field} label="Hard limit (calls per period)" name="config.hard_limit" type="number" min=${1} value=${form.hard_limit} onInput=${(value: string) => set({ hard_limit: value })} error=${error} hint="Keys stop here even with overage." />
    </div>
    <${Field}
      label="Beyond the included calls"
      name="config.overage.mode"
      value=${form.mode}
      onInput=${(value: string) => set({ mode: value as PlanForm['mode'] })}
      options=${[['', 'No extra charge'], ['per_unit', 'A price per call'], ['package', 'A price per package of calls'], ['graduated', 'Graduated tiers']]}
      error=${error}
    />
    ${form.mode === ''
      ? html`<${Checkbox} label="Stop keys at the included calls" checked=${form.enforce_limit} onChange=${(enforce: boolean) => set({ enforce_limit: enforce })} />`
      : null}
    ${form.mode === 'per_unit'
      ? html`<${Field} label="Price per call" name="config.overage.unit_price" inputmode="decimal" value=${form.unit_price} onInput=${(value: string) => set({ unit_price: value })} error=${error} hint="Up to 6 decimals, e.g. 0.0005." />`
      : null}
    ${form.mode === 'package'
      ? html`<div class="row">
          <${Field} label="Calls per package" name="config.overage.package_size" type="number" min=${1} value=${form.package_size} onInput=${(value: string) => set({ package_size: value })} error=${error} />
          <${Field} label="Price per package" name="config.overage.package_price" inputmode="decimal" value=${form.package_price} onInput=${(value: string) => set({ package_price: value })} error=${error} />
        </div>`
      : null}
    ${form.mode === 'graduated'
      ? html`<div class="table-wrap"><table>
            <caption>Tiers: each prices the calls beyond the included ones up to its limit</caption>
            <thead><tr><th scope="col">Up to (calls beyond the included)</th><th scope="col">Price per call</th><th scope="col">Flat price</th><th scope="col"><span class="sr-only">Remove</span></th></tr></thead>
            <tbody>
              ${form.tiers.map((tier, index) => {
                const last = index === form.tiers.length - 1;
                return html`<tr>
                  <td>${last ? 'All the rest' : html`<input type="number" min="1" aria-label=${`Tier ${index + 1} up to`} value=${tier.up_to} onInput=${(event: Event) => setTier(index, { up_to: (event.currentTarget as HTMLInputElement).value })} />`}</td>
                  <td><input inputmode="decimal" aria-label=${`Tier ${index + 1} price per call`} value=${tier.unit_price} onInput=${(event: Event) => setTier(index, { unit_price: (event.currentTarget as HTMLInputElement).value })} /></td>
                  <td><input inputmode="decimal" aria-label=${`Tier ${index + 1} flat price`} value=${tier.flat_price} onInput=${(event: Event) => setTier(index, { flat_price: (event.currentTarget as HTMLInputElement).value })} /></td>
                  <td>${form.tiers.length > 1 ? html`<button type="button" onClick=${() => set({ tiers: form.tiers.filter((_tier, at) => at !== index) })}>Remove tier ${index + 1}</button>` : null}</td>
                </tr>`;
              })}
            </tbody>
          </table></div>
          <button type="button" onClick=${() => set({ tiers: [...form.tiers.slice(0, -1), { up_to: '', unit_price: '', flat_price: '' }, form.tiers.at(-1)!] })}>Add a tier</button>`
      : null}
    <div class="row">
      <${Field} label="Rate limit (calls per key)" name="config.rate_limit.limit" type="number" min=${1} value=${form.rate_limit} onInput=${(value: string) => set({ rate_limit: value })} error=${error} hint="Empty: none." />
      <${Field} label="Rate limit window (seconds)" name="config.rate_limit.window_seconds" type="number" min=${1} value=${form.rate_window} onInput=${(value: string) => set({ rate_window: value })} error=${error} />
      <${Field} label="Keys per order" name="config.max_keys" type="number" min=${1} value=${form.max_keys} onInput=${(value: string) => set({ max_keys: value })} error=${error} hint="Empty: one." />
    </div>
  </fieldset>`;
}
