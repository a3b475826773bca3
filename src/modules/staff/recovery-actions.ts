// guest/staff/*: a staff member's password reset and confirmation of a new e-mail address (CONTRACT §10). The
// account module does the work (account/service.ts); these are the staff module's actions for it.
import { Type } from '@sinclair/typebox';
import { actionsFor } from '../../platform/action.ts';
import { Done } from '../../platform/schemas.ts';
import type { AccountService } from '../account/service.ts';
import { Hash, requestReset, ResetRequest, UpdatePassword, type ResetNeeds } from '../account/reset-requests.ts';

export interface StaffRecoveryNeeds extends ResetNeeds {
  accounts: Pick<AccountService, 'requestPasswordReset' | 'updatePassword' | 'confirmStaffEmail'>;
}

const { guestAction } = actionsFor<StaffRecoveryNeeds>();

export const staffRecoveryActions = {
  passwordreset: guestAction({
    postOnly: true,
    params: ResetRequest,
    rateLimit: 'PASSWORD_RESET',
    summary: 'Mails a staff password reset link when the address has an active account; always true, in 300–450 ms or more',
    result: Done,
    handler: ({ email }, { services, ip }) => requestReset(services, ip, 'staff', email),
  }),
  update_password: guestAction({
    postOnly: true,
    params: UpdatePassword,
    summary: 'Sets a new staff password with the hash of a reset link; ends every session of the member',
    result: Done,
    async handler({ hash, password, password_confirm }, { services }) {
      await services.accounts.updatePassword('staff', hash, password, password_confirm);
      return true;
    },
  }),
  confirm_email: guestAction({
    params: Type.Object({ hash: Hash }),
    summary: "Confirms a staff member's change of e-mail (the link mailed to the new address); the old address is told",
    result: Done,
    async handler({ hash }, { services }) {
      await services.accounts.confirmStaffEmail(hash);
      return true;
    },
  }),
};
