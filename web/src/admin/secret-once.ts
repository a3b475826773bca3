// A secret shown once (a webhook signing secret, a verifier token), with a copy button.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { Button, copyText } from '../lib/ui.ts';

export function SecretOnce({ secret, what, again, onDone }: { secret: string; what: string; again: string; onDone: () => void }) {
  const [copied, setCopied] = useState(false);
  return html`<div class="card" role="status">
    <p><strong>${what} — copy it now; it is not shown again</strong> (${again}):</p>
    <p><code class="secret">${secret}</code></p>
    <${Button} onClick=${() => void copyText(secret).then((ok) => setCopied(ok))}>${copied ? 'Copied' : 'Copy'}<//>
    <button type="button" onClick=${onDone}>Done</button>
  </div>`;
}
