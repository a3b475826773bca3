// Times are stored as ISO 8601 UTC strings with second precision ("2026-11-22T10:00:00Z"): they sort as text and
// read the same on SQLite and PostgreSQL.

export function isoSeconds(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
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
