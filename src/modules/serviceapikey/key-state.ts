// Whether a key works right now, as its owner (this module) reads it: other modules (the coalesced validity notices in
// email/key-notices.ts) ask this instead of reading the api_keys table themselves.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';

/** True when key `keyId` exists, is not deleted and its validity switch is on (the order's state is not asked). */
export async function keyIsSwitchedOn(trx: Kysely<Database>, keyId: number): Promise<boolean> {
  const key = await trx.selectFrom('api_keys').select(['valid', 'deleted_at']).where('id', '=', keyId).executeTakeFirst();
  return key !== undefined && key.valid === 1 && key.deleted_at === null;
}
