// Mail: the log of every message (sent, pending, failed, not sent) with resend, one message with its HTML shown in a
// sandboxed frame, the templates with an editor and a live preview, and a "send a test message" form.
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { call } from '../lib/api.ts';
import { formatDateTime } from '../lib/format.ts';
import { Link, navigate, useLocation } from '../lib/router.ts';
import { Badge, Button, Checkbox, DefinitionList, ErrorMessage, Field, FormError, Loading, Notice, Pager, useAction, useLoad } from '../lib/ui.ts';
import type { EmailRecord, TemplateRecord } from '../lib/types.ts';
import { ClientCell, DataTable, filled } from './common.ts';

const STATUS_OPTIONS = [
  ['', 'Any status'],
  ['pending', 'Pending (waiting or retrying)'],
  ['sent', 'Sent'],
  ['failed', 'Failed'],
  ['not_sent', 'Not sent (no SMTP server set)'],
] as const;

/** A message's HTML, shown without running anything in it: a frame with every sandbox restriction on. */
export function MailPreview({ html: content, title }: { html: string; title: string }) {
  return html`<iframe class="mail-preview" title=${title} sandbox="" srcdoc=${content} style="width: 100%; min-height: 18rem; border: 1px solid #ccc; background: #fff;"></iframe>`;
}

function SendTest({ onSent }: { onSent: (id: number) => void }) {
  const [to, setTo] = useState('');
  const [done, setDone] = useState<string | null>(null);
  const action = useAction();
  const submit = (event: Event): void => {
    event.preventDefault();
    setDone(null);
    void action.run(async () => {
      const id = await call('admin/email/send_test', { to });
      setDone(`Test message #${id} queued for ${to}. Its status below shows whether it was delivered.`);
      onSent(id);
    });
  };
  return html`<form class="card row" onSubmit=${submit} aria-labelledby="send-test">
    <h2 id="send-test" class="sr-only">Send a test message</h2>
    <${Field} label="Send a test message to" name="to" type="email" required value=${to} onInput=${setTo} error=${action.error} autocomplete="email" />
    <${Button} type="submit" busy=${action.busy}>Send test<//>
    <${FormError} error=${action.error} fields=${['to']} />
    <${Notice}>${done}<//>
  </form>`;
}

export function EmailsPage() {
  const { query } = useLocation();
  const [status, setStatus] = useState(query.get('status') ?? '');
  const [clientId, setClientId] = useState(query.get('client_id') ?? '');
  const [applied, setApplied] = useState({ status, clientId });
  const [page, setPage] = useState(1);
  const mails = useLoad(
    () => call('admin/email/email_get_list', { ...filled({ status: applied.status, client_id: applied.clientId === '' ? undefined : Number(applied.clientId) }), page, per_page: 25 }),
    [applied, page],
  );
  const resend = useAction();
  const [resending, setResending] = useState<number | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  const again = (mail: EmailRecord): void => {
    setResending(mail.id);
    setMessage(null);
    void resend
      .run(async () => {
        const id = await call('admin/email/email_resend', { id: mail.id });
        setMessage(`Message #${mail.id} queued again as #${id}.`);
        mails.reload();
      })
      .finally(() => setResending(null));
  };
  return html`<h1>Mail</h1>
    <p><${Link} href="/admin/email/templates">Edit the templates<//> · messages are sent by the outbox, retried after 1 min, 5 min, 30 min, 2 h and 12 h, then marked failed.</p>
    <${SendTest} onSent=${() => mails.reload()} />
    <form
      class="card row"
      role="search"
      aria-label="Filter messages"
      onSubmit=${(event: Event) => {
        event.preventDefault();
        setPage(1);
        setApplied({ status, clientId });
      }}
    >
      <${Field} label="Status" name="status" value=${status} onInput=${setStatus} options=${STATUS_OPTIONS} error=${mails.error} />
      <${Field} label="Client id" name="client_id" value=${clientId} onInput=${setClientId} inputmode="numeric" error=${mails.error} />
      <${Button} type="submit" busy=${mails.loading}>Filter<//>
      <${Button} onClick=${() => mails.reload()}>Refresh<//>
    </form>
    <${FormError} error=${mails.error} fields=${['status', 'client_id']} />
    <${ErrorMessage} error=${resend.error} />
    <${Notice}>${message}<//>
    ${mails.data
      ? html`<${DataTable}
          caption="Messages"
          busy=${mails.loading}
          rows=${mails.data.list}
          columns=${[
            ['#', (mail: EmailRecord) => html`<${Link} href=${`/admin/email/${mail.id}`}>${mail.id}<//>`],
            ['Queued', (mail: EmailRecord) => formatDateTime(mail.created_at)],
            ['To', (mail: EmailRecord) => (mail.client_id === null ? mail.recipients : html`<${Link} href=${`/admin/clients/${mail.client_id}`}>${mail.recipients}<//>`)],
            ['Subject', (mail: EmailRecord) => html`<${Link} href=${`/admin/email/${mail.id}`}>${mail.subject}<//>`],
            ['Template', (mail: EmailRecord) => mail.template],
            ['Status', (mail: EmailRecord) => html`<${Badge} status=${mail.status} />${mail.status === 'pending' && mail.attempts > 0 ? html` <small>retry ${formatDateTime(mail.next_attempt_at)}</small>` : null}`],
            ['Attempts', (mail: EmailRecord) => mail.attempts, 'num'],
            ['Actions', (mail: EmailRecord) => html`<${Button} busy=${resending === mail.id} onClick=${() => again(mail)} label=${`Resend message ${mail.id}`}>Resend<//>`],
          ]}
        />`
      : mails.loading
        ? html`<${Loading} />`
        : null}
    <${Pager} page=${mails.data} onPage=${setPage} label="Message pages" />`;
}

export function EmailPage({ id }: { id: number }) {
  const mail = useLoad(() => call('admin/email/email_get', { id }), [id]);
  const resend = useAction();
  const data = mail.data;
  const again = (): void => {
    void resend.run(async () => {
      const copy = await call('admin/email/email_resend', { id });
      navigate(`/admin/email/${copy}`);
    });
  };
  if (mail.error) return html`<h1>Message #${id}</h1><${ErrorMessage} error=${mail.error} />`;
  if (data === undefined) return html`<h1>Message #${id}</h1><${Loading} />`;
  return html`<h1>${data.subject}</h1>
    <p><${Link} href="/admin/email">All messages<//></p>
    <${DefinitionList}
      items=${[
        ['Status', html`<${Badge} status=${data.status} />`],
        ['To', data.to_name === null ? data.recipients : `${data.to_name} <${data.recipients}>`],
        ['From', data.sender],
        ['Template', data.template],
        ['Client', html`<${ClientCell} client=${{ id: data.client_id }} />`],
        ['Queued', formatDateTime(data.created_at)],
        ['Sent or settled', formatDateTime(data.sent_at)],
        ['Attempts', String(data.attempts)],
        ['Next attempt', formatDateTime(data.next_attempt_at)],
        ['Last error', data.last_error ?? '—'],
        ['Message-ID', data.message_id],
      ]}
    />
    <div class="actions">
      <${Button} busy=${resend.busy} onClick=${again}>Resend as a new message<//>
      <${Button} onClick=${() => mail.reload()}>Refresh<//>
    </div>
    <${ErrorMessage} error=${resend.error} />
    <h2>HTML part</h2>
    <${MailPreview} html=${data.content_html} title="The message as HTML" />
    <h2>Text part</h2>
    <pre class="mail-text">${data.content_text}</pre>`;
}

export function TemplatesPage() {
  const templates = useLoad(() => call('admin/email/template_get_list'), []);
  return html`<h1>Mail templates</h1>
    <p><${Link} href="/admin/email">Back to the messages<//></p>
    <${ErrorMessage} error=${templates.error} />
    ${templates.data
      ? html`<${DataTable}
          caption="Templates"
          rows=${templates.data}
          columns=${[
            ['Template', (tpl: TemplateRecord) => html`<${Link} href=${`/admin/email/templates/${tpl.code}`}>${tpl.title}<//>`],
            ['Sent when', (tpl: TemplateRecord) => tpl.when],
            ['Subject', (tpl: TemplateRecord) => tpl.subject],
            ['State', (tpl: TemplateRecord) => html`<${Badge} status=${tpl.enabled ? 'enabled' : 'disabled'} />${tpl.customized ? html` <small>edited</small>` : null}`],
          ]}
        />`
      : html`<${Loading} />`}`;
}

export function TemplatePage({ code }: { code: string }) {
  const template = useLoad(() => call('admin/email/template_get', { code }), [code]);
  const [subject, setSubject] = useState('');
  const [content, setContent] = useState('');
  const [enabled, setEnabled] = useState(true);
  const [saved, setSaved] = useState<string | null>(null);
  const [preview, setPreview] = useState<{ subject: string; html: string; text: string } | null>(null);
  const save = useAction();
  const render = useAction();
  const data = template.data;
  useEffect(() => {
    if (data === undefined) return;
    setSubject(data.subject);
    setContent(data.content);
    setEnabled(data.enabled);
  }, [data?.updated_at, data?.code]);
  const showPreview = (): void => {
    void render.run(async () => setPreview(await call('admin/email/template_render', { code, subject, content })));
  };
  const submit = (event: Event): void => {
    event.preventDefault();
    setSaved(null);
    void save.run(async () => {
      await call('admin/email/template_update', { code, subject, content, enabled });
      setSaved('Saved. The next message of this kind uses it.');
      template.reload();
      setPreview(await call('admin/email/template_render', { code }));
    });
  };
  if (template.error) return html`<h1>Template</h1><${ErrorMessage} error=${template.error} />`;
  if (data === undefined) return html`<h1>Template</h1><${Loading} />`;
  return html`<h1>${data.title}</h1>
    <p><${Link} href="/admin/email/templates">All templates<//> · sent when: ${data.when}</p>
    <form class="card" onSubmit=${submit} aria-label="Edit the template">
      <${Field} label="Subject" name="subject" value=${subject} onInput=${setSubject} error=${save.error ?? render.error} required />
      <${Field}
        label="Content (HTML)"
        name="content"
        type="textarea"
        rows=${12}
        value=${content}
        onInput=${setContent}
        error=${save.error ?? render.error}
        hint=${`Placeholders: ${Object.keys(data.vars).map((name) => `{{${name}}}`).join(' ')}. Values are HTML-escaped. {{#name}}…{{/name}} shows its inside only when the value is set, {{^name}}…{{/name}} only when it is not. The text part is made from the HTML.`}
      />
      ${data.required
        ? html`<p><small>This message is needed for account security; it cannot be switched off.</small></p>`
        : html`<${Checkbox} label="Send this message" name="enabled" checked=${enabled} onChange=${setEnabled} />`}
      <${FormError} error=${save.error} fields=${['subject', 'content']} />
      <${FormError} error=${render.error} fields=${['subject', 'content']} />
      <${Notice}>${saved}<//>
      <div class="actions">
        <${Button} type="submit" variant="primary" busy=${save.busy}>Save template<//>
        <${Button} busy=${render.busy} onClick=${showPreview}>Preview<//>
      </div>
    </form>
    ${preview
      ? html`<section aria-labelledby="preview-title">
          <h2 id="preview-title">Preview with sample values</h2>
          <p><strong>Subject:</strong> ${preview.subject}</p>
          <${MailPreview} html=${preview.html} title="Preview of the message" />
          <h3>Text part</h3>
          <pre class="mail-text">${preview.text}</pre>
        </section>`
      : null}`;
}
