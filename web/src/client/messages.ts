// The messages Tollgate sent the client (receipts, invoices, notices), newest first, and one message as it was sent
// (its HTML in a sandboxed frame; reset and confirmation links are hidden here).
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { call } from '../lib/api.ts';
import { formatDateTime } from '../lib/format.ts';
import { Link } from '../lib/router.ts';
import { Badge, ErrorMessage, Loading, Pager, useLoad } from '../lib/ui.ts';

export function MessagesPage() {
  const [page, setPage] = useState(1);
  const mails = useLoad(() => call('client/email/get_list', { page, per_page: 20 }), [page]);
  return html`<h1>Messages</h1>
    <${ErrorMessage} error=${mails.error} />
    ${mails.data === undefined && mails.loading ? html`<${Loading} />` : null}
    ${mails.data !== undefined && mails.data.list.length === 0 ? html`<p>No messages yet.</p>` : null}
    ${mails.data !== undefined && mails.data.list.length > 0
      ? html`<div class="table-wrap" aria-busy=${mails.loading ? 'true' : 'false'}>
          <table>
            <caption class="sr-only">Messages sent to you</caption>
            <thead><tr><th scope="col">Date</th><th scope="col">Subject</th><th scope="col">Status</th></tr></thead>
            <tbody>
              ${mails.data.list.map(
                (mail) => html`<tr>
                  <td>${formatDateTime(mail.created_at)}</td>
                  <td><${Link} href=${`/messages/${mail.id}`}>${mail.subject}<//></td>
                  <td><${Badge} status=${mail.status} /></td>
                </tr>`,
              )}
            </tbody>
          </table>
        </div>`
      : null}
    <${Pager} page=${mails.data} onPage=${setPage} label="Message pages" />`;
}

export function MessagePage({ id }: { id: number }) {
  const mail = useLoad(() => call('client/email/get', { id }), [id]);
  if (mail.error) return html`<h1>Message</h1><${ErrorMessage} error=${mail.error} /><p><${Link} href="/messages">All messages<//></p>`;
  if (mail.data === undefined) return html`<h1>Message</h1><${Loading} />`;
  const data = mail.data;
  return html`<h1>${data.subject}</h1>
    <p><${Link} href="/messages">All messages<//> · to ${data.recipients} · ${formatDateTime(data.created_at)} · <${Badge} status=${data.status} /></p>
    <iframe title="The message" sandbox="" srcdoc=${data.content_html} style="width: 100%; min-height: 18rem; border: 1px solid #ccc; background: #fff;"></iframe>`;
}
