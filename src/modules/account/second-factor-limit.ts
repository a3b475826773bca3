// The per-account ceiling on second-factor guesses (issue 20, M5; L5 for totp_disable). The only writer of
// `account_second_factor_failures`.
//
// Why in the database and per account: the per-address limits (LOGIN, API_AUTH_FAILED) let 20 addresses × 10 wrong
// codes try 200 codes at one account in seconds, and in-memory counters would be per process. A row per account
// counts the wrong codes of a 15-minute window, whatever address or process they come from; at the tenth the second
// step locks for 15 minutes and the owner is mailed (once per lock, through the 'account.second_factor_locked'
// event). While locked no code is checked at all, not even a right one, so guessing gains nothing; a right code does
// not reset the count (an attacker holding the password would otherwise get a fresh budget every time the owner logs
// in). A login is one request (password and code together), so "per pending login" is this same count: every
// attempt that reaches the second step belongs to the account.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { inTransaction } from '../../platform/transaction.ts';
import { outsideAction } from '../../db/ambient.ts';
import type { EventBus } from '../../platform/events.ts';
import { addSeconds, isoSeconds, timeOf } from '../../lib/time.ts';
import './events.ts';
import type { TwoFactorSubject } from './types.ts';

/** Wrong codes per window before the second step locks. */
export const SECOND_FACTOR_MAX_FAILURES = 10;
/** The counting window, and how long a lock lasts. */
export const SECOND_FACTOR_WINDOW_SECONDS = 15 * 60;

const TABLE = 'account_second_factor_failures';

export interface SecondFactorLimitDeps {
  db: Kysely<Database>;
  events: EventBus;
  /** Milliseconds since the epoch; tests move it. */
  clock: () => number;
}

export function createSecondFactorLimit({ db, events, clock }: SecondFactorLimitDeps) {
  return {
    /** Seconds until the account's second step opens again (at least 1), or null when it is not locked. */
    async lockedFor(subject: TwoFactorSubject): Promise<number | null> {
      const row = await db
        .selectFrom(TABLE)
        .select('locked_until')
        .where('subject_type', '=', subject.type)
        .where('subject_id', '=', subject.id)
        .executeTakeFirst();
      if (row?.locked_until == null) return null;
      const left = timeOf(row.locked_until) - clock();
      return left > 0 ? Math.max(1, Math.ceil(left / 1000)) : null;
    },

    /**
     * Counts one wrong code. One upsert, so concurrent failures from several processes are each counted (the row
     * lock orders them on PostgreSQL; SQLite has one writer). Exactly one failure sees the count reach the ceiling
     * while unlocked, and it alone sets the lock and emits the event that mails the owner.
     *
     * Inside a changing admin action (db/ambient.ts) the count is written after the action's transaction has ended:
     * the wrong code makes the action fail and roll back, and the count must outlive that (`outsideAction`).
     */
    async recordFailure(subject: TwoFactorSubject): Promise<void> {
      const now = new Date(clock());
      const nowText = isoSeconds(now);
      const windowStart = isoSeconds(addSeconds(now, -SECOND_FACTOR_WINDOW_SECONDS));
      await outsideAction(db as Kysely<never>, () => inTransaction(db, async (trx) => {
        const counted = await trx
          .insertInto(TABLE)
          .values({ subject_type: subject.type, subject_id: subject.id, window_started_at: nowText, failures: 1, locked_until: null })
          .onConflict((oc) =>
            oc.columns(['subject_type', 'subject_id']).doUpdateSet((eb) => {
              // Both dialects read the row's values from before this update in every expression of the SET.
              const fresh = eb(`${TABLE}.window_started_at`, '>', windowStart);
              return {
                failures: eb.case().when(fresh).then(eb(`${TABLE}.failures`, '+', 1)).else(1).end(),
                window_started_at: eb.case().when(fresh).then(eb.ref(`${TABLE}.window_started_at`)).else(nowText).end(),
              };
            }),
          )
          .returning('failures')
          .executeTakeFirstOrThrow();
        if (counted.failures < SECOND_FACTOR_MAX_FAILURES) return;
        const lockedUntil = isoSeconds(addSeconds(now, SECOND_FACTOR_WINDOW_SECONDS));
        const locked = await trx
          .updateTable(TABLE)
          .set({ locked_until: lockedUntil })
          .where('subject_type', '=', subject.type)
          .where('subject_id', '=', subject.id)
          .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<=', nowText)]))
          .executeTakeFirst();
        if (locked.numUpdatedRows === 1n) {
          await events.emit('account.second_factor_locked', { subjectType: subject.type, subjectId: subject.id, lockedUntil }, trx);
        }
      }));
    },

    /** Forgets the account's count (the account or its second factor is gone). */
    async forget(subject: TwoFactorSubject, trx: Kysely<Database>): Promise<void> {
      await trx.deleteFrom(TABLE).where('subject_type', '=', subject.type).where('subject_id', '=', subject.id).execute();
    },
  };
}

export type SecondFactorLimit = ReturnType<typeof createSecondFactorLimit>;
