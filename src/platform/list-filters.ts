// Filters the admin lists share (clients, orders, invoices): a free-text `search` and a creation-date range given as
// calendar days (`YYYY-MM-DD`, UTC, both ends inclusive). One declaration, so the three lists validate alike.
import { Type } from '@sinclair/typebox';
import { errors } from './errors.ts';

/** Spread into an action's parameter schema. */
export const searchParams = {
  search: Type.Optional(Type.String({ maxLength: 255 })),
  date_from: Type.Optional(Type.String({ format: 'date' })),
  date_to: Type.Optional(Type.String({ format: 'date' })),
};

export interface CreatedRange {
  /** First stored moment of date_from, or undefined. */
  from?: string;
  /** Last stored moment of date_to, or undefined (times are stored to the second: `…T23:59:59Z` is the day's last). */
  to?: string;
}

/** The bounds on `created_at` for a date range; a range that ends before it starts → 422 naming date_to. */
export function createdRange(filters: { date_from?: string | undefined; date_to?: string | undefined }): CreatedRange {
  const { date_from: from, date_to: to } = filters;
  if (from !== undefined && to !== undefined && from > to) throw errors.invalid('date_to', 'must not be before date_from');
  return { ...(from !== undefined && { from: `${from}T00:00:00Z` }), ...(to !== undefined && { to: `${to}T23:59:59Z` }) };
}

/** The search text, or null when absent or empty (an empty search filters nothing). */
export function searchText(search: string | undefined): string | null {
  return search === undefined || search === '' ? null : search;
}


/** Staff lists show whose each record is: sets `client_email` and `client_name` (null for a client that is gone). */
export function addContacts<T extends { client_id: number; client_email?: string | null; client_name?: string | null }>(
  records: T[],
  contacts: ReadonlyMap<number, { email: string; name: string }>,
): T[] {
  for (const record of records) {
    const contact = contacts.get(record.client_id);
    record.client_email = contact?.email ?? null;
    record.client_name = contact?.name ?? null;
  }
  return records;
}
