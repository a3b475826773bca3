// What the account module does when another module reports a change of credentials (issue 20): links already in
// a mailbox stop working once the password or the address they were issued under has changed (L1/L2), a verifier
// credential's links end with it (M3), and the owner of an account whose second step locked is told (M5).
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { AccountSubjectType } from './tables.ts';
import type { EventBus } from '../../platform/events.ts';
import type { MailService } from '../email/service.ts';
import '../client/events.ts';
import '../staff/events.ts';
import './events.ts';
import { SECOND_FACTOR_MAX_FAILURES } from './second-factor-limit.ts';
import { forgetTokens, voidTokens } from './tokens.ts';

export interface CredentialListenerDeps {
  events: EventBus;
  mail: Pick<MailService, 'queue'>;
  clock: () => Date;
}

/** The owner's address and name, read in the event's transaction (a read on another handle could wait on it). */
async function contactOf(trx: Kysely<Database>, type: AccountSubjectType, id: number): Promise<{ email: string; name: string } | null> {
  if (type === 'client') {
    const row = await trx.selectFrom('clients').select(['email', 'first_name']).where('id', '=', id).executeTakeFirst();
    return row === undefined ? null : { email: row.email, name: row.first_name };
  }
  const row = await trx.selectFrom('staff').select(['email', 'name']).where('id', '=', id).executeTakeFirst();
  return row === undefined ? null : { email: row.email, name: row.name };
}

export function listenForCredentialChanges({ events, mail, clock }: CredentialListenerDeps): void {
  events.on('client.credentials_changed', ({ clientId }, trx) =>
    voidTokens(trx, 'client', clientId, ['client_password_reset', 'client_email_change'], clock()),
  );

  events.on('staff.credentials_changed', ({ staffId, reason }, trx) => {
    if (reason === 'verifier_revoked') return forgetTokens(trx, 'admin', staffId);
    return voidTokens(trx, 'admin', staffId, ['staff_password_reset', 'staff_email_change'], clock());
  });

  events.on('account.second_factor_locked', async ({ subjectType, subjectId, lockedUntil }, trx) => {
    const owner = await contactOf(trx, subjectType, subjectId);
    if (owner === null) return;
    await mail.queue(trx, {
      template: 'second_factor_locked',
      to: owner,
      ...(subjectType === 'client' ? { clientId: subjectId } : { staffId: subjectId }),
      vars: { name: owner.name, failures: SECOND_FACTOR_MAX_FAILURES, locked_until: lockedUntil.replace('T', ' ').replace(/:\d{2}Z$/, '') },
    });
  });
}
