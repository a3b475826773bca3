// Account sections shared by the client area and the admin panel: password change and the own API token.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { call, type Action } from './api.ts';
import { check, newPassword, required } from './checks.ts';
import { announce, Button, Confirm, ErrorMessage, Field, FormError, Notice, copyText, useAction } from './ui.ts';

/** The password change of either area: `client/profile/change_password` or `admin/profile/change_password`. */
export function PasswordForm({ path }: { path: Extract<Action, `${string}/profile/change_password`> }) {
  const [form, setForm] = useState({ current_password: '', password: '', password_confirm: '' });
  const [saved, setSaved] = useState<string | null>(null);
  const action = useAction();
  const submit = (event: Event): void => {
    event.preventDefault();
    setSaved(null);
    void action.run(async () => {
      check(required('current_password', form.current_password), newPassword(form.password, form.password_confirm));
      await call(path, form);
      setForm({ current_password: '', password: '', password_confirm: '' });
      setSaved('Password changed.');
    });
  };
  const set = (name: keyof typeof form) => (value: string) => setForm({ ...form, [name]: value });
  return html`<form class="card" onSubmit=${submit} aria-labelledby="password-title">
    <h2 id="password-title">Change password</h2>
    <${Field} label="Current password" name="current_password" type="password" autocomplete="current-password" required value=${form.current_password} onInput=${set('current_password')} error=${action.error} />
    <div class="row">
      <${Field} label="New password" name="password" type="password" autocomplete="new-password" required value=${form.password} onInput=${set('password')} error=${action.error} hint="8 or more characters with a digit, a lower-case and an upper-case letter." />
      <${Field} label="Repeat the new password" name="password_confirm" type="password" autocomplete="new-password" required value=${form.password_confirm} onInput=${set('password_confirm')} error=${action.error} />
    </div>
    <${FormError} error=${action.error} fields=${['current_password', 'password', 'password_confirm']} />
    <${Notice}>${saved}<//>
    <div class="actions"><${Button} type="submit" variant="primary" busy=${action.busy}>Change password<//></div>
  </form>`;
}

/** Shows the account's own API token (read on demand) and rotates it after a confirmation. */
export function ApiTokenSection({ read: readToken, resetPath, usage }: { read: () => Promise<string>; resetPath: 'admin/profile/generate_api_key' | 'client/profile/api_key_reset'; usage: string }) {
  const [token, setToken] = useState<string | null>(null);
  const [confirming, setConfirming] = useState(false);
  const [message, setMessage] = useState<string | null>(null);
  const read = useAction();
  const reset = useAction();
  const show = (): void => {
    if (token !== null) {
      setToken(null);
      return;
    }
    void read.run(async () => setToken(await readToken()));
  };
  const rotate = (): void => {
    void reset.run(async () => {
      setToken(await call(resetPath));
      setConfirming(false);
      setMessage('A new token was issued. The old one no longer works.');
    });
  };
  const copy = async (): Promise<void> => {
    if (token !== null && (await copyText(token))) {
      setMessage('Copied the token to the clipboard.');
      announce('Copied the token to the clipboard.');
    }
  };
  return html`<section class="card" aria-labelledby="token-title">
    <h2 id="token-title">API token</h2>
    <p>${usage}</p>
    <div class="key">
      <code data-testid="api-token">${token ?? '••••••••••••••••••••••••••••••••'}</code>
      <${Button} busy=${read.busy} onClick=${show}>${token === null ? 'Show token' : 'Hide token'}<//>
      ${token !== null ? html`<button type="button" onClick=${() => void copy()}>Copy token</button>` : null}
      ${!confirming ? html`<button type="button" class="danger" onClick=${() => setConfirming(true)}>Generate a new token…</button>` : null}
    </div>
    <${ErrorMessage} error=${read.error} />
    ${confirming
      ? html`<${Confirm}
          question="Generate a new API token? The current token stops working at once."
          confirmLabel="Generate a new token"
          busy=${reset.busy}
          onConfirm=${rotate}
          onCancel=${() => setConfirming(false)}
        />`
      : null}
    <${ErrorMessage} error=${reset.error} />
    <${Notice}>${message}<//>
  </section>`;
}
