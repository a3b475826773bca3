// The secrets on the Settings page (issue 21): for each, which value is in force — the one stored here (which beats
// the environment's), the environment's, or none — a field to store a new one (checked for shape by the server,
// which names the field on a 422), and a button that clears the stored value so the environment's applies again.
// A change takes effect at once in this process and within seconds in the others: no restart.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { call } from '../lib/api.ts';
import { Button, ErrorMessage, Field, Notice, useAction } from '../lib/ui.ts';

export type SecretName = 'stripe_secret_key' | 'stripe_webhook_secret' | 'smtp_url' | 'smtp_password';

export const SECRET_LABELS: Record<SecretName, string> = {
  stripe_secret_key: 'Stripe secret key',
  stripe_webhook_secret: 'Stripe webhook signing secret',
  smtp_url: 'SMTP server (smtp://user:password@host:587)',
  smtp_password: 'SMTP password',
};

/** What the page says about a secret's value in force. */
export function sourceText(name: SecretName, source: unknown): string {
  if (source === 'stored') return 'In force: the value stored here (it overrides the environment).';
  if (source === 'environment') return `In force: the environment's value (${name.toUpperCase()}).`;
  return 'Not set.';
}

export function SecretField({
  name,
  source,
  value,
  onInput,
  error,
  onCleared,
}: {
  name: SecretName;
  source: unknown;
  value: string;
  onInput: (value: string) => void;
  error: unknown;
  onCleared: () => void;
}) {
  const clear = useAction();
  const [done, setDone] = useState<string | null>(null);
  const run = (): void => {
    setDone(null);
    void clear.run(async () => {
      await call('admin/system/settings_update', { [name]: '' });
      setDone('Stored value cleared.');
      onCleared();
    });
  };
  return html`<div class="secret-setting" data-secret=${name}>
    <${Field}
      label=${SECRET_LABELS[name]}
      name=${name}
      value=${value}
      onInput=${onInput}
      type="password"
      autocomplete="off"
      error=${error}
      hint=${sourceText(name, source)}
    />
    ${source === 'stored' ? html`<${Button} busy=${clear.busy} onClick=${run}>Clear the stored ${SECRET_LABELS[name].replace(/ \(.*\)$/, '')}<//>` : null}
    <${ErrorMessage} error=${clear.error} />
    <${Notice}>${done}<//>
  </div>`;
}
