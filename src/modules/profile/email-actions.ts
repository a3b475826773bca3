// profile/*: the caller's own change of e-mail address (CONTRACT §10): a confirmation link goes to the new address,
// which applies when the link is followed. The account module does the work (account/service.ts).
import { Type } from '@sinclair/typebox';
import { actionsFor } from '../../platform/action.ts';
import { Done } from '../../platform/schemas.ts';
import type { AccountService } from '../account/service.ts';
import { Code, Email, limitPerAddress, Password } from '../account/reset-requests.ts';
import type { LimiterHolder } from '../../platform/login-limits.ts';

export interface EmailChangeNeeds extends LimiterHolder {
  accounts: Pick<AccountService, 'requestStaffEmailChange' | 'resendConfirmation' | 'changeEmail'>;
}

const { adminAction, clientAction } = actionsFor<EmailChangeNeeds>();

export const staffEmailActions = {
  change_email: adminAction({
    postOnly: true,
    params: Type.Object({ email: Email, password: Password, code: Type.Optional(Code) }),
    summary:
      'Mails a confirmation link to a new address; needs the password and, with two-factor login on, a code. The address changes when the link is followed (guest/staff/confirm_email)',
    result: Done,
    async handler({ email, password, code }, { services, identity, reply, ip }) {
      await limitPerAddress(services, reply, ip, email);
      await services.accounts.requestStaffEmailChange(identity.staff.id, email, password, code);
      return true;
    },
  }),
};

export const clientEmailActions = {
  resend_confirmation: clientAction({
    params: Type.Object({}),
    summary: 'Mails a new confirmation link to the current address (409 when it is confirmed already)',
    result: Done,
    async handler(_params, { services, identity, reply, ip }) {
      await limitPerAddress(services, reply, ip, identity.client.email);
      await services.accounts.resendConfirmation(identity.client.id);
      return true;
    },
  }),
  change_email: clientAction({
    postOnly: true,
    params: Type.Object({ email: Email, password: Password }),
    summary: 'Mails a confirmation link to a new address; the address changes when the link is followed (guest/client/confirm_email)',
    result: Done,
    async handler({ email, password }, { services, identity, reply, ip }) {
      await limitPerAddress(services, reply, ip, email);
      await services.accounts.changeEmail(identity.client.id, email, password);
      return true;
    },
  }),
};
