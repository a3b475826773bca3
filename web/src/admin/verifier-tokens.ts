// Developers → Verifier tokens: the credentials the operator's app servers use to check keys (CONTRACT §11). Create
// (the token shown once), rotate (a new one shown once, the old one refused at once), revoke.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { call } from '../lib/api.ts';
import { formatDateTime } from '../lib/format.ts';
import { announce, Badge, Button, Checkbox, Confirm, ErrorMessage, Field, FormError, Loading, Notice, Pager, useAction, useLoad } from '../lib/ui.ts';
import type { VerifierRecord } from '../lib/types.ts';
import { DataTable } from './common.ts';
import { useRowActions } from './row-actions.ts';
import { SecretOnce } from './secret-once.ts';

const VerifierToken = ({ token, onDone }: { token: string; onDone: () => void }) =>
  html`<${SecretOnce} secret=${token} what="The verifier token" again="rotate it to get a new one" onDone=${onDone} />`;

function CreateVerifier({ onCreated }: { onCreated: (token: string) => void }) {
  const [name, setName] = useState('');
  const [portal, setPortal] = useState(false);
  const action = useAction();
  const submit = (event: Event): void => {
    event.preventDefault();
    void action.run(async () => {
      const created = await call('admin/staff/verifier_create', { name, scopes: portal ? ['portal'] : [] });
      setName('');
      setPortal(false);
      announce(`Verifier token #${created.id} created`);
      onCreated(created.token);
    });
  };
  return html`<form class="card" onSubmit=${submit} aria-labelledby="verifier-create">
    <h3 id="verifier-create">Create a verifier token</h3>
    <${Field} label="Name" name="name" required value=${name} onInput=${setName} error=${action.error} hint="Which app server uses it, e.g. “Production API”" />
    <${Checkbox} label="Also make customer-portal links (the portal scope)" name="portal" checked=${portal} onChange=${setPortal} />
    <${FormError} error=${action.error} fields=${['name']} />
    <div class="actions"><${Button} type="submit" variant="primary" busy=${action.busy}>Create token<//></div>
  </form>`;
}

export function VerifierTokensSection() {
  const [page, setPage] = useState(1);
  const verifiers = useLoad(() => call('admin/staff/verifier_get_list', { page, per_page: 25 }), [page]);
  const [token, setToken] = useState<string | null>(null);
  const [revoking, setRevoking] = useState<number | null>(null);
  const { working, message, setMessage, error, act } = useRowActions();
  const rotate = (verifier: VerifierRecord): void =>
    act(`rotate-${verifier.id}`, async () => {
      const rotated = await call('admin/staff/verifier_rotate', { id: verifier.id });
      setToken(rotated.token);
      setMessage(`Verifier token #${verifier.id} rotated: the old token no longer works.`);
      verifiers.reload();
    });
  const revoke = (id: number): void =>
    act(`revoke-${id}`, async () => {
      await call('admin/staff/verifier_revoke', { id });
      setRevoking(null);
      setMessage(`Verifier token #${id} revoked.`);
      verifiers.reload();
    });
  return html`<section aria-labelledby="verifiers-heading">
    <h2 id="verifiers-heading">Verifier tokens</h2>
    <p>
      Your app servers check their users' API keys with a verifier token: it may call <code>admin/serviceapikey/check</code>,
      <code>get_info</code>, <code>report_usage</code> and the key events stream, and nothing else. Give each server its own token, so one
      can be rotated or revoked without touching the others.
    </p>
    <${CreateVerifier}
      onCreated=${(fresh: string) => {
        setToken(fresh);
        setMessage(null);
        verifiers.reload();
      }}
    />
    <${ErrorMessage} error=${error} />
    <${ErrorMessage} error=${verifiers.error} />
    <${Notice}>${message}<//>
    ${token !== null ? html`<${VerifierToken} token=${token} onDone=${() => setToken(null)} />` : null}
    ${verifiers.data
      ? html`<${DataTable}
          caption="Verifier tokens"
          busy=${verifiers.loading}
          rows=${verifiers.data.list}
          columns=${[
            ['#', (v: VerifierRecord) => v.id],
            ['Name', (v: VerifierRecord) => v.name],
            ['Scopes', (v: VerifierRecord) => (v.scopes.length === 0 ? 'Verify keys' : `Verify keys, ${v.scopes.join(', ')}`)],
            ['Status', (v: VerifierRecord) => html`<${Badge} status=${v.status} />`],
            ['Created', (v: VerifierRecord) => formatDateTime(v.created_at)],
            ['Last changed', (v: VerifierRecord) => formatDateTime(v.updated_at)],
            [
              'Actions',
              (v: VerifierRecord) =>
                revoking === v.id
                  ? html`<${Confirm}
                      question=${`Revoke verifier token #${v.id} (${v.name})? Servers using it are refused at once.`}
                      confirmLabel="Revoke"
                      busy=${working === `revoke-${v.id}`}
                      onConfirm=${() => revoke(v.id)}
                      onCancel=${() => setRevoking(null)}
                    />`
                  : html`<div class="row">
                      <${Button} label=${`Rotate verifier token ${v.id}`} busy=${working === `rotate-${v.id}`} onClick=${() => rotate(v)}>Rotate<//>
                      <${Button} label=${`Revoke verifier token ${v.id}`} variant="danger" onClick=${() => setRevoking(v.id)}>Revoke<//>
                    </div>`,
            ],
          ]}
        />`
      : verifiers.loading
        ? html`<${Loading} />`
        : null}
    <${Pager} page=${verifiers.data} onPage=${setPage} label="Verifier token pages" />
  </section>`;
}
