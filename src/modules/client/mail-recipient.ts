// Who a client's mail goes to, for the e-mail notices (src/modules/email/notices.ts): read here because the client
// module owns the clients table. Read through the caller's transaction: the change a notice follows may not be
// committed yet, and on SQLite a second handle would wait for the very transaction it is part of.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';

export interface MailRecipient {
  email: string;
  /** First and last name, whichever are set, joined by a space ('' when neither is). */
  name: string;
}

export const clientMailRecipients = {
  /** The client's address and name, or null when the client is gone. */
  async recipient(trx: Kysely<Database>, clientId: number): Promise<MailRecipient | null> {
    const client = await trx.selectFrom('clients').select(['id', 'email', 'first_name', 'last_name']).where('id', '=', clientId).executeTakeFirst();
    if (client === undefined) return null;
    return { email: client.email, name: [client.first_name, client.last_name].filter(Boolean).join(' ') };
  },
};

export type ClientMailRecipients = typeof clientMailRecipients;
