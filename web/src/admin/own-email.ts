// A staff member's change of their own e-mail address (issue 20, M4): with two-factor login on, a code is asked for
// too; the link goes to the new address and opens StaffConfirmEmailPage (`/admin#/confirm-email/<token>`).
import { html } from 'htm/preact';
import { call } from '../lib/api.ts';
import { ChangeEmailForm, ConfirmEmailPage } from '../lib/own-email.ts';
import { useLoad } from '../lib/ui.ts';
import { refreshStaff } from './common.ts';

export function StaffEmailForm({ current }: { current: string }) {
  const totp = useLoad(() => call('admin/profile/totp_get'), []);
  return html`<${ChangeEmailForm}
    action="admin/profile/change_email"
    titleId="staff-email-title"
    askCode=${totp.data?.enabled === true}
    sentText=${(email: string) => `We sent a confirmation link to ${email}. Your address changes when you follow it; ${current} will be told.`}
  >
    <p>Your address is <strong>${current}</strong>. Reset links go to it, so a change needs your password and is confirmed from the new mailbox.</p>
  <//>`;
}

export function StaffConfirmEmailPage({ hash }: { hash: string }) {
  return html`<${ConfirmEmailPage}
    action="guest/staff/confirm_email"
    hash=${hash}
    doneText="Thank you: your staff e-mail address is changed."
    refreshAccount=${refreshStaff}
    next=${() => '/admin/profile'}
  />`;
}
