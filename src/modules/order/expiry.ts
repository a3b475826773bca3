// Expiry dates as staff send them and as they are stored (fixed-width ISO 8601 in UTC, CONTRACT §1).
import { errors } from '../../platform/errors.ts';
import { isoSeconds, isStorable } from '../../lib/time.ts';

const ISO_DATE_TIME = /^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)(Z|[+-]\d{2}:?\d{2})?)?$/i;

/**
 * `expires_at` as staff send it: a date (`2026-11-22`, midnight UTC) or an ISO 8601 date and time; without a zone
 * it is UTC, never the server's local time. A day that does not exist (30 February) is refused, not rolled over.
 */
export function parseExpiry(text: string, param = 'expires_at'): string {
  const match = ISO_DATE_TIME.exec(text.trim());
  const day = match?.[1];
  const time = day === undefined ? Number.NaN : Date.parse(`${day}T${match?.[2] ?? '00:00'}${match?.[3] ?? 'Z'}`);
  if (day === undefined || Number.isNaN(time) || new Date(Date.parse(`${day}T00:00:00Z`)).toISOString().slice(0, 10) !== day) {
    throw errors.invalid(param, 'must be an ISO 8601 date and time such as "2026-11-22T10:00:00Z"');
  }
  // "9999-12-31T23:00:00-05:00" is in year 10000 in UTC, which cannot be stored in the fixed-width form.
  return storableExpiry(new Date(time));
}

/** A computed or given expiry as stored text; past 9999-12-31 (UTC) → 422, never "+010000-…". */
export function storableExpiry(date: Date): string {
  if (!isStorable(date)) throw errors.invalid('expires_at', 'must not be later than 9999-12-31T23:59:59Z');
  return isoSeconds(date);
}
