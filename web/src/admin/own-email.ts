// A staff member's change of their own e-mail address (issue 20, M4): the password and, with two-factor login on, a
// code are asked for; a link goes to the new address, and the address changes when it is followed
// (`/admin#/confirm-email/<token>`, which opens StaffConfirmEmailPage).
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { call } from '../lib/api.ts';
import { check, email as emailCheck, required as requiredField } from '../lib/checks.ts';
import { CodeField, leaveHashRoute } from '../lib/security.ts';
import { Button, ErrorMessage, Field, FormError, Notice, useAction, useLoad } from '../lib/ui.ts';
import { refreshStaff } from './common.ts';

export function StaffEmailForm({ current }: { current: string }) {
  const totp = useLoad(() => call('admin/profile/totp_get'), []);
  const needsCode = totp.data?.enabled === true;
  const [form, setForm] = useState({ email: '', password: '', code: '' });
  const [sent, setSent] = useState<string | null>(null);
  const action = useAction();
  const submit = (event: Event): void => {
    event.preventDefault();
    setSent(null);
    void action.run(async () => {
      check(emailCheck('email', form.email), requiredField('password', form.password), ...(needsCode ? [requiredField('code', form.code)] : []));
      await call('admin/profile/change_email', { email: form.email, password: form.password, ...(needsCode && { code: form.code }) });
      setSent(`We sent a confirmation link to ${form.email}. Your address changes when you follow it; ${current} will be told.`);
      setForm({ email: '', password: '', code: '' });
    });
  };
  return html`<form class="card" onSubmit=${submit} aria-labelledby="staff-email-title" novalidate>
    <h2 id="staff-email-title">Change e-mail address</h2>
    <p>Your address is <strong>${current}</strong>. Reset links go to it, so a change needs your password and is confirmed from the new mailbox.</p>
    <div class="row">
      <${Field} label="New e-mail address" name="email" type="email" autocomplete="email" required value=${form.email} onInput=${(value: string) => setForm({ ...form, email: value })} error=${action.error} />
      <${Field} label="Current password" name="password" type="password" autocomplete="current-password" required value=${form.password} onInput=${(value: string) => setForm({ ...form, password: value })} error=${action.error} />
    </div>
    ${needsCode ? html`<${CodeField} value=${form.code} onInput=${(value: string) => setForm({ ...form, code: value })} error=${action.error} />` : null}
    <${FormError} error=${action.error} fields=${['email', 'password', 'code']} />
    <${Notice}>${sent}<//>
    <div class="actions"><${Button} type="submit" variant="primary" busy=${action.busy}>Send the confirmation link<//></div>
  </form>`;
}

/** Opened from the confirmation mail: `/admin#/confirm-email/<token>`; confirms at once. */
export function StaffConfirmEmailPage({ hash }: { hash: string }) {
  const action = useAction();
  const [done, setDone] = useState(false);
  useEffect(() => {
    void action.run(async () => {
      await call('guest/staff/confirm_email', { hash });
      setDone(true);
      await refreshStaff().catch(() => undefined);
    });
  }, [hash]);
  return html`<h1>Confirm your e-mail address</h1>
    <section class="card" aria-busy=${action.busy ? 'true' : 'false'}>
      ${done ? html`<p class="notice" role="status" data-testid="email-confirmed">Thank you: your staff e-mail address is changed.</p>` : null}
      <${ErrorMessage} error=${action.error} />
      <div class="actions"><${Button} onClick=${() => leaveHashRoute('/admin/profile')}>Continue<//></div>
    </section>`;
}
