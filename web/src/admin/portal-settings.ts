// Developers → Customer portal (issue 25, docs/portal.md): the origins allowed to frame the portal (the
// portal_frame_ancestors setting, also the allow-list of portal links' return URLs), and how to make a link.
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { call } from '../lib/api.ts';
import { announce, Button, ErrorMessage, Field, FormError, Notice, useAction, useLoad } from '../lib/ui.ts';

export function PortalSection() {
  const settings = useLoad(() => call('admin/system/settings_get'), []);
  const [origins, setOrigins] = useState('');
  const [saved, setSaved] = useState<string | null>(null);
  const action = useAction();
  useEffect(() => setOrigins(settings.data?.portal_frame_ancestors ?? ''), [settings.data]);
  const submit = (event: Event): void => {
    event.preventDefault();
    setSaved(null);
    void action.run(async () => {
      await call('admin/system/settings_update', { portal_frame_ancestors: origins });
      settings.reload();
      setSaved(origins.trim() === '' ? 'Saved: no site may frame the portal.' : 'Saved: the portal may be framed by these origins.');
      announce('Portal origins saved');
    });
  };
  return html`<section aria-labelledby="portal-heading">
    <h2 id="portal-heading">Customer portal</h2>
    <p>
      Your app can show a client their keys, usage, invoices and wallet: its server makes a single-use link with
      <code>admin/portal/session_create</code> (a verifier token with the portal scope, or staff holding <code>portal.session</code>)
      and frames it. List the origins of the pages that frame it; every other site is refused.
    </p>
    <form class="card" onSubmit=${submit} aria-label="Customer portal origins">
      <${Field}
        label="Origins allowed to frame the portal"
        name="portal_frame_ancestors"
        value=${origins}
        onInput=${setOrigins}
        error=${action.error}
        hint="Space- or comma-separated, e.g. https://app.example.com. Empty: the portal cannot be framed. Portal links' return URLs must be on these origins."
      />
      <${FormError} error=${action.error} fields=${['portal_frame_ancestors']} />
      <div class="actions"><${Button} type="submit" variant="primary" busy=${action.busy}>Save origins<//></div>
    </form>
    <${ErrorMessage} error=${settings.error} />
    <${Notice}>${saved}<//>
  </section>`;
}
