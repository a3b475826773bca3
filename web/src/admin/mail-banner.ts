// "Mail that cannot leave says so" (issue 21): while no mail server is configured, every admin page starts with a
// banner saying how many messages wait, linking to Settings → Mail. Asked again on every page change, so it goes
// away as soon as a server is saved. Staff who may not read the mail log (403) see nothing.
import { html } from 'htm/preact';
import { call } from '../lib/api.ts';
import { Link, useLocation } from '../lib/router.ts';
import { useLoad } from '../lib/ui.ts';


export function MailBanner() {
  const { path, query } = useLocation();
  const status = useLoad(() => call('admin/email/delivery_status'), [path, query.toString()]);
  const data = status.data;
  if (data === undefined || data.smtp_configured) return null;
  const count = `${data.waiting.toLocaleString('en-US')} ${data.waiting === 1 ? 'message' : 'messages'}`;
  return html`<p class="banner" role="status" data-testid="mail-banner">
    <strong>${count} waiting: no mail server is configured.</strong>${' '}Nobody receives invoices, receipts or password resets until one is set in <${Link} href="/admin/settings?section=mail">Settings → Mail<//>.
  </p>`;
}
