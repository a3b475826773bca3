// Account recovery and e-mail ownership (CONTRACT §10): password reset for clients and staff, confirmation of a
// client's address at sign-up, and change of address confirmed from the new mailbox. Each mail is queued in the
// transaction that issues its token; each token is spent in the transaction that makes its change.
import { randomInt } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { AccountSubjectType } from './tables.ts';
import { inTransaction } from '../../platform/transaction.ts';
import type { EventBus } from '../../platform/events.ts';
import { errors } from '../../platform/errors.ts';
import type { SecretBox } from '../../lib/crypto.ts';
import { hashPassword, passwordProblem } from '../../lib/passwords.ts';
import { isoSeconds } from '../../lib/time.ts';
import type { ClientService } from '../client/service.ts';
import '../client/events.ts';
import type { MailService } from '../email/service.ts';
import type { StaffService } from '../staff/service.ts';
import { forgetTokens, issueToken, spendToken, usableToken, voidTokens } from './tokens.ts';
import { listenForCredentialChanges } from './credential-listeners.ts';
import { createStaffEmailChange } from './staff-email.ts';
import type { TwoFactorService } from './two-factor.ts';

/** Reset links live 30 minutes (CONTRACT §10). */
export const RESET_LIFETIME_SECONDS = 30 * 60;
/** Confirmation links live two days: a sign-up mail may sit in a mailbox over a weekend evening. */
export const CONFIRM_LIFETIME_SECONDS = 48 * 3600;

export interface AccountServiceDeps {
  db: Kysely<Database>;
  secrets: SecretBox;
  events: EventBus;
  mail: Pick<MailService, 'queue'>;
  clients: Pick<ClientService, 'findByEmail' | 'resetPassword' | 'emailVerifiedAt' | 'confirmEmail' | 'emailTakenByOther' | 'verifyOwnPassword' | 'get'>;
  staff: Pick<StaffService, 'findByEmail' | 'resetPassword' | 'get' | 'verifyOwnPassword' | 'emailTakenByOther' | 'applyEmailChange'>;
  /** The second factor an in-session change of e-mail asks for (staff, M4). */
  twoFactor: Pick<TwoFactorService, 'requireCode'>;
  /** Where customers reach Tollgate; every link in a mail starts with it. */
  publicUrl: string;
  /** The `require_email_verification` setting, read at each call (staff may switch it at any time). */
  requireEmailVerification: () => boolean;
  clock?: () => Date;
}

export type AccountKind = 'client' | 'staff';

function checkNewPassword(password: string, confirm: string): void {
  if (password !== confirm) throw errors.invalid('password_confirm', 'does not match password');
  const problem = passwordProblem(password);
  if (problem !== null) throw errors.invalid('password', problem);
}

export function createAccountService({ db, secrets, events, mail, clients, staff, twoFactor, publicUrl, requireEmailVerification, clock = () => new Date() }: AccountServiceDeps) {
  const base = publicUrl.replace(/\/+$/, '');
  // The token travels in the fragment: browsers never send it to a server, so it stays out of access logs.
  const clientResetUrl = (token: string): string => `${base}/#/reset/${token}`;
  const staffResetUrl = (token: string): string => `${base}/admin#/reset/${token}`;
  const confirmUrl = (token: string): string => `${base}/#/confirm-email/${token}`;
  const staffEmail = createStaffEmailChange({
    db,
    secrets,
    mail,
    staff,
    twoFactor,
    confirmUrl: (token) => `${base}/admin#/confirm-email/${token}`,
    lifetimeSeconds: CONFIRM_LIFETIME_SECONDS,
    clock,
  });
  listenForCredentialChanges({ events, mail, clock });

  async function queueConfirmation(trx: Kysely<Database>, clientId: number, email: string, name: string, template: 'client_signup' | 'client_email_change', newEmail: string | null): Promise<void> {
    const token = await issueToken(trx, secrets, {
      purpose: newEmail === null ? 'client_email_confirm' : 'client_email_change',
      subjectType: 'client',
      subjectId: clientId,
      lifetimeSeconds: CONFIRM_LIFETIME_SECONDS,
      newEmail,
      now: clock(),
    });
    const link = confirmUrl(token);
    // Variables as the templates name them: client_signup shows verify_url when present; client_email_change confirm_url.
    const vars: Record<string, string> = template === 'client_signup' ? { name, login_url: `${base}/login`, verify_url: link } : { name, new_email: email, confirm_url: link };
    // A change of address goes to an address that is not the client's yet, and is not listed among the client's own
    // messages: neither is the "address already in use" mail that replaces it for a taken address (L3), so the list
    // cannot tell the two apart either.
    await mail.queue(trx, { template, to: { email, name }, clientId: newEmail === null ? clientId : null, vars });
  }

  events.on('client.signed_up', async ({ clientId, email, firstName }, trx) => {
    if (requireEmailVerification()) {
      await queueConfirmation(trx, clientId, email, firstName, 'client_signup', null);
    } else {
      await mail.queue(trx, { template: 'client_signup', to: { email, name: firstName }, clientId, vars: { name: firstName, login_url: `${base}/login` } });
    }
  });
  events.on('client.deleted', ({ clientId }, trx) => forgetTokens(trx, 'client', clientId));

  return {
    get emailVerificationRequired(): boolean {
      return requireEmailVerification();
    },

    /**
     * Mails a reset link when the address belongs to an active account; does nothing otherwise. The caller answers
     * `true` either way and pads the time (see withTimeFloor), so the answer says nothing about the address.
     */
    async requestPasswordReset(kind: AccountKind, email: string): Promise<void> {
      const account = kind === 'client' ? await clients.findByEmail(email) : await staff.findByEmail(email);
      if (account === null || !account.active) return;
      const subjectType: AccountSubjectType = kind === 'client' ? 'client' : 'admin';
      await inTransaction(db, async (trx) => {
        const token = await issueToken(trx, secrets, {
          purpose: kind === 'client' ? 'client_password_reset' : 'staff_password_reset',
          subjectType,
          subjectId: account.id,
          lifetimeSeconds: RESET_LIFETIME_SECONDS,
          now: clock(),
        });
        await mail.queue(trx, {
          template: kind === 'client' ? 'client_password_reset' : 'staff_password_reset',
          to: { email: account.email, name: account.name },
          ...(kind === 'client' ? { clientId: account.id } : { staffId: account.id }),
          vars: { name: account.name, reset_url: kind === 'client' ? clientResetUrl(token) : staffResetUrl(token), expires_minutes: RESET_LIFETIME_SECONDS / 60 },
        });
      });
    },

    /**
     * Sets the password of the account a reset token was issued to, ends all its sessions, and (clients) queues the
     * "password changed" notice. Any token that is not an unused, unexpired reset token of this kind → 422.
     */
    async updatePassword(kind: AccountKind, token: string, password: string, confirm: string): Promise<void> {
      checkNewPassword(password, confirm);
      const purposes = [kind === 'client' ? 'client_password_reset' : 'staff_password_reset'] as const;
      // A dead link is refused before the ~20 ms of argon2: guessing links must not cost the server hashing time.
      if ((await usableToken(db, secrets, purposes, token, clock())) === null) throw errors.resetLinkInvalid();
      const passwordHash = await hashPassword(password);
      await inTransaction(db, async (trx) => {
        // Spent by compare-and-set: of two requests racing with one link, one wins and the other gets the 422.
        const spent = await spendToken(trx, secrets, purposes, token, clock());
        if (spent === null) throw errors.resetLinkInvalid();
        if (kind === 'staff') {
          if (!(await staff.resetPassword(trx, spent.subject_id, passwordHash))) throw errors.resetLinkInvalid();
          return;
        }
        const client = await clients.resetPassword(trx, spent.subject_id, passwordHash);
        if (client === null) throw errors.resetLinkInvalid();
        await mail.queue(trx, {
          template: 'client_password_changed',
          to: { email: client.email, name: client.firstName },
          clientId: spent.subject_id,
          vars: { name: client.firstName, login_url: `${base}/login` },
        });
      });
    },

    /** Confirms the address a confirmation token was sent to; for a change of e-mail, the new address takes effect. */
    async confirmEmail(token: string): Promise<void> {
      await inTransaction(db, async (trx) => {
        const spent = await spendToken(trx, secrets, ['client_email_confirm', 'client_email_change'], token, clock());
        if (spent === null) throw errors.invalid('hash', 'is not a valid confirmation link (it may have expired or been used)');
        if (!(await clients.confirmEmail(trx, spent.subject_id, spent.new_email))) {
          throw errors.invalid('hash', 'is not a valid confirmation link (it may have expired or been used)');
        }
        // A reset link mailed to the old address must not outlive the change (L2).
        if (spent.new_email !== null) await voidTokens(trx, 'client', spent.subject_id, ['client_password_reset'], clock());
        // A change of e-mail voids any confirmation still out for the old address, and vice versa.
        await trx
          .updateTable('account_tokens')
          .set({ used_at: isoSeconds(clock()) })
          .where('subject_type', '=', 'client')
          .where('subject_id', '=', spent.subject_id)
          .where('purpose', 'in', ['client_email_confirm', 'client_email_change'])
          .where('used_at', 'is', null)
          .execute();
      });
    },

    /** Mails a new confirmation link to the client's current address (409 when it is confirmed already). */
    async resendConfirmation(clientId: number): Promise<void> {
      const client = await clients.get(clientId);
      if (client.status !== 'active') throw errors.conflict('The account is not active');
      if ((await clients.emailVerifiedAt(clientId)) !== null) throw errors.conflict('The e-mail address is already confirmed');
      await inTransaction(db, (trx) => queueConfirmation(trx, clientId, client.email, client.first_name, 'client_signup', null));
    },

    /**
     * Mails a confirmation link to `email`; the address changes only when that link is followed. For an address
     * another account holds the answer is the same (L3): that address gets a mail saying it is already in use, with no
     * link, so only its owner learns it, never the requester.
     */
    async changeEmail(clientId: number, email: string, password: string): Promise<void> {
      const client = await clients.get(clientId);
      if (!(await clients.verifyOwnPassword(clientId, password))) throw errors.invalid('password', 'is not correct');
      const wanted = email.toLowerCase();
      if (wanted === client.email) throw errors.invalid('email', 'is already the address of this account');
      if (await clients.emailTakenByOther(wanted, clientId)) {
        await inTransaction(db, async (trx) => {
          await mail.queue(trx, { template: 'email_change_address_taken', to: { email: wanted }, vars: { name: '', new_email: wanted } });
        });
        return;
      }
      await inTransaction(db, (trx) => queueConfirmation(trx, clientId, wanted, client.first_name, 'client_email_change', wanted));
    },

    ...staffEmail,

    /** For checkout: 403 while verification is required and this client has not confirmed its address. */
    async requireConfirmedEmail(clientId: number): Promise<void> {
      if (!requireEmailVerification()) return;
      if ((await clients.emailVerifiedAt(clientId)) === null) throw errors.emailNotConfirmed();
    },
  };
}

export type AccountService = ReturnType<typeof createAccountService>;

/**
 * Runs `work` and answers no sooner than a random 300–450 ms after the start, whatever `work` does or throws: the
 * time of a reset request then says nothing about whether the address has an account (CONTRACT §10).
 */
export async function withTimeFloor<T>(work: () => Promise<T>, minMs = 300, maxMs = 450): Promise<T> {
  const deadline = performance.now() + minMs + randomInt(maxMs - minMs + 1);
  try {
    return await work();
  } finally {
    const left = deadline - performance.now();
    if (left > 0) await new Promise((resolve) => setTimeout(resolve, left));
  }
}
