// A change of one's own e-mail address, in both areas: the new address and the password (and, for staff with
// two-factor login on, a code) are asked for; a link goes to the new address, and the address changes when it is
// followed (`#/confirm-email/<token>`, which opens ConfirmEmailPage). Issue 20, M4 for staff.
import { html } from 'htm/preact';
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { call } from './api.ts';
import { check, email as emailCheck, required as requiredField } from './checks.ts';
import { CodeField, leaveHashRoute } from './security.ts';
import { Button, ErrorMessage, Field, FormError, Notice, useAction } from './ui.ts';

export interface ChangeEmailFormProps {
  action: 'client/profile/change_email' | 'admin/profile/change_email';
  /** The form's heading id (its accessible name). */
  titleId: string;
  /** Ask for a two-factor code too (staff with two-factor login on). */
  askCode?: boolean;
  /** What the notice says once the link is sent to `email`. */
  sentText: (email: string) => string;
  /** Shown under the heading. */
  children?: ComponentChildren;
}

export function ChangeEmailForm({ action: path, titleId, askCode = false, sentText, children }: ChangeEmailFormProps) {
  const [form, setForm] = useState({ email: '', password: '', code: '' });
  const [sent, setSent] = useState<string | null>(null);
  const action = useAction();
  const submit = (event: Event): void => {
    event.preventDefault();
    setSent(null);
    void action.run(async () => {
      check(emailCheck('email', form.email), requiredField('password', form.password), ...(askCode ? [requiredField('code', form.code)] : []));
      await call(path, { email: form.email, password: form.password, ...(askCode && { code: form.code }) });
      setSent(sentText(form.email));
      setForm({ email: '', password: '', code: '' });
    });
  };
  return html`<form class="card" onSubmit=${submit} aria-labelledby=${titleId} novalidate>
    <h2 id=${titleId}>Change e-mail address</h2>
    ${children}
    <div class="row">
      <${Field} label="New e-mail address" name="email" type="email" autocomplete="email" required value=${form.email} onInput=${(value: string) => setForm({ ...form, email: value })} error=${action.error} />
      <${Field} label="Current password" name="password" type="password" autocomplete="current-password" required value=${form.password} onInput=${(value: string) => setForm({ ...form, password: value })} error=${action.error} />
    </div>
    ${askCode ? html`<${CodeField} value=${form.code} onInput=${(value: string) => setForm({ ...form, code: value })} error=${action.error} />` : null}
    <${FormError} error=${action.error} fields=${askCode ? ['email', 'password', 'code'] : ['email', 'password']} />
    <${Notice}>${sent}<//>
    <div class="actions"><${Button} type="submit" variant="primary" busy=${action.busy}>Send the confirmation link<//></div>
  </form>`;
}

export interface ConfirmEmailPageProps {
  action: 'guest/client/confirm_email' | 'guest/staff/confirm_email';
  hash: string;
  /** The notice once confirmed. */
  doneText: string;
  /** Reads the account again (its address changed); a failure (no session) is ignored. */
  refreshAccount: () => Promise<unknown>;
  /** Where "Continue" leads. */
  next: () => string;
}

/** Opened from a confirmation mail (`#/confirm-email/<token>`); confirms at once. */
export function ConfirmEmailPage({ action: path, hash, doneText, refreshAccount, next }: ConfirmEmailPageProps) {
  const action = useAction();
  const [done, setDone] = useState(false);
  useEffect(() => {
    void action.run(async () => {
      await call(path, { hash });
      setDone(true);
      await refreshAccount().catch(() => undefined);
    });
  }, [hash]);
  return html`<h1>Confirm your e-mail address</h1>
    <section class="card" aria-busy=${action.busy ? 'true' : 'false'}>
      ${done ? html`<p class="notice" role="status" data-testid="email-confirmed">${doneText}</p>` : null}
      <${ErrorMessage} error=${action.error} />
      <div class="actions"><${Button} onClick=${() => leaveHashRoute(next())}>Continue<//></div>
    </section>`;
}
