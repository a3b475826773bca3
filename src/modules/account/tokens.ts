// Single-use account tokens (password reset, e-mail confirmation): 32 random bytes sent by mail, only their keyed
// hash stored. The only writer of `account_tokens`. Every function runs in the caller's transaction, so a token is
// issued together with the mail that carries it, and spent together with the change it authorises.
import { randomBytes } from 'node:crypto';
import type { Kysely, Selectable } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { AccountSubjectType, AccountTokenPurpose, AccountTokenTable } from './tables.ts';
import type { SecretBox } from '../../lib/crypto.ts';
import { addSeconds, isoSeconds } from '../../lib/time.ts';

export type AccountToken = Selectable<AccountTokenTable>;

export interface IssueRequest {
  purpose: AccountTokenPurpose;
  subjectType: AccountSubjectType;
  subjectId: number;
  lifetimeSeconds: number;
  newEmail?: string | null;
  now: Date;
}

/** A token a mail may carry: base64url, 43 characters, URL-safe in a path segment. */
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

/** Issues a token and voids every earlier unused token of the same purpose and account ("a new request voids older ones"). */
export async function issueToken(trx: Kysely<Database>, secrets: SecretBox, request: IssueRequest): Promise<string> {
  const token = randomBytes(32).toString('base64url');
  const now = isoSeconds(request.now);
  await trx
    .updateTable('account_tokens')
    .set({ used_at: now })
    .where('purpose', '=', request.purpose)
    .where('subject_type', '=', request.subjectType)
    .where('subject_id', '=', request.subjectId)
    .where('used_at', 'is', null)
    .execute();
  await trx
    .insertInto('account_tokens')
    .values({
      purpose: request.purpose,
      subject_type: request.subjectType,
      subject_id: request.subjectId,
      token_hash: secrets.hash(token),
      new_email: request.newEmail ?? null,
      created_at: now,
      expires_at: isoSeconds(addSeconds(request.now, request.lifetimeSeconds)),
      used_at: null,
    })
    .execute();
  return token;
}

/**
 * Spends a token of one of `purposes`: returns its row when it was unused, unexpired and of that purpose, and marks
 * it used by a compare-and-set, so two requests racing with one token cannot both succeed. Null otherwise, with no
 * hint of which check failed.
 */
export async function spendToken(
  trx: Kysely<Database>,
  secrets: SecretBox,
  purposes: readonly AccountTokenPurpose[],
  token: string,
  now: Date,
): Promise<AccountToken | null> {
  const row = await usableToken(trx, secrets, purposes, token, now);
  if (row === null) return null;
  const at = isoSeconds(now);
  const spent = await trx.updateTable('account_tokens').set({ used_at: at }).where('id', '=', row.id).where('used_at', 'is', null).executeTakeFirst();
  return spent.numUpdatedRows === 1n ? row : null;
}

/** The token's row when it is unused, unexpired and of one of `purposes`; null otherwise. Reads only. */
export async function usableToken(
  db: Kysely<Database>,
  secrets: SecretBox,
  purposes: readonly AccountTokenPurpose[],
  token: string,
  now: Date,
): Promise<AccountToken | null> {
  if (!TOKEN_SHAPE.test(token)) return null;
  const row = await db.selectFrom('account_tokens').selectAll().where('token_hash', '=', secrets.hash(token)).executeTakeFirst();
  if (row === undefined || !purposes.includes(row.purpose) || row.used_at !== null || row.expires_at <= isoSeconds(now)) return null;
  return row;
}

/** Removes every token of an account (the account is being deleted). */
export async function forgetTokens(trx: Kysely<Database>, subjectType: AccountSubjectType, subjectId: number): Promise<void> {
  await trx.deleteFrom('account_tokens').where('subject_type', '=', subjectType).where('subject_id', '=', subjectId).execute();
}

/**
 * Voids every unused token of `purposes` of one account, in the caller's transaction: a new password or address makes
 * the reset and change links already in some mailbox worthless (issue 20, L1/L2).
 */
export async function voidTokens(
  trx: Kysely<Database>,
  subjectType: AccountSubjectType,
  subjectId: number,
  purposes: readonly AccountTokenPurpose[],
  now: Date,
): Promise<void> {
  await trx
    .updateTable('account_tokens')
    .set({ used_at: isoSeconds(now) })
    .where('subject_type', '=', subjectType)
    .where('subject_id', '=', subjectId)
    .where('purpose', 'in', purposes)
    .where('used_at', 'is', null)
    .execute();
}
