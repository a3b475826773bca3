// Which FOSSBilling a database is. FOSSBilling records the last schema patch it applied in `setting.last_patch`
// (src/library/FOSSBilling/UpdatePatcher.php); a fresh install writes the patch level of its release. The releases
// this import reads, by patch level (from the release tags' content.sql and UpdatePatcher.php):
//   0.6.0 = 38 … 0.6.22 = 42, 0.7.0–0.7.2 = 43, 0.8.0 = 64 … 0.8.5 = 91.
// Older (0.5.x and BoxBilling, ≤ 37) and newer (> 91) layouts are refused by name rather than half read.

export const FIRST_SUPPORTED_PATCH = 38;
export const LAST_SUPPORTED_PATCH = 91;

/** The release a patch level belongs to, as an operator would name it. */
export function versionOfPatch(patch: number): string {
  if (patch <= 34) return '0.5.x or older';
  if (patch < FIRST_SUPPORTED_PATCH) return 'a 0.5/0.6 development build';
  if (patch <= 42) return '0.6.x';
  if (patch === 43) return '0.7.x';
  if (patch <= LAST_SUPPORTED_PATCH) return '0.8.x';
  return 'a release newer than 0.8.5';
}

/** Null when the import reads this database, else the refusal to show (naming the version found). */
export function refusalFor(lastPatch: string | null): string | null {
  if (lastPatch === null) {
    return 'This is not a FOSSBilling 0.6–0.8 database: it has no setting.last_patch (BoxBilling, or not FOSSBilling at all).';
  }
  const patch = /^\s*\d+\s*$/.test(lastPatch) ? Number(lastPatch) : Number.NaN;
  if (!Number.isInteger(patch)) return `This FOSSBilling database has an unreadable schema patch level ("${lastPatch}").`;
  if (patch >= FIRST_SUPPORTED_PATCH && patch <= LAST_SUPPORTED_PATCH) return null;
  return (
    `FOSSBilling ${versionOfPatch(patch)} (schema patch ${patch}) is not supported: this import reads FOSSBilling 0.6.0 to ` +
    `0.8.5 (patches ${FIRST_SUPPORTED_PATCH}–${LAST_SUPPORTED_PATCH}). Upgrade FOSSBilling to 0.8.5 first, or use a Tollgate that reads your version.`
  );
}
