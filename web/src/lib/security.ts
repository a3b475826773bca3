// Account security pieces shared by the client area and the admin panel: "Forgot password?", the reset page a mail
// link opens, the code prompt at login, and two-factor set-up with a QR code drawn here (no outside service).
import { html } from 'htm/preact';
import QRCode from 'qrcode';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, call, type Action } from './api.ts';
import { check, newPassword } from './checks.ts';
import { Button, ErrorMessage, Field, FormError, Notice, useAction, useLoad } from './ui.ts';

/**
 * Links in mails carry their token in the fragment (`/#/reset/<token>`): browsers never send a fragment to a server,
 * so the token stays out of access logs and Referer headers. Returns the route and token, or null.
 */
export function useHashRoute(): { name: 'reset' | 'confirm-email'; token: string } | null {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const listener = (): void => setHash(location.hash);
    window.addEventListener('hashchange', listener);
    return () => window.removeEventListener('hashchange', listener);
  }, []);
  const found = /^#\/(reset|confirm-email)\/([A-Za-z0-9_-]+)$/.exec(hash);
  return found === null ? null : { name: found[1] as 'reset' | 'confirm-email', token: found[2]! };
}

/** Leaves a hash route: drops the token from the address bar (and from history) and goes to `path`. */
export function leaveHashRoute(path: string): void {
  history.replaceState(null, '', path);
  window.dispatchEvent(new HashChangeEvent('hashchange'));
  window.dispatchEvent(new PopStateEvent('popstate'));
}

/** True when a login attempt was refused because a two-factor code is needed (code 207). */
export function needsSecondFactor(error: unknown): boolean {
  return error instanceof ApiError && error.code === 207;
}

/** The extra field a login form shows once the server asked for a code. */
export function CodeField({ value, onInput, error }: { value: string; onInput: (value: string) => void; error: unknown }) {
  return html`<${Field}
    label="Two-factor code"
    name="code"
    autocomplete="one-time-code"
    inputmode="numeric"
    required
    value=${value}
    onInput=${onInput}
    error=${error}
    hint="The 6-digit code from your authenticator app, or one of your recovery codes."
  />`;
}

export function ForgotPasswordForm({ path }: { path: 'guest/client/reset_password' | 'guest/staff/passwordreset' }) {
  const [email, setEmail] = useState('');
  const [sent, setSent] = useState(false);
  const action = useAction();
  const submit = (event: Event): void => {
    event.preventDefault();
    void action.run(async () => {
      await call(path, { email });
      setSent(true);
    });
  };
  return html`<form class="card" onSubmit=${submit} aria-labelledby="forgot-title" novalidate>
    <h2 id="forgot-title">Reset your password</h2>
    <p>Enter the e-mail address of your account. We send a link to set a new password; it works once, for 30 minutes.</p>
    <${Field} label="E-mail" name="email" type="email" autocomplete="username" required value=${email} onInput=${setEmail} error=${action.error} />
    <${FormError} error=${action.error} fields=${['email']} />
    <${Notice}>${sent ? 'If this address belongs to an account, a reset link is on its way. Check your mailbox.' : null}<//>
    <div class="actions"><${Button} type="submit" variant="primary" busy=${action.busy}>Send the reset link<//></div>
  </form>`;
}

export function ResetPasswordForm({ path, hash, onDone }: { path: Extract<Action, `guest/${string}/update_password`>; hash: string; onDone: () => void }) {
  const [form, setForm] = useState({ password: '', password_confirm: '' });
  const [done, setDone] = useState(false);
  const action = useAction();
  const submit = (event: Event): void => {
    event.preventDefault();
    void action.run(async () => {
      check(newPassword(form.password, form.password_confirm));
      await call(path, { hash, ...form });
      setDone(true);
    });
  };
  if (done) {
    return html`<section class="card" aria-labelledby="reset-done">
      <h2 id="reset-done">Password changed</h2>
      <p class="notice" role="status">Your password has been changed, and every session of your account has ended. Log in with the new password.</p>
      <div class="actions"><${Button} variant="primary" onClick=${onDone}>Go to the login page<//></div>
    </section>`;
  }
  const set = (name: keyof typeof form) => (value: string) => setForm({ ...form, [name]: value });
  return html`<form class="card" onSubmit=${submit} aria-labelledby="reset-title" novalidate>
    <h2 id="reset-title">Choose a new password</h2>
    <div class="row">
      <${Field} label="New password" name="password" type="password" autocomplete="new-password" required value=${form.password} onInput=${set('password')} error=${action.error} hint="8 or more characters with a digit, a lower-case and an upper-case letter." />
      <${Field} label="Repeat the new password" name="password_confirm" type="password" autocomplete="new-password" required value=${form.password_confirm} onInput=${set('password_confirm')} error=${action.error} />
    </div>
    <${FormError} error=${action.error} fields=${['password', 'password_confirm']} />
    <div class="actions"><${Button} type="submit" variant="primary" busy=${action.busy}>Set the new password<//></div>
  </form>`;
}

/** The QR code of an otpauth:// URL as an SVG image, drawn in the browser. */
function QrImage({ url }: { url: string }) {
  const [src, setSrc] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    void QRCode.toString(url, { type: 'svg', margin: 2, errorCorrectionLevel: 'M' }).then((svg) => {
      if (live) setSrc(`data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg)}`);
    });
    return () => {
      live = false;
    };
  }, [url]);
  return src === null ? null : html`<img class="qr" src=${src} width="200" height="200" alt="QR code for your authenticator app" data-testid="totp-qr" />`;
}

/** Two-factor login in a profile page: turn on (QR code, first code, recovery codes shown once) and off. */
export function TwoFactorSection({ role }: { role: 'client' | 'admin' }) {
  const status = useLoad(() => call(`${role}/profile/totp_get`), []);
  const [setup, setSetup] = useState<{ secret: string; otpauth_url: string } | null>(null);
  const [code, setCode] = useState('');
  const [recovery, setRecovery] = useState<string[] | null>(null);
  const [disabling, setDisabling] = useState(false);
  const [off, setOff] = useState({ password: '', code: '' });
  const [message, setMessage] = useState<string | null>(null);
  const action = useAction();

  const start = (): void => {
    setMessage(null);
    void action.run(async () => {
      setSetup(await call(`${role}/profile/totp_setup`));
      setCode('');
    });
  };
  const enable = (event: Event): void => {
    event.preventDefault();
    void action.run(async () => {
      const result = await call(`${role}/profile/totp_enable`, { code: code.trim() });
      setRecovery(result.recovery_codes);
      setSetup(null);
      status.reload();
    });
  };
  const disable = (event: Event): void => {
    event.preventDefault();
    void action.run(async () => {
      await call(`${role}/profile/totp_disable`, off);
      setDisabling(false);
      setOff({ password: '', code: '' });
      setRecovery(null);
      setMessage('Two-factor login is off.');
      status.reload();
    });
  };

  const enabled = status.data?.enabled === true;
  return html`<section class="card" aria-labelledby="totp-title" aria-busy=${status.loading ? 'true' : 'false'}>
    <h2 id="totp-title">Two-factor login</h2>
    <${ErrorMessage} error=${status.error} />
    ${status.data === undefined
      ? null
      : enabled
        ? html`<p data-testid="totp-state">Two-factor login is <strong>on</strong>: logging in needs a code from your authenticator app. Recovery codes left: ${status.data.recovery_codes_left}.</p>`
        : html`<p data-testid="totp-state">Two-factor login is <strong>off</strong>. Turn it on to ask for a code from an authenticator app at each login.</p>`}
    ${recovery !== null
      ? html`<div class="notice" role="status">
          <p><strong>Save these recovery codes now.</strong> Each works once in place of a code, for example if you lose your phone. They are not shown again.</p>
          <ul class="recovery-codes" data-testid="recovery-codes">${recovery.map((item) => html`<li><code>${item}</code></li>`)}</ul>
          <${Button} onClick=${() => setRecovery(null)}>I have saved them<//>
        </div>`
      : null}
    ${!enabled && setup === null && status.data !== undefined
      ? html`<div class="actions"><${Button} variant="primary" busy=${action.busy} onClick=${start}>Turn on two-factor login<//></div>`
      : null}
    ${setup !== null
      ? html`<form onSubmit=${enable} novalidate>
          <p>Scan this QR code with an authenticator app (or type the key), then enter the 6-digit code it shows.</p>
          <${QrImage} url=${setup.otpauth_url} />
          <p>Key: <code data-testid="totp-secret">${setup.secret}</code></p>
          <${Field} label="Code from the app" name="code" autocomplete="one-time-code" inputmode="numeric" required value=${code} onInput=${setCode} error=${action.error} />
          <${FormError} error=${action.error} fields=${['code']} />
          <div class="actions">
            <${Button} type="submit" variant="primary" busy=${action.busy}>Turn on<//>
            <${Button} onClick=${() => setSetup(null)}>Cancel<//>
          </div>
        </form>`
      : null}
    ${enabled && !disabling ? html`<div class="actions"><button type="button" class="danger" onClick=${() => setDisabling(true)}>Turn off two-factor login…</button></div>` : null}
    ${enabled && disabling
      ? html`<form onSubmit=${disable} novalidate>
          <div class="row">
            <${Field} label="Password" name="password" type="password" autocomplete="current-password" required value=${off.password} onInput=${(value: string) => setOff({ ...off, password: value })} error=${action.error} />
            <${Field} label="Code or recovery code" name="code" autocomplete="one-time-code" required value=${off.code} onInput=${(value: string) => setOff({ ...off, code: value })} error=${action.error} />
          </div>
          <${FormError} error=${action.error} fields=${['password', 'code']} />
          <div class="actions">
            <${Button} type="submit" variant="danger" busy=${action.busy}>Turn off<//>
            <${Button} onClick=${() => setDisabling(false)}>Cancel<//>
          </div>
        </form>`
      : null}
    ${setup === null && !disabling ? html`<${FormError} error=${action.error} />` : null}
    <${Notice}>${message}<//>
  </section>`;
}


