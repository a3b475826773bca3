// Products: the list with a "New product" button (admin/product/prepare), and the editor: one form, one Save, for
// details, pricing and the config (an apikey plan's key options and usage plan as real fields, with a price preview;
// every plan's other custom parameters as name/value rows).
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { call, type Params } from '../lib/api.ts';
import { formatMoney, parseValue, valueToText } from '../lib/format.ts';
import { Link, navigate } from '../lib/router.ts';
import { Badge, Button, Checkbox, Confirm, ErrorMessage, Field, FormError, Loading, Notice, Pager, useAction, useLoad } from '../lib/ui.ts';
import { truthy, type PeriodPrice, type Pricing, type Product } from '../lib/types.ts';
import { DataTable, filled } from './common.ts';
import { money, planConfig, PlanFields, pricePreview, toPlanForm, type PlanForm } from './plan-fields.ts';
import { useBillingInfo } from '../lib/billing-info.ts';

const TYPES = [
  ['apikey', 'API key'],
  ['custom', 'Custom'],
] as const;

let periodLabels: Promise<Record<string, string>> | null = null;
function periods(): Promise<Record<string, string>> {
  periodLabels ??= call('guest/system/periods');
  return periodLabels;
}

/** "API key" rather than `apikey`, everywhere a person reads it. */
function typeLabel(type: string): string {
  return TYPES.find(([code]) => code === type)?.[1] ?? type;
}

function priceSummary(product: Product): string {
  const pricing = product.pricing;
  if (pricing === null || pricing.type === 'free') return 'Free';
  if (pricing.type === 'once') return `${formatMoney(pricing.once?.price)} once`;
  const enabled = Object.entries(pricing.recurrent ?? {}).filter(([, entry]) => truthy(entry.enabled));
  return enabled.map(([code, entry]) => `${formatMoney(entry.price)}/${code}`).join(', ') || 'No period enabled';
}

export function ProductsPage() {
  const [page, setPage] = useState(1);
  const [filters, setFilters] = useState({ search: '', type: '', status: '' });
  const [applied, setApplied] = useState(filters);
  const products = useLoad(() => call('admin/product/get_list', { ...filled(applied), page, per_page: 25 }), [applied, page]);
  const [title, setTitle] = useState('');
  const [type, setType] = useState('apikey');
  const [creating, setCreating] = useState(false);
  const create = useAction();
  const submitNew = (event: Event): void => {
    event.preventDefault();
    void create.run(async () => {
      const id = await call('admin/product/prepare', { title, type });
      navigate(`/admin/products/${id}`);
    });
  };
  const search = (event: Event): void => {
    event.preventDefault();
    setPage(1);
    setApplied(filters);
  };
  return html`<h1>Products</h1>
    ${creating
      ? html`<form class="card" onSubmit=${submitNew} aria-labelledby="new-product">
          <h2 id="new-product">New product</h2>
          <div class="row">
            <${Field} label="Title" name="title" required value=${title} onInput=${setTitle} error=${create.error} />
            <${Field} label="Type" name="type" value=${type} onInput=${setType} options=${TYPES} error=${create.error} />
          </div>
          <${FormError} error=${create.error} fields=${['title', 'type']} />
          <p class="hint">A new product starts disabled and free; set its pricing and enable it on the next page.</p>
          <div class="actions">
            <${Button} type="submit" variant="primary" busy=${create.busy}>Create product<//>
            <button type="button" onClick=${() => setCreating(false)}>Cancel</button>
          </div>
        </form>`
      : html`<p><button type="button" class="primary" onClick=${() => setCreating(true)}>New product</button></p>`}
    <form class="card row" role="search" aria-label="Filter products" onSubmit=${search}>
      <${Field} label="Search" name="search" type="search" value=${filters.search} onInput=${(value: string) => setFilters({ ...filters, search: value })} error=${products.error} />
      <${Field} label="Type" name="type" value=${filters.type} onInput=${(value: string) => setFilters({ ...filters, type: value })} options=${[['', 'Any type'], ...TYPES]} error=${products.error} />
      <${Field} label="Status" name="status" value=${filters.status} onInput=${(value: string) => setFilters({ ...filters, status: value })} options=${[['', 'Any status'], ['enabled', 'Enabled'], ['disabled', 'Disabled']]} error=${products.error} />
      <${Button} type="submit" busy=${products.loading}>Filter<//>
    </form>
    <${FormError} error=${products.error} fields=${['search', 'type', 'status']} />
    ${products.data === undefined && products.loading ? html`<${Loading} />` : null}
    ${products.data !== undefined
      ? html`<${DataTable}
          caption="Products"
          busy=${products.loading}
          rows=${products.data.list}
          columns=${[
            ['#', (product: Product) => product.id],
            ['Title', (product: Product) => html`<${Link} href=${`/admin/products/${product.id}`}>${product.title}<//>`],
            ['Type', (product: Product) => typeLabel(product.type)],
            ['Pricing', (product: Product) => priceSummary(product), 'hide-narrow'],
            ['Status', (product: Product) => html`<${Badge} status=${product.status} />${truthy(product.hidden) ? ' (hidden)' : ''}`],
          ]}
        />`
      : null}
    <${Pager} page=${products.data} onPage=${setPage} label="Product pages" />`;
}

interface PricingForm {
  type: Pricing['type'];
  once: { price: string; setup: string };
  recurrent: Record<string, { price: string; setup: string; enabled: boolean }>;
}

function toPricingForm(pricing: Pricing | null, codes: string[]): PricingForm {
  const recurrent: PricingForm['recurrent'] = {};
  for (const code of new Set([...codes, ...Object.keys(pricing?.recurrent ?? {})])) {
    const entry: PeriodPrice | undefined = pricing?.recurrent?.[code];
    recurrent[code] = { price: entry?.price ?? '0', setup: entry?.setup ?? '0', enabled: entry !== undefined && truthy(entry.enabled) };
  }
  return { type: pricing?.type ?? 'free', once: { price: pricing?.once?.price ?? '0', setup: pricing?.once?.setup ?? '0' }, recurrent };
}

interface KeyOptions {
  length: string;
  split: boolean;
  split_interval: string;
  capitalization: string;
}

interface CustomRow {
  name: string;
  value: string;
}

function scalarText(value: unknown, fallback: string): string {
  return typeof value === 'number' || typeof value === 'string' ? String(value) : fallback;
}

/** The first period on offer as "10 USD/month" (the instance's currency), for the price preview. */
function basePrice(pricing: PricingForm, labels: Record<string, string>, currency: string): string | null {
  if (pricing.type === 'free') return 'Free';
  if (pricing.type === 'once') return `${money(pricing.once.price, currency)} once`;
  const offered = Object.entries(pricing.recurrent).find(([, entry]) => entry.enabled);
  if (offered === undefined) return null;
  const [code, entry] = offered;
  const unit: Record<string, string> = { '1M': 'month', '1Y': 'year', '1W': 'week' };
  return `${money(entry.price, currency)}/${unit[code] ?? labels[code] ?? code}`;
}

/** Parameters that have a field of their own (which shows its error); any other error shows above Save. */
const FIELD_NAMES = [
  'title', 'slug', 'description', 'status', 'setup', 'pricing.type', 'pricing.once.price', 'pricing.once.setup',
  'config.length', 'config.split_interval', 'config.capitalization', 'config.included', 'config.usage_period', 'config.hard_limit',
  'config.overage.mode', 'config.overage.unit_price', 'config.overage.package_size', 'config.overage.package_price',
  'config.rate_limit.limit', 'config.rate_limit.window_seconds', 'config.max_keys',
];

/** The product editor: details, pricing, key options, the usage plan and custom parameters, saved together. */
type ProductUpdate = Params<'admin/product/update'>;

/** The details part of the product form; status and setup hold only the options their selects offer. */
interface DetailsForm {
  title: string;
  slug: string;
  description: string;
  status: NonNullable<ProductUpdate['status']>;
  hidden: boolean;
  setup: NonNullable<ProductUpdate['setup']>;
}

function ProductForm({ product, labels, onSaved }: { product: Product; labels: Record<string, string>; onSaved: () => void }) {
  const isApiKey = product.type === 'apikey';
  const [form, setForm] = useState<DetailsForm>({ title: '', slug: '', description: '', status: 'disabled', hidden: false, setup: 'after_payment' });
  const [pricing, setPricing] = useState<PricingForm>(toPricingForm(null, []));
  const [options, setOptions] = useState<KeyOptions>({ length: '32', split: true, split_interval: '8', capitalization: 'uppercase' });
  const [plan, setPlan] = useState<PlanForm>(toPlanForm({}));
  const [rows, setRows] = useState<CustomRow[]>([]);
  const [saved, setSaved] = useState<string | null>(null);
  // The periods table lists the offered periods; the others only on request (or when none is offered yet).
  const [allPeriods, setAllPeriods] = useState(false);
  const currency = useBillingInfo()?.currency ?? '';
  const action = useAction();
  useEffect(() => {
    setForm({
      title: product.title,
      slug: product.slug ?? '',
      description: product.description ?? '',
      status: product.status ?? 'disabled',
      hidden: truthy(product.hidden),
      setup: product.setup ?? 'after_payment',
    });
    setPricing(toPricingForm(product.pricing, Object.keys(labels)));
    const config = product.config ?? {};
    setOptions({
      length: scalarText(config.length, '32'),
      split: config.split === undefined ? true : truthy(config.split),
      split_interval: scalarText(config.split_interval, '8'),
      capitalization: typeof config.capitalization === 'string' ? config.capitalization : 'uppercase',
    });
    setPlan(toPlanForm(config));
    const custom = typeof config.custom === 'object' && config.custom !== null ? (config.custom as Record<string, unknown>) : {};
    // An API key plan edits monthlyLimit as "Included calls per period"; every other parameter is a row.
    setRows(Object.entries(custom).filter(([name]) => !isApiKey || name !== 'monthlyLimit').map(([name, value]) => ({ name, value: valueToText(value) })));
  }, [product.updated_at, Object.keys(labels).length]);
  const submit = (event: Event): void => {
    event.preventDefault();
    setSaved(null);
    void action.run(async () => {
      const custom: Record<string, unknown> = {};
      for (const row of rows) if (row.name.trim() !== '') custom[row.name.trim()] = parseValue(row.value);
      const config: Record<string, unknown> = isApiKey
        ? {
            length: Number(options.length),
            split: options.split,
            split_interval: Number(options.split_interval),
            capitalization: options.capitalization,
            ...planConfig(plan, custom),
          }
        : { custom };
      await call('admin/product/update', {
        id: product.id,
        ...form,
        pricing: {
          type: pricing.type,
          once: pricing.once,
          recurrent: Object.fromEntries(Object.entries(pricing.recurrent).filter(([, entry]) => entry.enabled || Number(entry.price) > 0)),
        },
        config,
      });
      setSaved('Saved.');
      onSaved();
    });
  };
  const setPeriod = (code: string, patch: Partial<PricingForm['recurrent'][string]>) =>
    setPricing({ ...pricing, recurrent: { ...pricing.recurrent, [code]: { ...pricing.recurrent[code]!, ...patch } } });
  const setRow = (index: number, patch: Partial<CustomRow>) => setRows(rows.map((row, at) => (at === index ? { ...row, ...patch } : row)));
  return html`<form class="card" onSubmit=${submit} aria-labelledby="product-details">
    <h2 id="product-details">Details and pricing</h2>
    <div class="row">
      <${Field} label="Title" name="title" required value=${form.title} onInput=${(value: string) => setForm({ ...form, title: value })} error=${action.error} />
      <${Field} label="Slug" name="slug" value=${form.slug} onInput=${(value: string) => setForm({ ...form, slug: value })} error=${action.error} hint="Used in links; lower-case letters, digits and dashes." />
    </div>
    <${Field} label="Description" name="description" type="textarea" value=${form.description} onInput=${(value: string) => setForm({ ...form, description: value })} error=${action.error} />
    <div class="row">
      <${Field} label="Status" name="status" value=${form.status} onInput=${(value: DetailsForm['status']) => setForm({ ...form, status: value })} options=${[['enabled', 'Enabled (on sale)'], ['disabled', 'Disabled']]} error=${action.error} />
      <${Field}
        label="Activation"
        name="setup"
        value=${form.setup}
        onInput=${(value: DetailsForm['setup']) => setForm({ ...form, setup: value })}
        options=${[['after_payment', 'When the invoice is paid'], ['after_order', 'At once, when ordered'], ['manual', 'Manually, by staff']]}
        error=${action.error}
      />
    </div>
    <${Checkbox} label="Hidden from the catalogue (still orderable by direct link)" checked=${form.hidden} onChange=${(hidden: boolean) => setForm({ ...form, hidden })} />
    <fieldset>
      <legend>Pricing</legend>
      <${Field}
        label="Pricing type"
        name="pricing.type"
        value=${pricing.type}
        onInput=${(value: string) => setPricing({ ...pricing, type: value as Pricing['type'] })}
        options=${[['free', 'Free'], ['once', 'One-time payment'], ['recurrent', 'Recurring (per period)']]}
        error=${action.error}
      />
      ${pricing.type === 'once'
        ? html`<div class="row">
            <${Field} label="Price" name="pricing.once.price" inputmode="decimal" value=${pricing.once.price} onInput=${(value: string) => setPricing({ ...pricing, once: { ...pricing.once, price: value } })} error=${action.error} />
            <${Field} label="Setup fee" name="pricing.once.setup" inputmode="decimal" value=${pricing.once.setup} onInput=${(value: string) => setPricing({ ...pricing, once: { ...pricing.once, setup: value } })} error=${action.error} />
          </div>`
        : null}
      ${pricing.type === 'recurrent'
        ? html`<div class="table-wrap"><table>
            <caption class="sr-only">Prices per period</caption>
            <thead><tr><th scope="col">Period</th><th scope="col">Offered</th><th scope="col">Price</th><th scope="col">Setup fee</th></tr></thead>
            <tbody>
              ${Object.entries(pricing.recurrent).filter(([, entry]) => allPeriods || entry.enabled || !Object.values(pricing.recurrent).some((other) => other.enabled)).map(
                ([code, entry]) => html`<tr>
                  <th scope="row">${labels[code] ?? code}</th>
                  <td><input type="checkbox" aria-label=${`Offer ${labels[code] ?? code}`} checked=${entry.enabled} onChange=${(event: Event) => setPeriod(code, { enabled: (event.currentTarget as HTMLInputElement).checked })} /></td>
                  <td><input inputmode="decimal" aria-label=${`Price, ${labels[code] ?? code}`} value=${entry.price} onInput=${(event: Event) => setPeriod(code, { price: (event.currentTarget as HTMLInputElement).value })} /></td>
                  <td><input inputmode="decimal" aria-label=${`Setup fee, ${labels[code] ?? code}`} value=${entry.setup} onInput=${(event: Event) => setPeriod(code, { setup: (event.currentTarget as HTMLInputElement).value })} /></td>
                </tr>`,
              )}
            </tbody>
          </table></div>
          <button type="button" class="link" aria-pressed=${allPeriods ? 'true' : 'false'} onClick=${() => setAllPeriods(!allPeriods)}>${allPeriods ? 'Show only the offered periods' : 'Show every period'}</button>`
        : null}
    </fieldset>
    ${isApiKey
      ? html`<h2>Key options and plan parameters</h2>
          <fieldset>
            <legend>Key options (apply to keys issued from now on)</legend>
            <div class="row">
              <${Field} label="Length (characters, dashes not counted)" name="config.length" type="number" min=${8} max=${128} value=${options.length} onInput=${(value: string) => setOptions({ ...options, length: value })} error=${action.error} />
              <${Field} label="Characters per group" name="config.split_interval" type="number" min=${1} max=${128} value=${options.split_interval} onInput=${(value: string) => setOptions({ ...options, split_interval: value })} error=${action.error} />
              <${Field}
                label="Letter case"
                name="config.capitalization"
                value=${options.capitalization}
                onInput=${(value: string) => setOptions({ ...options, capitalization: value })}
                options=${[['uppercase', 'Upper case'], ['lowercase', 'Lower case'], ['mixed', 'Mixed']]}
                error=${action.error}
              />
            </div>
            <${Checkbox} label="Split the key into groups with dashes" checked=${options.split} onChange=${(split: boolean) => setOptions({ ...options, split })} />
          </fieldset>
          <${PlanFields} form=${plan} onChange=${setPlan} error=${action.error} />
          <p class="preview" aria-live="polite"><strong>Price preview:</strong> <span data-testid="price-preview">${pricePreview(basePrice(pricing, labels, currency), plan, currency)}</span></p>`
      : html`<h2>Plan parameters</h2>`}
    <fieldset>
      <legend>${isApiKey ? 'Other custom parameters' : 'Custom parameters'}</legend>
      <p class="hint">Shown to customers as plan features and returned by get_info. Values are JSON when they parse as JSON (1000, true), text otherwise.</p>
      ${rows.map(
        (row, index) => html`<div class="row">
          <${Field} label=${`Parameter ${index + 1} name`} name=${`custom-name-${index}`} value=${row.name} onInput=${(value: string) => setRow(index, { name: value })} />
          <${Field} label=${`Parameter ${index + 1} value`} name=${`custom-value-${index}`} value=${row.value} onInput=${(value: string) => setRow(index, { value })} />
          <button type="button" onClick=${() => setRows(rows.filter((_row, at) => at !== index))} aria-label=${`Remove parameter ${row.name || index + 1}`}>Remove</button>
        </div>`,
      )}
      <button type="button" onClick=${() => setRows([...rows, { name: '', value: '' }])}>Add a parameter</button>
    </fieldset>
    <${FormError} error=${action.error} fields=${FIELD_NAMES} />
    <${Notice}>${saved}<//>
    <div class="actions"><${Button} type="submit" variant="primary" busy=${action.busy}>Save<//></div>
  </form>`;
}

export function ProductPage({ id }: { id: number }) {
  const product = useLoad(() => call('admin/product/get', { id }), [id]);
  const labels = useLoad(periods, []);
  const [confirming, setConfirming] = useState(false);
  const remove = useAction();
  const data = product.data;
  return html`<h1>Product #${id}${data ? `: ${data.title}` : ''}</h1>
    <p><${Link} href="/admin/products">All products<//></p>
    <${ErrorMessage} error=${product.error} />
    <${ErrorMessage} error=${labels.error} />
    ${data === undefined && product.loading ? html`<${Loading} />` : null}
    ${data !== undefined
      ? html`<p>Type: <strong>${typeLabel(data.type)}</strong> · <${Badge} status=${data.status} /></p>
          <${ProductForm} product=${data} labels=${labels.data ?? {}} onSaved=${product.reload} />
          <section class="card" aria-labelledby="product-delete">
            <h2 id="product-delete">Delete</h2>
            <p>A product can be deleted only while no order uses it.</p>
            ${confirming
              ? html`<${Confirm}
                  question=${`Delete ${data.title}?`}
                  confirmLabel="Delete the product"
                  busy=${remove.busy}
                  onCancel=${() => setConfirming(false)}
                  onConfirm=${() =>
                    void remove.run(async () => {
                      await call('admin/product/delete', { id });
                      navigate('/admin/products');
                    })}
                />`
              : html`<button type="button" class="danger" onClick=${() => setConfirming(true)}>Delete the product…</button>`}
            <${ErrorMessage} error=${remove.error} />
          </section>`
      : null}`;
}
