// Two-factor login (TOTP, RFC 6238) for clients and staff, with single-use recovery codes. The only writer of
// `account_totp` and `account_recovery_codes`.
//
// Replay: the step of the last accepted code is stored, and a code is accepted only for a later step, by a
// compare-and-set on that column; so a code works once, and so does any older one (CONTRACT §10 "each code usable
// once"). Codes are checked for the current step and one step either side (clock drift of up to 30 s).
import { randomBytes } from 'node:crypto';
import { decodeBase32IgnorePadding, encodeBase32NoPadding } from '@oslojs/encoding';
import { createTOTPKeyURI, generateHOTP } from '@oslojs/otp';
import type { Kysely } from 'kysely';
import { isUniqueViolation } from '../../db/errors.ts';
import type { Database } from '../../db/schema.ts';
import { inTransaction } from '../../platform/transaction.ts';
import type { EventBus } from '../../platform/events.ts';
import { errors } from '../../platform/errors.ts';
import { randomString, safeEqual, type SecretBox } from '../../lib/crypto.ts';
import { nowIso } from '../../lib/time.ts';
import { createSecondFactorLimit } from './second-factor-limit.ts';
import type { TwoFactorSubject } from './types.ts';

const PERIOD_SECONDS = 30;
const DIGITS = 6;
const SECRET_BYTES = 20;
const RECOVERY_CODES = 10;
// Recovery codes: 10 characters of an alphabet without look-alikes (about 50 bits), shown as `xxxxx-xxxxx`.
const RECOVERY_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';


export interface TwoFactorDeps {
  db: Kysely<Database>;
  secrets: SecretBox;
  events: EventBus;
  /** Shown by authenticator apps next to the account name. */
  /** The name authenticator apps show for the account: the operator's company name (read at each enrolment). */
  issuer: string | (() => string);
  /** Milliseconds since the epoch; tests move it. */
  clock?: () => number;
}

export type CodeCheck = 'ok' | 'wrong';

/** A second-step check: the code was right, wrong (and counted), or not even looked at while the step is locked. */
export type SecondStep = { outcome: 'ok' } | { outcome: 'wrong' } | { outcome: 'locked'; retryAfterSeconds: number };

/** totp_disable and other in-session checks answer 422 on the `code` parameter, never 429 (issue 20, L5). */
function lockedCode(seconds: number): Error {
  return errors.invalid('code', `cannot be checked now: too many wrong codes; try again in ${Math.ceil(seconds / 60)} min`);
}

/** What the caller typed, reduced to the form codes are compared in: digits for TOTP, letters for recovery codes. */
function normaliseRecovery(code: string): string {
  return code.toLowerCase().replace(/[\s-]/g, '');
}

export function createTwoFactorService({ db, secrets, events, issuer, clock = Date.now }: TwoFactorDeps) {
  const limit = createSecondFactorLimit({ db, events, clock });
  const currentStep = (): number => Math.floor(clock() / 1000 / PERIOD_SECONDS);
  const recoveryHash = (subject: TwoFactorSubject, code: string): string =>
    secrets.hash(`recovery:${subject.type}:${subject.id}:${normaliseRecovery(code)}`);

  function keyOf(secretEnc: string): Uint8Array {
    return decodeBase32IgnorePadding(secrets.decrypt(secretEnc));
  }

  /** The step (now−1, now or now+1, later than `after`) whose code this is, or null. Compares every candidate. */
  function matchingStep(key: Uint8Array, code: string, after: number | null): number | null {
    if (!/^\d{6}$/.test(code)) return null;
    const now = currentStep();
    let found: number | null = null;
    for (const step of [now - 1, now, now + 1]) {
      const equal = safeEqual(generateHOTP(key, BigInt(step), DIGITS), code);
      if (equal && (after === null || step > after) && found === null) found = step;
    }
    return found;
  }

  async function row(subject: TwoFactorSubject, trx: Kysely<Database> = db) {
    return trx
      .selectFrom('account_totp')
      .selectAll()
      .where('subject_type', '=', subject.type)
      .where('subject_id', '=', subject.id)
      .executeTakeFirst();
  }

  /** Spends a TOTP code (compare-and-set on last_step) or an unused recovery code. */
  async function spend(subject: TwoFactorSubject, code: string, trx: Kysely<Database> = db): Promise<CodeCheck> {
    const current = await row(subject, trx);
    if (current === undefined || current.enabled_at === null) return 'wrong';
    const trimmed = code.trim();
    if (/^\d{6}$/.test(trimmed)) {
      const step = matchingStep(keyOf(current.secret_enc), trimmed, current.last_step);
      if (step === null) return 'wrong';
      const result = await trx
        .updateTable('account_totp')
        .set({ last_step: step, updated_at: nowIso() })
        .where('subject_type', '=', subject.type)
        .where('subject_id', '=', subject.id)
        .where((eb) => eb.or([eb('last_step', 'is', null), eb('last_step', '<', step)]))
        .executeTakeFirst();
      return result.numUpdatedRows === 1n ? 'ok' : 'wrong';
    }
    if (normaliseRecovery(trimmed).length !== 10) return 'wrong';
    // Looked up by keyed hash, then spent by compare-and-set: two logins racing with one code cannot both pass.
    const result = await trx
      .updateTable('account_recovery_codes')
      .set({ used_at: nowIso() })
      .where('subject_type', '=', subject.type)
      .where('subject_id', '=', subject.id)
      .where('code_hash', '=', recoveryHash(subject, trimmed))
      .where('used_at', 'is', null)
      .executeTakeFirst();
    return result.numUpdatedRows === 1n ? 'ok' : 'wrong';
  }

  async function forget(subject: TwoFactorSubject, trx: Kysely<Database>): Promise<void> {
    await trx.deleteFrom('account_totp').where('subject_type', '=', subject.type).where('subject_id', '=', subject.id).execute();
    await trx.deleteFrom('account_recovery_codes').where('subject_type', '=', subject.type).where('subject_id', '=', subject.id).execute();
  }
  events.on('client.deleted', async ({ clientId }, trx) => {
    await forget({ type: 'client', id: clientId }, trx);
    await limit.forget({ type: 'client', id: clientId }, trx);
  });

  /** Checks and spends a code unless the account's second step is locked; a wrong code is counted (M5). */
  async function guardedSpend(subject: TwoFactorSubject, code: string): Promise<SecondStep> {
    const locked = await limit.lockedFor(subject);
    if (locked !== null) return { outcome: 'locked', retryAfterSeconds: locked };
    if ((await spend(subject, code)) === 'ok') return { outcome: 'ok' };
    // Counted outside any transaction of the caller's, so a refusal that rolls the caller back still counts.
    await limit.recordFailure(subject);
    return { outcome: 'wrong' };
  }

  async function isEnabled(subject: TwoFactorSubject): Promise<boolean> {
    const current = await row(subject);
    return current !== undefined && current.enabled_at !== null;
  }

  /** Throws 422 on `code` when it is missing, wrong (counted) or the step is locked; nothing when 2FA is off. */
  async function requireCode(subject: TwoFactorSubject, code: string | undefined): Promise<void> {
    if (!(await isEnabled(subject))) return;
    if (code === undefined || code.trim() === '') throw errors.invalid('code', 'is required while two-factor login is on');
    const checked = await guardedSpend(subject, code);
    if (checked.outcome === 'locked') throw lockedCode(checked.retryAfterSeconds);
    if (checked.outcome === 'wrong') throw errors.invalid('code', 'is not a valid code');
  }

  return {
    isEnabled,

    async status(subject: TwoFactorSubject): Promise<{ enabled: boolean; recovery_codes_left: number }> {
      const current = await row(subject);
      const left = await db
        .selectFrom('account_recovery_codes')
        .select((eb) => eb.fn.countAll<number | string>().as('n'))
        .where('subject_type', '=', subject.type)
        .where('subject_id', '=', subject.id)
        .where('used_at', 'is', null)
        .executeTakeFirstOrThrow();
      const enabled = current !== undefined && current.enabled_at !== null;
      return { enabled, recovery_codes_left: enabled ? Number(left.n) : 0 };
    },

    /**
     * Starts (or restarts) set-up: a new secret, not yet required at login. Refused (409) while two-factor login is
     * on: turning it off first needs a code, so a stolen session cannot silently replace the secret.
     */
    async setup(subject: TwoFactorSubject, accountName: string): Promise<{ secret: string; otpauth_url: string }> {
      const key = new Uint8Array(randomBytes(SECRET_BYTES));
      const secret = encodeBase32NoPadding(key);
      await inTransaction(db, async (trx) => {
        const current = await row(subject, trx);
        if (current?.enabled_at != null) throw errors.conflict('Two-factor login is already on; turn it off first');
        const now = nowIso();
        await trx.deleteFrom('account_totp').where('subject_type', '=', subject.type).where('subject_id', '=', subject.id).execute();
        await trx
          .insertInto('account_totp')
          .values({ subject_type: subject.type, subject_id: subject.id, secret_enc: secrets.encrypt(secret), enabled_at: null, last_step: null, created_at: now, updated_at: now })
          .execute()
          .catch((error: unknown) => {
            // Two set-ups of one account at the same moment (PostgreSQL): the later one is told, not crashed.
            if (isUniqueViolation(error)) throw errors.conflict('Two-factor set-up is already under way; try again');
            throw error;
          });
      });
      return { secret, otpauth_url: createTOTPKeyURI(typeof issuer === 'string' ? issuer : issuer(), accountName, key, PERIOD_SECONDS, DIGITS) };
    },

    /** Turns two-factor login on with a first valid code; returns the ten recovery codes, shown this once. */
    async enable(subject: TwoFactorSubject, code: string): Promise<{ recovery_codes: string[] }> {
      const codes = Array.from({ length: RECOVERY_CODES }, () => {
        const raw = randomString(10, RECOVERY_ALPHABET);
        return `${raw.slice(0, 5)}-${raw.slice(5)}`;
      });
      await inTransaction(db, async (trx) => {
        const current = await row(subject, trx);
        if (current === undefined) throw errors.conflict('Start the set-up first (totp_setup)');
        if (current.enabled_at !== null) throw errors.conflict('Two-factor login is already on');
        const step = matchingStep(keyOf(current.secret_enc), code.trim(), null);
        if (step === null) throw errors.invalid('code', 'is not the current code of the authenticator app');
        const now = nowIso();
        const result = await trx
          .updateTable('account_totp')
          .set({ enabled_at: now, last_step: step, updated_at: now })
          .where('subject_type', '=', subject.type)
          .where('subject_id', '=', subject.id)
          .where('enabled_at', 'is', null)
          .executeTakeFirst();
        if (result.numUpdatedRows !== 1n) throw errors.conflict('Two-factor login is already on');
        await trx.deleteFrom('account_recovery_codes').where('subject_type', '=', subject.type).where('subject_id', '=', subject.id).execute();
        await trx
          .insertInto('account_recovery_codes')
          .values(codes.map((plain) => ({ subject_type: subject.type, subject_id: subject.id, code_hash: recoveryHash(subject, plain), used_at: null, created_at: now })))
          .execute();
      });
      return { recovery_codes: codes };
    },

    /**
     * Turns two-factor login off; needs a current code or an unused recovery code (the password is the caller's).
     * Wrong codes count against the same ceiling as at login, but the answer is always 422 on `code` (L5).
     */
    async disable(subject: TwoFactorSubject, code: string): Promise<void> {
      if (!(await isEnabled(subject))) throw errors.conflict('Two-factor login is not on');
      await requireCode(subject, code);
      await inTransaction(db, (trx) => forget(subject, trx));
    },

    /**
     * For in-session actions that need the second factor (totp_disable, a staff change of e-mail): throws 422 on
     * `code` when it is wrong (counted) or the step is locked. Does nothing when two-factor login is off.
     */
    requireCode,

    /** At login: the code (TOTP or recovery) checked and spent, unless the account's second step is locked. */
    verify(subject: TwoFactorSubject, code: string): Promise<SecondStep> {
      return guardedSpend(subject, code);
    },

  };
}

export type TwoFactorService = ReturnType<typeof createTwoFactorService>;

/** For tests and tools that play the authenticator app: the code of `secret` at time `ms` (plus `stepOffset`). */
export function totpCode(secret: string, ms: number, stepOffset = 0): string {
  return generateHOTP(decodeBase32IgnorePadding(secret), BigInt(Math.floor(ms / 1000 / PERIOD_SECONDS) + stepOffset), DIGITS);
}
