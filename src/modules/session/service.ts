// Browser sessions, stored in the database. The cookie holds a random id; the table holds only its keyed hash and
// the hash of the session's CSRF token, so a copy of the table cannot be replayed.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { SessionTable } from './tables.ts';
import { newOpaqueToken, safeEqual, type SecretBox } from '../../lib/crypto.ts';
import { addSeconds, isoSeconds } from '../../lib/time.ts';
import type { NewSession, Session, SessionSubject } from '../../platform/session.ts';

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
  return { idHash: row.id_hash, subject, csrfHash: row.csrf_hash };
}

export function createSessionService({ db, secrets, ttlSeconds }: SessionServiceDeps) {
  const touchAfterMs = Math.min(TOUCH_AFTER_MS, (ttlSeconds * 1000) / 2);
  return {
    async create(subject: SessionSubject, now = new Date()): Promise<NewSession> {
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
      if (row.expires_at <= isoSeconds(now)) {
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

    /** Ends every session of an account, e.g. when it is deactivated. */
    /** Ends every session of an account (but `keepIdHash`, the caller's own, when given). */
    async destroyAllOf(type: 'client' | 'admin', id: number, trx: Kysely<Database> = db, keepIdHash?: string): Promise<void> {
      let query = trx.deleteFrom('sessions').where('subject_type', '=', type).where('subject_id', '=', id);
      if (keepIdHash !== undefined) query = query.where('id_hash', '!=', keepIdHash);
      await query.execute();
    },

    async purgeExpired(now = new Date()): Promise<number> {
      const result = await db.deleteFrom('sessions').where('expires_at', '<=', isoSeconds(now)).executeTakeFirst();
      return Number(result.numDeletedRows);
    },
  };
}

export type SessionService = ReturnType<typeof createSessionService>;
