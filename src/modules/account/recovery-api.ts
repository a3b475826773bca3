// Password reset and e-mail confirmation actions (CONTRACT §10), declared as additions to the `client`, `staff` and
// `profile` modules of the API.
import { Type } from '@sinclair/typebox';
import type { FastifyReply } from 'fastify';
import { adminAction, clientAction, guestAction, type ModuleApi } from '../../platform/action.ts';
import { enforce } from '../../platform/rate-limit.ts';
import { Done } from '../../platform/schemas.ts';
import type { Services } from '../../services.ts';
import { withTimeFloor } from './service.ts';

const Email = Type.String({ format: 'email', maxLength: 254 });
const Password = Type.String({ minLength: 1, maxLength: 256 });
/** A token as mailed (43 characters); any other string is simply a link that does not work. */
const Hash = Type.String({ minLength: 1, maxLength: 128 });
const NO_PARAMS = Type.Object({});
/** A code from the authenticator app, or a recovery code; needed while two-factor login is on. */
const Code = Type.String({ maxLength: 32 });
const UpdatePassword = Type.Object({ hash: Hash, password: Password, password_confirm: Password });

/**
 * PASSWORD_RESET per address, on top of the gateway's count per IP: nobody can flood one mailbox from many IPs. The
 * other requests that mail a link to an address (confirmation, change of e-mail) count against the same budget, so
 * a signed-in client cannot use change_email to mail a stranger over and over.
 */
async function limitPerAddress(services: Services, reply: FastifyReply, ip: string, email: string): Promise<void> {
  if (services.limiter.isExempt(ip)) return;
  enforce(reply, await services.limiter.hit('PASSWORD_RESET', `address:${email.trim().toLowerCase()}`));
}

/**
 * For reset requests: whether this address may be mailed another link now (PASSWORD_RESET per address). Never a
 * refusal (issue 20, L4): a stranger's five requests naming an address must not make its owner's own request answer
 * 429 for an hour. Past the budget the request still answers `true` and no mail goes out; the last link mailed stays
 * valid, since a dropped request issues nothing and so voids nothing. The requester is limited per IP (the gateway).
 */
async function mayMailAddress(services: Services, ip: string, email: string): Promise<boolean> {
  if (services.limiter.isExempt(ip)) return true;
  return (await services.limiter.hit('PASSWORD_RESET', `address:${email.trim().toLowerCase()}`)).allowed;
}

function resetRequest(kind: 'client' | 'staff', summary: string) {
  return guestAction({
    postOnly: true,
    params: Type.Object({ email: Email }),
    rateLimit: 'PASSWORD_RESET',
    summary,
    result: Done,
    handler: ({ email }, { services, ip }) =>
      // The floor covers the limit check too: every answer of this action takes 300–450 ms or more.
      withTimeFloor(async () => {
        if (await mayMailAddress(services, ip, email)) await services.accounts.requestPasswordReset(kind, email);
        return true;
      }),
  });
}

function resetUpdate(kind: 'client' | 'staff', summary: string) {
  return guestAction({
    postOnly: true,
    params: UpdatePassword,
    summary,
    result: Done,
    async handler({ hash, password, password_confirm }, { services }) {
      await services.accounts.updatePassword(kind, hash, password, password_confirm);
      return true;
    },
  });
}

export const recoveryClientApi: ModuleApi = {
  name: 'client',
  guest: {
    reset_password: resetRequest('client', 'Mails a password reset link when the address has an active account; always true, in 300–450 ms or more'),
    update_password: resetUpdate('client', 'Sets a new password with the hash of a reset link; ends every session of the client'),
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
      params: NO_PARAMS,
      summary: 'Whether sign-ups must confirm their e-mail address before checkout',
      result: Type.Boolean(),
      handler: (_params, { services }) => services.accounts.emailVerificationRequired,
    }),
  },
};

export const recoveryStaffApi: ModuleApi = {
  name: 'staff',
  guest: {
    passwordreset: resetRequest('staff', 'Mails a staff password reset link when the address has an active account; always true, in 300–450 ms or more'),
    update_password: resetUpdate('staff', 'Sets a new staff password with the hash of a reset link; ends every session of the member'),
    confirm_email: guestAction({
      params: Type.Object({ hash: Hash }),
      summary: "Confirms a staff member's change of e-mail (the link mailed to the new address); the old address is told",
      result: Done,
      async handler({ hash }, { services }) {
        await services.accounts.confirmStaffEmail(hash);
        return true;
      },
    }),
  },
};

export const recoveryProfileApi: ModuleApi = {
  name: 'profile',
  admin: {
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
  },
  client: {
    resend_confirmation: clientAction({
      params: NO_PARAMS,
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
  },
};
