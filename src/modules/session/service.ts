// Browser sessions, stored in the database. The cookie holds a random id; the table holds only its keyed hash and
// the hash of the session's CSRF token, so a copy of the table cannot be replayed.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { SessionTable } from './tables.ts';
import { newOpaqueToken, safeEqual, type SecretBox } from '../../lib/crypto.ts';
import { addSeconds, isoSeconds } from '../../lib/time.ts';
import type { NewSession, PortalGrant, Session, SessionSubject } from '../../platform/session.ts';

// The session types are the platform's (src/platform/session.ts): http/ and the modules share them.
export type { NewSession, Session, SessionSubject };

// Refreshing last_seen_at on every request would turn each read into a write; once a minute is enough for a
// two-hour inactivity timeout. A short timeout refreshes at half its length, so an active session never lapses.
const TOUCH_AFTER_MS = 60_000;

export interface SessionServiceDeps {
  db: Kysely<Database>;
  secrets: SecretBox;
  ttlSeconds: number;
}

function toSession(row: SessionTable): Session {
  const subject: SessionSubject =
    row.subject_type === 'guest' || row.subject_id === null
      ? { type: 'guest', id: null }
      : { type: row.subject_type, id: row.subject_id };
  // Fails closed: a row with portal scopes is a portal session even if its end were missing (it then ends at once).
  const portal: PortalGrant | null =
    row.portal_scopes === null
      ? null
      : { scopes: row.portal_scopes === '' ? [] : row.portal_scopes.split(','), returnUrl: row.portal_return_url, endsAt: row.ends_at ?? row.created_at };
  return { idHash: row.id_hash, subject, csrfHash: row.csrf_hash, portal };
}

export function createSessionService({ db, secrets, ttlSeconds }: SessionServiceDeps) {
  const touchAfterMs = Math.min(TOUCH_AFTER_MS, (ttlSeconds * 1000) / 2);
  return {
    /** A new session; with `portal`, a customer-portal session restricted to its scopes until `portal.endsAt`. */
    async create(subject: SessionSubject, portal?: PortalGrant, now = new Date()): Promise<NewSession> {
      const id = newOpaqueToken();
      const csrfToken = newOpaqueToken();
      const row: SessionTable = {
        id_hash: secrets.hash(id),
        csrf_hash: secrets.hash(csrfToken),
        subject_type: subject.type,
        subject_id: subject.id,
        created_at: isoSeconds(now),
        last_seen_at: isoSeconds(now),
        expires_at: isoSeconds(addSeconds(now, ttlSeconds)),
        portal_scopes: portal === undefined ? null : portal.scopes.join(','),
        portal_return_url: portal?.returnUrl ?? null,
        ends_at: portal?.endsAt ?? null,
      };
      await db.insertInto('sessions').values(row).execute();
      return { id, csrfToken, session: toSession(row) };
    },

    /** The live session for a cookie value, or null when unknown or expired (an expired one is deleted). */
    async load(id: string, now = new Date()): Promise<Session | null> {
      if (id.length === 0 || id.length > 128) return null;
      const idHash = secrets.hash(id);
      const row = await db.selectFrom('sessions').selectAll().where('id_hash', '=', idHash).executeTakeFirst();
      if (row === undefined) return null;
      // A portal session ends at its `ends_at` however active it is (its link said for how long).
      if (row.expires_at <= isoSeconds(now) || (row.ends_at !== null && row.ends_at <= isoSeconds(now))) {
        await db.deleteFrom('sessions').where('id_hash', '=', idHash).execute();
        return null;
      }
      if (now.getTime() - Date.parse(row.last_seen_at) > touchAfterMs) {
        await db
          .updateTable('sessions')
          .set({ last_seen_at: isoSeconds(now), expires_at: isoSeconds(addSeconds(now, ttlSeconds)) })
          .where('id_hash', '=', idHash)
          .execute();
      }
      return toSession(row);
    },

    csrfMatches(session: Session, token: string): boolean {
      return safeEqual(secrets.hash(token), session.csrfHash);
    },

    async destroy(idHash: string): Promise<void> {
      await db.deleteFrom('sessions').where('id_hash', '=', idHash).execute();
    },

    /** Ends every session of an account (but `keepIdHash`, the caller's own, when given). */
    async destroyAllOf(type: 'client' | 'admin', id: number, trx: Kysely<Database> = db, keepIdHash?: string): Promise<void> {
      let query = trx.deleteFrom('sessions').where('subject_type', '=', type).where('subject_id', '=', id);
      if (keepIdHash !== undefined) query = query.where('id_hash', '!=', keepIdHash);
      await query.execute();
    },

    async purgeExpired(now = new Date()): Promise<number> {
      const cutoff = isoSeconds(now);
      const result = await db
        .deleteFrom('sessions')
        .where((eb) => eb.or([eb('expires_at', '<=', cutoff), eb('ends_at', '<=', cutoff)]))
        .executeTakeFirst();
      return Number(result.numDeletedRows);
    },
  };
}

export type SessionService = ReturnType<typeof createSessionService>;
