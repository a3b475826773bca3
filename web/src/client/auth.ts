// Log in and sign up. A guest cart moves to the account on either (the server does it).
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { call } from '../lib/api.ts';
import { check, email as emailCheck, newPassword, required } from '../lib/checks.ts';
import { ForgotPasswordForm, leaveHashRoute, ResetPasswordForm } from '../lib/security.ts';
import { LoginForm } from '../lib/login-form.ts';
import { ConfirmEmailPage } from '../lib/own-email.ts';
import { Link, navigate } from '../lib/router.ts';
import { useStore } from '../lib/store.ts';
import { Button, Field, FormError, Notice, useAction } from '../lib/ui.ts';
import { account, cartSummary, loginReason, refreshAccount, refreshCart } from './state.ts';
import { useBillingInfo } from '../lib/billing-info.ts';
import { useCountryOptions } from '../lib/countries.ts';

/** The `next` query parameter when it is a path of this site (never another origin). */
function nextPath(): string | null {
  const next = new URLSearchParams(location.search).get('next');
  return next !== null && next.startsWith('/') && !next.startsWith('//') && !next.includes('\\') ? next : null;
}

async function afterLogin(stay: boolean): Promise<void> {
  // Signing up logs in too: the reason a login form was shown is gone either way.
  loginReason.set(null);
  await refreshAccount();
  await refreshCart().catch(() => undefined);
  if (!stay) navigate(nextPath() ?? (cartSummary.get().count > 0 ? '/cart' : '/keys'));
}

/**
 * The login page at /login, and in place of a page that needs a login (`what` it shows: the user stays there after
 * logging in).
 */
export function LoginPage({ what }: { what?: string | undefined }) {
  const user = useStore(account);
  const stay = what !== undefined;
  return html`<h1>Log in</h1>
    ${what !== undefined ? html`<p>${`Log in to see ${what}.`}</p>` : null}
    <${LoginForm}
      action="guest/client/login"
      reason=${loginReason}
      title="Log in to your account"
      validate=${(email: string, password: string) => check(emailCheck('email', email), required('password', password))}
      onLoggedIn=${() => afterLogin(stay)}
    >
      ${user ? html`<${Notice}>You are logged in as ${user.email}.<//>` : null}
    <//>
    <p><${Link} href="/forgot">Forgot password?<//></p>
    <p>New here? <${Link} href="/signup">Create an account<//>.</p>`;
}

const SIGNUP_FIELDS = ['email', 'first_name', 'last_name', 'company', 'password', 'password_confirm', 'address_1', 'address_2', 'city', 'postcode', 'country'];

export function SignupPage() {
  const [form, setForm] = useState<Record<string, string>>({});
  const set = (name: string) => (value: string) => setForm((previous) => ({ ...previous, [name]: value }));
  const action = useAction();
  // While tax rules exist, tax depends on the buyer's country (issue 21 item 8): ask for it, and for the address the
  // invoice's "Bill to" carries. Checkout refuses without a country (422), so asking here saves a trip to the profile.
  const taxApplies = useBillingInfo()?.tax_applies === true;
  const countries = useCountryOptions();
  const submit = (event: Event): void => {
    event.preventDefault();
    void action.run(async () => {
      check(required('first_name', form.first_name), emailCheck('email', form.email), newPassword(form.password, form.password_confirm), taxApplies ? required('country', form.country) : null);
      const params: Record<string, string> = {};
      for (const [name, value] of Object.entries(form)) if (value !== '') params[name] = value;
      await call('guest/client/create', { ...params, email: form.email ?? '', first_name: form.first_name ?? '', password: form.password ?? '', password_confirm: form.password_confirm ?? '' });
      await afterLogin(true);
      navigate(cartSummary.get().count > 0 ? '/cart' : '/');
    });
  };
  const field = (name: string, label: string, extra: Record<string, unknown> = {}) =>
    html`<${Field} label=${label} name=${name} value=${form[name] ?? ''} onInput=${set(name)} error=${action.error} ...${extra} />`;
  return html`<h1>Create an account</h1>
    <form class="card" onSubmit=${submit} novalidate>
      <div class="row">
        ${field('first_name', 'First name', { required: true, autocomplete: 'given-name' })}
        ${field('last_name', 'Last name', { autocomplete: 'family-name' })}
      </div>
      ${field('email', 'E-mail', { type: 'email', required: true, autocomplete: 'email' })}
      ${field('company', 'Company', { autocomplete: 'organization' })}
      ${taxApplies
        ? html`<fieldset data-testid="billing-address">
            <legend>Billing address</legend>
            <p class="hint">Tax depends on your country; your invoices are addressed here.</p>
            ${field('address_1', 'Address', { autocomplete: 'address-line1' })}
            ${field('address_2', 'Address (line 2)', { autocomplete: 'address-line2' })}
            <div class="row">
              ${field('postcode', 'Postcode', { autocomplete: 'postal-code' })}
              ${field('city', 'City', { autocomplete: 'address-level2' })}
            </div>
            ${field('country', 'Country', { required: true, autocomplete: 'country', options: countries ?? [['', 'Loading…']] })}
          </fieldset>`
        : null}
      <div class="row">
        ${field('password', 'Password', { type: 'password', required: true, autocomplete: 'new-password', hint: '8 or more characters with a digit, a lower-case and an upper-case letter.' })}
        ${field('password_confirm', 'Repeat the password', { type: 'password', required: true, autocomplete: 'new-password' })}
      </div>
      <${FormError} error=${action.error} fields=${SIGNUP_FIELDS} />
      <div class="actions"><${Button} type="submit" variant="primary" busy=${action.busy}>Sign up<//></div>
    </form>
    <p>Already have an account? <${Link} href="/login">Log in<//>.</p>`;
}

export function ForgotPage() {
  return html`<h1>Forgot password?</h1>
    <${ForgotPasswordForm} path="guest/client/reset_password" />
    <p><${Link} href="/login">Back to the login page<//>.</p>`;
}

/** Opened from the reset mail: `/#/reset/<token>`. */
export function ResetPage({ hash }: { hash: string }) {
  return html`<h1>Reset your password</h1>
    <${ResetPasswordForm} path="guest/client/update_password" hash=${hash} onDone=${() => leaveHashRoute('/login')} />
    <p><a href="/forgot" onClick=${(event: Event) => {
      event.preventDefault();
      leaveHashRoute('/forgot');
    }}>Ask for a new link<//></p>`;
}

/** Opened from a confirmation mail (sign-up or change of e-mail): `/#/confirm-email/<token>`; confirms at once. */
export function ClientConfirmEmailPage({ hash }: { hash: string }) {
  return html`<${ConfirmEmailPage}
    action="guest/client/confirm_email"
    hash=${hash}
    doneText="Thank you: your e-mail address is confirmed."
    refreshAccount=${refreshAccount}
    next=${() => (account.get() ? '/profile' : '/login')}
  />`;
}
