// What the reset and confirmation actions share (CONTRACT §10): their parameters, and the per-address budget of
// mails. The actions themselves belong to the URL modules that serve them: guest/client/* (client/recovery-actions.ts),
// guest/staff/* (staff/recovery-actions.ts), admin and client profile/* (profile/email-actions.ts).
import { Type } from '@sinclair/typebox';
import type { LimiterHolder } from '../../platform/login-limits.ts';
import { enforce, type HeaderTarget } from '../../platform/rate-limit.ts';
import { withTimeFloor, type AccountKind, type AccountService } from './service.ts';

export const Email = Type.String({ format: 'email', maxLength: 254 });
export const Password = Type.String({ minLength: 1, maxLength: 256 });
/** A token as mailed (43 characters); any other string is simply a link that does not work. */
export const Hash = Type.String({ minLength: 1, maxLength: 128 });
/** A code from the authenticator app, or a recovery code; needed while two-factor login is on. */
export const Code = Type.String({ maxLength: 32 });
export const ResetRequest = Type.Object({ email: Email });
export const UpdatePassword = Type.Object({ hash: Hash, password: Password, password_confirm: Password });

/**
 * PASSWORD_RESET per address, on top of the gateway's count per IP: nobody can flood one mailbox from many IPs. The
 * other requests that mail a link to an address (confirmation, change of e-mail) count against the same budget, so
 * a signed-in client cannot use change_email to mail a stranger over and over.
 */
export async function limitPerAddress({ limiter }: LimiterHolder, reply: HeaderTarget, ip: string, email: string): Promise<void> {
  if (limiter.isExempt(ip)) return;
  enforce(reply, await limiter.hit('PASSWORD_RESET', `address:${email.trim().toLowerCase()}`));
}

/**
 * For reset requests: whether this address may be mailed another link now (PASSWORD_RESET per address). Never a
 * refusal (issue 20, L4): a stranger's five requests naming an address must not make its owner's own request answer
 * 429 for an hour. Past the budget the request still answers `true` and no mail goes out; the last link mailed stays
 * valid, since a dropped request issues nothing and so voids nothing. The requester is limited per IP (the gateway).
 */
async function mayMailAddress({ limiter }: LimiterHolder, ip: string, email: string): Promise<boolean> {
  if (limiter.isExempt(ip)) return true;
  return (await limiter.hit('PASSWORD_RESET', `address:${email.trim().toLowerCase()}`)).allowed;
}

/** What a reset request needs of the services. */
export interface ResetNeeds extends LimiterHolder {
  accounts: Pick<AccountService, 'requestPasswordReset'>;
}

/** guest/client/reset_password and guest/staff/passwordreset: always true, and never sooner than 300–450 ms. */
export function requestReset(services: ResetNeeds, ip: string, kind: AccountKind, email: string): Promise<true> {
  // The floor covers the limit check too: every answer of this action takes 300–450 ms or more.
  return withTimeFloor(async () => {
    if (await mayMailAddress(services, ip, email)) await services.accounts.requestPasswordReset(kind, email);
    return true as const;
  });
}
