// Times are stored as ISO 8601 UTC strings with second precision ("2026-11-22T10:00:00Z"): they read the same on
// SQLite and PostgreSQL, and sort as text only because every stored value has this exact fixed width. A year past
// 9999 would be written "+010000-…", which sorts before "2026-…": so such moments are never stored (isoSeconds
// refuses them, and the services answer 422 before reaching it), and code compares moments as numbers (timeOf).

/** Whether a moment can be stored in the fixed-width form (years 0000–9999). */
export function isStorable(date: Date): boolean {
  const year = date.getUTCFullYear();
  return Number.isFinite(date.getTime()) && year >= 0 && year <= 9999;
}

export function isoSeconds(date: Date): string {
  // A programming error if reached: callers refuse such dates with 422 first. Never write a string that misorders.
  if (!isStorable(date)) throw new RangeError(`Not a storable date: ${String(date.getTime())}`);
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** A stored ISO 8601 moment as milliseconds, for comparisons that must not depend on the text's form. */
export function timeOf(text: string): number {
  return Date.parse(text);
}

export function nowIso(): string {
  return isoSeconds(new Date());
}

export function addSeconds(date: Date, seconds: number): Date {
  return new Date(date.getTime() + seconds * 1000);
}

/** Calendar date "YYYY-MM-DD" of a moment, in UTC. */
export function isoDate(date: Date): string {
  return date.toISOString().slice(0, 10);
}
