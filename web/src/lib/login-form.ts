// The login form of both areas: why it is shown (the session ended), e-mail and password, the two-factor code once
// the server asks for it (207), the errors under their fields. The area gives the login action, what to check before
// sending and what follows a login; its page puts the heading and the links around it.
import { html } from 'htm/preact';
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { call } from './api.ts';
import { CodeField, needsSecondFactor } from './security.ts';
import { useStore, type Store } from './store.ts';
import { Button, Field, FormError, useAction } from './ui.ts';

export interface LoginFormProps {
  action: 'guest/client/login' | 'guest/staff/login';
  /** Why the form is shown, e.g. "Your session has ended" (the area's loginReason). */
  reason: Store<string | null>;
  /** A heading for the form, read by screen readers only (the page's own h1 is visible). */
  title?: string;
  /** Checks in the browser before sending; throws invalidField (see checks.ts). */
  validate?: (email: string, password: string) => void;
  onLoggedIn: () => Promise<unknown>;
  /** Shown between the reason and the form. */
  children?: ComponentChildren;
}

export function LoginForm({ action: path, reason: reasonStore, title, validate, onLoggedIn, children }: LoginFormProps) {
  const reason = useStore(reasonStore);
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  // Shown once the server answered 207: the password was right and the account wants a two-factor code.
  const [needCode, setNeedCode] = useState(false);
  const [code, setCode] = useState('');
  const action = useAction();
  const submit = (event: Event): void => {
    event.preventDefault();
    void action.run(async () => {
      validate?.(email, password);
      try {
        await call(path, { email, password, ...(needCode && { code: code.trim() }) });
      } catch (error) {
        if (!needsSecondFactor(error)) throw error;
        setNeedCode(true);
        return;
      }
      reasonStore.set(null);
      await onLoggedIn();
    });
  };
  return html`${reason !== null ? html`<p class="error" role="alert">${reason}</p>` : null}
    ${children}
    <form class="card" onSubmit=${submit} aria-labelledby=${title !== undefined ? 'login-title' : undefined} novalidate>
      ${title !== undefined ? html`<h2 id="login-title" class="sr-only">${title}</h2>` : null}
      <${Field} label="E-mail" name="email" type="email" autocomplete="username" required value=${email} onInput=${setEmail} error=${action.error} />
      <${Field} label="Password" name="password" type="password" autocomplete="current-password" required value=${password} onInput=${setPassword} error=${action.error} />
      ${needCode ? html`<${CodeField} value=${code} onInput=${setCode} error=${action.error} />` : null}
      <${FormError} error=${action.error} fields=${['email', 'password', 'code']} />
      <div class="actions"><${Button} type="submit" variant="primary" busy=${action.busy}>${needCode ? 'Verify and log in' : 'Log in'}<//></div>
    </form>`;
}
