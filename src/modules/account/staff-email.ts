// A staff member's change of their own e-mail address (issue 20, M4). The address is where reset links go, so a
// stolen session or API token must not be able to point it elsewhere: the change needs the current password and,
// when two-factor login is on, a code; it takes effect only when a link mailed to the new address is followed
// (guest/staff/confirm_email), and the old address is told. The client flow (client/profile/change_email,
// guest/client/confirm_email) works the same way.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { inTransaction } from '../../platform/transaction.ts';
import { errors } from '../../platform/errors.ts';
import type { SecretBox } from '../../lib/crypto.ts';
import type { MailService } from '../email/service.ts';
import type { StaffService } from '../staff/service.ts';
import { issueToken, spendToken } from './tokens.ts';
import type { TwoFactorService } from './two-factor.ts';

export interface StaffEmailDeps {
  db: Kysely<Database>;
  secrets: SecretBox;
  mail: Pick<MailService, 'queue'>;
  staff: Pick<StaffService, 'get' | 'verifyOwnPassword' | 'emailTakenByOther' | 'applyEmailChange'>;
  twoFactor: Pick<TwoFactorService, 'requireCode'>;
  /** The admin panel's confirmation page for a token (`<PUBLIC_URL>/admin#/confirm-email/<token>`). */
  confirmUrl: (token: string) => string;
  lifetimeSeconds: number;
  clock: () => Date;
}

const LINK_INVALID = 'is not a valid confirmation link (it may have expired or been used)';

export function createStaffEmailChange({ db, secrets, mail, staff, twoFactor, confirmUrl, lifetimeSeconds, clock }: StaffEmailDeps) {
  return {
    /**
     * Mails a confirmation link to `email`. An address another staff member holds is answered the same (the mail to
     * it says so instead, with no link), so the answer never tells which addresses have accounts (as L3 for clients).
     */
    async requestStaffEmailChange(staffId: number, email: string, password: string, code: string | undefined): Promise<void> {
      const member = await staff.get(staffId);
      const wanted = email.toLowerCase();
      if (wanted === member.email) throw errors.invalid('email', 'is already the address of this account');
      if (!(await staff.verifyOwnPassword(staffId, password))) throw errors.invalid('password', 'is not correct');
      await twoFactor.requireCode({ type: 'admin', id: staffId }, code);
      if (await staff.emailTakenByOther(wanted, staffId)) {
        await inTransaction(db, (trx) =>
          mail.queue(trx, { template: 'email_change_address_taken', to: { email: wanted }, vars: { name: '', new_email: wanted } }).then(() => undefined),
        );
        return;
      }
      await inTransaction(db, async (trx) => {
        const token = await issueToken(trx, secrets, {
          purpose: 'staff_email_change',
          subjectType: 'admin',
          subjectId: staffId,
          lifetimeSeconds,
          newEmail: wanted,
          now: clock(),
        });
        await mail.queue(trx, {
          template: 'staff_email_change',
          to: { email: wanted, name: member.name },
          staffId,
          vars: { name: member.name, new_email: wanted, confirm_url: confirmUrl(token) },
        });
      });
    },

    /**
     * Follows a confirmation link: the member's address becomes the one it was mailed to, the old address is told,
     * and (through the staff service's event) every reset or change link still out for the account is voided (L2).
     */
    async confirmStaffEmail(token: string): Promise<void> {
      await inTransaction(db, async (trx) => {
        const spent = await spendToken(trx, secrets, ['staff_email_change'], token, clock());
        if (spent === null || spent.new_email === null) throw errors.invalid('hash', LINK_INVALID);
        const changed = await staff.applyEmailChange(trx, spent.subject_id, spent.new_email);
        if (changed === null) throw errors.invalid('hash', LINK_INVALID);
        await mail.queue(trx, {
          template: 'staff_email_changed',
          to: { email: changed.oldEmail, name: changed.name },
          staffId: spent.subject_id,
          vars: { name: changed.name, new_email: spent.new_email },
        });
      });
    },
  };
}
