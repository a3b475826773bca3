// Recognises database errors that are answers, not faults, on both dialects: "this row already exists" (a race
// between two inserts answers 409 instead of 500), and "undone because another transaction got in the way" (below).
export function isUniqueViolation(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const code = (error as { code?: unknown }).code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/**
 * PostgreSQL undid the transaction because it met another at the same moment: a deadlock (40P01: two transactions
 * each waiting for a row the other holds; PostgreSQL aborts one) or a serialization failure (40001). Nothing of it was
 * kept, so the same request may simply be sent again: the API answers 503 "try again" rather than 500.
 */
export function isTransientConflict(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const code = (error as { code?: unknown }).code;
  return code === '40P01' || code === '40001';
}
