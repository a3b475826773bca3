// Staff pages for selling without staff (CONTRACT §8): the settings (company, invoices, payments, secrets), tax
// rules and coupons.
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { call, type Params } from '../lib/api.ts';
import { useCountryOptions } from '../lib/countries.ts';
import { formatDate } from '../lib/format.ts';
import { announce, Button, Confirm, ErrorMessage, Field, FormError, Loading, Notice, useAction, useLoad } from '../lib/ui.ts';
import type { PromoRecord, TaxRecord } from '../lib/types.ts';
import { DataTable, filled } from './common.ts';
import { SecretField, type SecretName } from './settings-secrets.ts';
import { useLocation } from '../lib/router.ts';
import { EuVatSection } from './eu-vat-rates.ts';

const TEXT_SETTINGS = [
  ['company_name', 'Company name'],
  ['company_email', 'Company e-mail'],
  ['company_address_1', 'Address'],
  ['company_address_2', 'Address (line 2)'],
  ['company_address_3', 'Address (line 3)'],
  ['company_city', 'City'],
  ['company_postcode', 'Postcode'],
  ['company_vat_number', 'VAT number'],
  ['company_logo_url', 'Logo URL'],
  ['invoice_prefix', 'Invoice number prefix'],
  ['invoice_next_number', 'Next invoice number'],
  ['credit_note_prefix', 'Credit note number prefix'],
  ['dunning_retry_days', 'Retry failed card charges after (days)'],
  ['invoice_reminder_days', 'Invoice reminders (days from due date)'],
  ['funds_min_amount', 'Smallest top-up (empty: no minimum)'],
  ['funds_max_amount', 'Largest top-up (empty: no maximum)'],
  ['vies_url', 'VIES REST API base URL (EU VAT number checks)'],
  ['ip_country_header', 'Header with the buyer’s IP country (e.g. CF-IPCountry; empty: none)'],
] as const;
const STRIPE_SECRETS = ['stripe_secret_key', 'stripe_webhook_secret'] as const;
const MAIL_SECRETS = ['smtp_url', 'smtp_password'] as const;
const SECRET_SETTINGS: readonly SecretName[] = [...STRIPE_SECRETS, ...MAIL_SECRETS];
const BOOLEAN_SETTINGS = [
  ['require_email_verification', 'Require e-mail verification at sign-up'],
  ['auto_pay_default', 'Charge saved cards automatically by default'],
  ['show_staff_login_link', 'Link to the staff login in the client area’s footer'],
  ['credits_pay_invoices', 'Pay renewals and overage from the client’s balance when it covers them'],
  ['eu_vat', 'EU VAT rules (company country in the EU): reverse charge, OSS, VIES checks'],
  ['tax_inclusive', 'Prices include tax (the buyer pays the price shown)'],
] as const;

function asText(value: unknown): string {
  if (Array.isArray(value)) return value.join(',');
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return String(value);
  return '';
}

export function SettingsPage() {
  const settings = useLoad(() => call('admin/system/settings_get'), []);
  const countries = useCountryOptions();
  const [form, setForm] = useState<Record<string, string>>({});
  const [saved, setSaved] = useState<string | null>(null);
  const action = useAction();
  const section = useLocation().query.get('section');
  // "Settings → Mail" (the admin banner's link): bring the mail section into view once the form is there.
  useEffect(() => {
    if (section !== 'mail' || settings.data === undefined) return;
    const heading = document.getElementById('settings-mail');
    heading?.scrollIntoView();
    heading?.focus();
  }, [section, settings.data === undefined]);
  useEffect(() => {
    if (settings.data === undefined) return;
    const values: Record<string, string> = {};
    for (const [name] of [...TEXT_SETTINGS, ...BOOLEAN_SETTINGS]) values[name] = asText(settings.data[name]);
    values.company_country = asText(settings.data.company_country);
    values.payment_instructions = asText(settings.data.payment_instructions);
    setForm(values);
  }, [settings.data]);
  const submit = (event: Event): void => {
    event.preventDefault();
    setSaved(null);
    // Secrets left blank keep their stored value; typing one replaces it.
    const params: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(form)) {
      if ((SECRET_SETTINGS as readonly string[]).includes(name) && value === '') continue;
      params[name] = value;
    }
    void action.run(async () => {
      await call('admin/system/settings_update', params);
      setSaved('Settings saved. Changes take effect at once, without a restart.');
      // Typed secrets are stored now: empty their fields, so the page shows the stored value as in force.
      setForm(Object.fromEntries(Object.entries(form).filter(([name]) => !(SECRET_SETTINGS as readonly string[]).includes(name))));
      settings.reload();
    });
  };
  const field = (name: string, label: string, extra: Record<string, unknown> = {}) =>
    html`<${Field} label=${label} name=${name} value=${form[name] ?? ''} onInput=${(value: string) => setForm({ ...form, [name]: value })} error=${action.error} ...${extra} />`;
  const names = [...[...TEXT_SETTINGS, ...BOOLEAN_SETTINGS].map(([name]) => name), ...SECRET_SETTINGS];
  const secret = (name: SecretName) =>
    html`<${SecretField}
      name=${name}
      source=${settings.data?.[`${name}_source`]}
      value=${form[name] ?? ''}
      onInput=${(value: string) => setForm({ ...form, [name]: value })}
      error=${action.error}
      onCleared=${settings.reload}
    />`;
  return html`<h1>Settings</h1>
    <${ErrorMessage} error=${settings.error} />
    ${settings.data === undefined && settings.loading ? html`<${Loading} />` : null}
    ${settings.data !== undefined
      ? html`<form class="card" onSubmit=${submit} aria-labelledby="settings-company">
          <h2 id="settings-company">Company (shown on every invoice)</h2>
          <div class="row">
            ${TEXT_SETTINGS.slice(0, 9).map(([name, label]) => field(name, label))}
            ${field('company_country', 'Country', { options: countries })}
          </div>
          <h2>Invoices and payments</h2>
          <div class="row">
            ${TEXT_SETTINGS.slice(9).map(([name, label]) => field(name, label))}
            ${BOOLEAN_SETTINGS.map(([name, label]) => field(name, label, { options: [['true', 'Yes'], ['false', 'No']] }))}
          </div>
          ${field('payment_instructions', 'Payment instructions (manual payment)', { type: 'textarea', rows: 3 })}
          <h2 id="settings-stripe">Card payments (Stripe)</h2>
          <p class="hint">Secrets are stored encrypted and never shown again. Leave a field blank to keep its value.</p>
          <div class="row">${STRIPE_SECRETS.map(secret)}</div>
          <h2 id="settings-mail" tabindex="-1">Mail</h2>
          <p class="hint">Without an SMTP server, messages wait in the mail log and nobody receives them.</p>
          <div class="row">${MAIL_SECRETS.map(secret)}</div>
          <${FormError} error=${action.error} fields=${[...names, 'company_country', 'payment_instructions']} />
          <${Notice}>${saved}<//>
          <div class="actions"><${Button} type="submit" variant="primary" busy=${action.busy}>Save settings<//></div>
        </form>`
      : null}`;
}

export function TaxesPage() {
  const taxes = useLoad(() => call('admin/invoice/tax_get_list', { per_page: 500 }), []);
  const countries = useCountryOptions();
  const [form, setForm] = useState({ name: '', rate: '', country: '', state: '' });
  const create = useAction();
  const remove = useAction();
  const [deleting, setDeleting] = useState<number | null>(null);
  const submit = (event: Event): void => {
    event.preventDefault();
    void create.run(async () => {
      // Empty fields are left out: the server names a missing one (422) and the form shows it under its field.
      await call('admin/invoice/tax_create', filled(form) as Params<'admin/invoice/tax_create'>);
      setForm({ name: '', rate: '', country: '', state: '' });
      announce('Tax rule added');
      taxes.reload();
    });
  };
  const confirmDelete = (): void => {
    void remove.run(async () => {
      if (deleting === null) return;
      await call('admin/invoice/tax_delete', { id: deleting });
      setDeleting(null);
      taxes.reload();
    });
  };
  return html`<h1>Taxes</h1>
    <p>Prices exclude tax unless Settings say they include it. An invoice takes the rule for the buyer's country and state, else its country's, else the rule without a country; with the EU VAT rules on, the EU rates below decide instead (docs/eu-vat.md). Tax-exempt clients pay none.</p>
    <form class="card" onSubmit=${submit} aria-labelledby="new-tax">
      <h2 id="new-tax">New tax rule</h2>
      <div class="row">
        <${Field} label="Name" name="name" required value=${form.name} onInput=${(name: string) => setForm({ ...form, name })} error=${create.error} />
        <${Field} label="Rate (%)" name="rate" required inputmode="decimal" value=${form.rate} onInput=${(rate: string) => setForm({ ...form, rate })} error=${create.error} />
        <${Field} label="Country" name="country" value=${form.country} options=${countries} onInput=${(country: string) => setForm({ ...form, country })} error=${create.error} />
        <${Field} label="State" name="state" value=${form.state} onInput=${(state: string) => setForm({ ...form, state })} error=${create.error} />
      </div>
      <${FormError} error=${create.error} fields=${['name', 'rate', 'country', 'state']} />
      <${Button} type="submit" variant="primary" busy=${create.busy}>Add tax rule<//>
    </form>
    <${ErrorMessage} error=${taxes.error ?? remove.error} />
    ${deleting !== null ? html`<${Confirm} question="Delete this tax rule? Invoices already issued keep their tax." confirmLabel="Delete" busy=${remove.busy} onConfirm=${confirmDelete} onCancel=${() => setDeleting(null)} />` : null}
    ${taxes.data !== undefined
      ? html`<${DataTable}
          caption="Tax rules"
          busy=${taxes.loading}
          rows=${taxes.data.list}
          columns=${[
            ['Name', (tax: TaxRecord) => tax.name],
            ['Rate', (tax: TaxRecord) => `${tax.rate}%`, 'num'],
            ['Country', (tax: TaxRecord) => tax.country ?? 'Everywhere'],
            ['State', (tax: TaxRecord) => tax.state ?? '—'],
            ['', (tax: TaxRecord) => html`<${Button} variant="danger" onClick=${() => setDeleting(tax.id)} label=${`Delete tax rule ${tax.name}`}>Delete<//>`],
          ]}
        />`
      : null}
    <${EuVatSection} />`;
}

const EMPTY_COUPON = { code: '', type: 'percentage', value: '', max_uses: '', end_at: '', products: '', periods: '', recurring: 'false', once_per_client: 'false' };

function list(text: string): string[] | undefined {
  const items = text.split(',').map((item) => item.trim()).filter((item) => item !== '');
  return items.length === 0 ? undefined : items;
}

export function CouponsPage() {
  const promos = useLoad(() => call('admin/product/promo_get_list', { per_page: 500 }), []);
  const [form, setForm] = useState(EMPTY_COUPON);
  const create = useAction();
  const toggle = useAction();
  const set = (name: keyof typeof EMPTY_COUPON) => (value: string) => setForm({ ...form, [name]: value });
  const submit = (event: Event): void => {
    event.preventDefault();
    void create.run(async () => {
      await call('admin/product/promo_create', {
        // Empty fields are left out: the server names a missing one (422) and the form shows it under its field.
        ...(filled({ code: form.code, type: form.type, value: form.value, max_uses: form.max_uses, end_at: form.end_at }) as Pick<Params<'admin/product/promo_create'>, 'code' | 'type' | 'value'>),
        products: list(form.products)?.map(Number),
        periods: list(form.periods),
        recurring: form.recurring === 'true',
        once_per_client: form.once_per_client === 'true',
      });
      setForm(EMPTY_COUPON);
      announce('Coupon created');
      promos.reload();
    });
  };
  const setActive = (promo: PromoRecord): void => {
    void toggle.run(async () => {
      await call('admin/product/promo_update', { id: promo.id, active: !promo.active });
      promos.reload();
    });
  };
  return html`<h1>Coupons</h1>
    <form class="card" onSubmit=${submit} aria-labelledby="new-coupon">
      <h2 id="new-coupon">New coupon</h2>
      <div class="row">
        <${Field} label="Code" name="code" required value=${form.code} onInput=${set('code')} error=${create.error} />
        <${Field} label="Type" name="type" value=${form.type} onInput=${set('type')} options=${[['percentage', 'Percentage'], ['absolute', 'Fixed amount']]} error=${create.error} />
        <${Field} label="Value (percent or amount)" name="value" required inputmode="decimal" value=${form.value} onInput=${set('value')} error=${create.error} />
        <${Field} label="Maximum uses (blank = unlimited)" name="max_uses" inputmode="numeric" value=${form.max_uses} onInput=${set('max_uses')} error=${create.error} />
        <${Field} label="Ends (YYYY-MM-DD)" name="end_at" value=${form.end_at} onInput=${set('end_at')} error=${create.error} />
        <${Field} label="Only product ids (comma-separated)" name="products" value=${form.products} onInput=${set('products')} error=${create.error} />
        <${Field} label="Only periods (e.g. 1M,1Y)" name="periods" value=${form.periods} onInput=${set('periods')} error=${create.error} />
        <${Field} label="Also on renewals" name="recurring" value=${form.recurring} onInput=${set('recurring')} options=${[['false', 'No'], ['true', 'Yes']]} error=${create.error} />
        <${Field} label="Once per client" name="once_per_client" value=${form.once_per_client} onInput=${set('once_per_client')} options=${[['false', 'No'], ['true', 'Yes']]} error=${create.error} />
      </div>
      <${FormError} error=${create.error} fields=${Object.keys(EMPTY_COUPON)} />
      <${Button} type="submit" variant="primary" busy=${create.busy}>Create coupon<//>
    </form>
    <${ErrorMessage} error=${promos.error ?? toggle.error} />
    ${promos.data !== undefined
      ? html`<${DataTable}
          caption="Coupons"
          busy=${promos.loading}
          rows=${promos.data.list}
          columns=${[
            ['Code', (promo: PromoRecord) => promo.code],
            ['Value', (promo: PromoRecord) => (promo.type === 'percentage' ? `${promo.value}%` : promo.value), 'num'],
            ['Used', (promo: PromoRecord) => `${promo.used}${promo.max_uses === null ? '' : ` / ${promo.max_uses}`}`, 'num'],
            ['Renewals', (promo: PromoRecord) => (promo.recurring ? 'Yes' : 'No')],
            ['Ends', (promo: PromoRecord) => formatDate(promo.end_at)],
            ['Active', (promo: PromoRecord) => html`<${Button} onClick=${() => setActive(promo)} label=${`${promo.active ? 'Deactivate' : 'Activate'} coupon ${promo.code}`}>${promo.active ? 'Deactivate' : 'Activate'}<//>`],
          ]}
        />`
      : null}`;
}
