// A staff member's change of their own e-mail address, the staff half of it (issue 20, M4): the account module asks
// for it with the password, a second factor and a link mailed to the new address; once that link is followed, this
// writes the new address. Split from service.ts, which stays the only other writer of `staff`.
import type { Kysely } from 'kysely';
import { isUniqueViolation } from '../../db/errors.ts';
import type { Database } from '../../db/schema.ts';
import type { EventBus } from '../../platform/events.ts';
import { errors } from '../../platform/errors.ts';
import { nowIso } from '../../lib/time.ts';
import './events.ts';

const TAKEN = 'Another staff member already has this e-mail address';

export function staffEmailChanges(db: Kysely<Database>, events: EventBus) {
  return {
    /** Whether another staff member already has this address. */
    async emailTakenByOther(email: string, id: number): Promise<boolean> {
      const row = await db.selectFrom('staff').select('id').where('email', '=', email.toLowerCase()).where('id', '!=', id).executeTakeFirst();
      return row !== undefined;
    },

    /**
     * Inside the transaction that spends the confirmation link: the member's address becomes `newEmail`. Returns the
     * old address and the name (the old address is told), or null when the member is gone or no longer active. An
     * address taken meanwhile by someone else → 409.
     */
    async applyEmailChange(trx: Kysely<Database>, id: number, newEmail: string): Promise<{ oldEmail: string; name: string } | null> {
      const row = await trx.selectFrom('staff').select(['email', 'name']).where('id', '=', id).where('status', '=', 'active').executeTakeFirst();
      if (row === undefined) return null;
      await trx
        .updateTable('staff')
        .set({ email: newEmail.toLowerCase(), updated_at: nowIso() })
        .where('id', '=', id)
        .execute()
        .catch((error: unknown) => {
          if (isUniqueViolation(error)) throw errors.conflict(TAKEN);
          throw error;
        });
      await events.emit('staff.credentials_changed', { staffId: id, reason: 'email' }, trx);
      return { oldEmail: row.email, name: row.name };
    },
  };
}
