// guest/client/*: a client's password reset and e-mail confirmation (CONTRACT §10). The account module does the work
// (account/service.ts); these are the client module's actions for it.
import { Type } from '@sinclair/typebox';
import { actionsFor } from '../../platform/action.ts';
import { Done } from '../../platform/schemas.ts';
import type { AccountService } from '../account/service.ts';
import { Hash, requestReset, ResetRequest, UpdatePassword, type ResetNeeds } from '../account/reset-requests.ts';

export interface ClientRecoveryNeeds extends ResetNeeds {
  accounts: Pick<AccountService, 'requestPasswordReset' | 'updatePassword' | 'confirmEmail' | 'emailVerificationRequired'>;
}

const { guestAction } = actionsFor<ClientRecoveryNeeds>();

export const clientRecoveryActions = {
  reset_password: guestAction({
    postOnly: true,
    params: ResetRequest,
    rateLimit: 'PASSWORD_RESET',
    summary: 'Mails a password reset link when the address has an active account; always true, in 300–450 ms or more',
    result: Done,
    handler: ({ email }, { services, ip }) => requestReset(services, ip, 'client', email),
  }),
  update_password: guestAction({
    postOnly: true,
    params: UpdatePassword,
    summary: 'Sets a new password with the hash of a reset link; ends every session of the client',
    result: Done,
    async handler({ hash, password, password_confirm }, { services }) {
      await services.accounts.updatePassword('client', hash, password, password_confirm);
      return true;
    },
  }),
  confirm_email: guestAction({
    params: Type.Object({ hash: Hash }),
    summary: 'Confirms the address a confirmation link was sent to (sign-up, or a change of e-mail, which then applies)',
    result: Done,
    async handler({ hash }, { services }) {
      await services.accounts.confirmEmail(hash);
      return true;
    },
  }),
  is_email_validation_required: guestAction({
    params: Type.Object({}),
    summary: 'Whether sign-ups must confirm their e-mail address before checkout',
    result: Type.Boolean(),
    handler: (_params, { services }) => services.accounts.emailVerificationRequired,
  }),
};
