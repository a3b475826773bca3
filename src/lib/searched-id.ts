// A search of digits alone may also name a record by id: shared by the staff lists (platform/list-filters.ts) and the
// searches over a million rows (db/search.ts), so both read "42" the same way.

/** A search of digits alone may also name a record by id (ids are 32-bit integers): that id, or null. */
export function searchedId(text: string): number | null {
  return /^\d{1,10}$/.test(text) && Number(text) <= 2_147_483_647 ? Number(text) : null;
}
