// The outcomes key analytics count (issue 25), named as the API shows them, and the check's reasons they come from.
// Every reason the check can answer has its outcome; NOT_FOUND is counted per caller address, never per key.
import type { Reason } from '../types.ts';

export const KEY_OUTCOMES = ['valid', 'not_active', 'disabled', 'client_inactive', 'rate_limited', 'limit_exceeded', 'no_credit', 'trial_ended', 'expired'] as const;
export type KeyOutcome = (typeof KEY_OUTCOMES)[number];

/** The outcome column of each reason a found key can be answered with. */
export const OUTCOME_OF: Readonly<Record<Exclude<Reason, 'NOT_FOUND'>, KeyOutcome>> = {
  VALID: 'valid',
  NOT_ACTIVE: 'not_active',
  DISABLED: 'disabled',
  CLIENT_INACTIVE: 'client_inactive',
  RATE_LIMITED: 'rate_limited',
  LIMIT_EXCEEDED: 'limit_exceeded',
  NO_CREDIT: 'no_credit',
  TRIAL_ENDED: 'trial_ended',
  EXPIRED: 'expired',
};

export type OutcomeCounts = Record<KeyOutcome, number>;

export function zeroCounts(): OutcomeCounts {
  return { valid: 0, not_active: 0, disabled: 0, client_inactive: 0, rate_limited: 0, limit_exceeded: 0, no_credit: 0, trial_ended: 0, expired: 0 };
}

/** The units analytics are kept in, with how long (the scheduler prunes older buckets). */
export const UNITS = ['minute', 'hour', 'day'] as const;
export type Unit = (typeof UNITS)[number];
export const UNIT_MS: Readonly<Record<Unit, number>> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 };
export const RETENTION_MS: Readonly<Record<Unit, number>> = { minute: 48 * 3_600_000, hour: 90 * 86_400_000, day: 730 * 86_400_000 };

/** A bucket's first instant as stored, `YYYY-MM-DDTHH:MM:00Z` (minute, hour and day buckets all start on a minute). */
export function bucketAt(ms: number): string {
  return new Date(ms).toISOString().slice(0, 16) + ':00Z';
}

/** The start (epoch ms) of the `unit` bucket holding `ms` (UTC). */
export function bucketStart(ms: number, unit: Unit): number {
  return ms - (ms % UNIT_MS[unit]);
}
