// The client's profile, password and own API token.
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { call } from '../lib/api.ts';
import { useStore } from '../lib/store.ts';
import { ApiTokenSection, PasswordForm } from '../lib/account.ts';
import { TwoFactorSection } from '../lib/security.ts';
import { Button, Field, FormError, Notice, useAction, useLoad } from '../lib/ui.ts';
import { VatStatusList } from '../lib/vat-status.ts';
import { account, refreshAccount } from './state.ts';
import { CardsSection } from './payments.ts';
import { useCountryOptions } from '../lib/countries.ts';
import { ChangeEmailForm } from '../lib/own-email.ts';

const PROFILE_FIELDS = [
  ['first_name', 'First name', 'given-name'],
  ['last_name', 'Last name', 'family-name'],
  ['company', 'Company', 'organization'],
  ['phone', 'Phone', 'tel'],
  ['address_1', 'Address', 'address-line1'],
  ['address_2', 'Address (line 2)', 'address-line2'],
  ['city', 'City', 'address-level2'],
  ['state', 'State or region', 'address-level1'],
  ['postcode', 'Postcode', 'postal-code'],
  ['country', 'Country', 'country'],
  ['vat_number', 'VAT number', 'off'],
] as const;

function ProfileForm() {
  const user = useStore(account);
  const [form, setForm] = useState<Record<string, string>>({});
  const [saved, setSaved] = useState<string | null>(null);
  const action = useAction();
  const countries = useCountryOptions();
  useEffect(() => {
    if (!user) return;
    const values: Record<string, string> = {};
    for (const [name] of PROFILE_FIELDS) values[name] = user[name] ?? '';
    setForm(values);
  }, [user?.updated_at]);
  const submit = (event: Event): void => {
    event.preventDefault();
    setSaved(null);
    void action.run(async () => {
      await call('client/profile/update', form);
      await refreshAccount();
      setSaved('Profile saved.');
    });
  };
  return html`<form class="card" onSubmit=${submit} aria-labelledby="profile-title">
    <h2 id="profile-title">Your details</h2>
    <p>E-mail: <strong>${user?.email}</strong></p>
    <div class="row">
      ${PROFILE_FIELDS.map(
        ([name, label, autocomplete]) =>
          html`<${Field}
            label=${label}
            name=${name}
            autocomplete=${autocomplete}
            required=${name === 'first_name'}
            value=${form[name] ?? ''}
            onInput=${(value: string) => setForm({ ...form, [name]: value })}
            error=${action.error}
            options=${name === 'country' ? countries : undefined}
          />`,
      )}
    </div>
    <${FormError} error=${action.error} fields=${PROFILE_FIELDS.map(([name]) => name)} />
    <${Notice}>${saved}<//>
    <div class="actions"><${Button} type="submit" variant="primary" busy=${action.busy}>Save<//></div>
  </form>`;
}

/** Shown when sign-ups must confirm their address: a way to get the link again. */
function ConfirmationSection() {
  const required = useLoad(() => call('guest/client/is_email_validation_required'), []);
  const [sent, setSent] = useState<string | null>(null);
  const action = useAction();
  if (required.data !== true) return null;
  const resend = (): void => {
    void action.run(async () => {
      await call('client/profile/resend_confirmation');
      setSent('A new confirmation link is on its way.');
    });
  };
  return html`<section class="card" aria-labelledby="confirm-title">
    <h2 id="confirm-title">E-mail confirmation</h2>
    <p>Orders need a confirmed e-mail address. Did not get the link, or did it expire?</p>
    <div class="actions"><${Button} busy=${action.busy} onClick=${resend}>Send the confirmation link again<//></div>
    <${FormError} error=${action.error} />
    <${Notice}>${sent}<//>
  </section>`;
}

/** What VIES said of the client's VAT number (issue 26): a valid one makes sales from another EU country reverse-charged. */
function VatSection() {
  const check = useLoad(() => call('client/profile/vat_status'), []);
  if (check.data === undefined || check.data.status === 'none') return null;
  return html`<section class="card" aria-labelledby="vat-title">
    <h2 id="vat-title">VAT number check</h2>
    <${VatStatusList} check=${check.data} />
  </section>`;
}

export function ProfilePage() {
  return html`<h1>Profile</h1>
    <${ProfileForm} />
    <${VatSection} />
    <${ConfirmationSection} />
    <${ChangeEmailForm}
      action="client/profile/change_email"
      titleId="email-title"
      sentText=${(email: string) => `We sent a confirmation link to ${email}. Your address changes when you follow it.`}
    />
    <${CardsSection} />
    <${PasswordForm} path="client/profile/change_password" />
    <${TwoFactorSection} role="client" />
    <${ApiTokenSection}
      read=${() => call('client/profile/api_key_get')}
      resetPath="client/profile/api_key_reset"
      usage="Scripts call the client API with HTTP Basic authentication: user name client, password this token."
    />`;
}
