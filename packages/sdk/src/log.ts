// The default onError: the first failure of each kind goes to stderr, the rest stay quiet, so a wrong verifier token
// or an unreachable Tollgate is seen in the app's log once instead of never (or on every request).
import { TollgateEventRejection, TollgateHttpError } from './errors.ts';

const REFUSED_HINT =
  'Tollgate refused the verifier token: create one in the admin panel under Developers → Verifier tokens (or with ' +
  'admin/staff/verifier_create) and pass it as `token`. Keys are refused (reason UNAUTHORIZED) until then.';

/** True for a 401/403 from Tollgate: the token is unknown, deactivated, or lacks `serviceapikey.check`. */
export function isRefusedToken(error: unknown): boolean {
  return error instanceof TollgateHttpError && (error.status === 401 || error.status === 403);
}

export function logOnce(write: (line: string) => void = (line) => console.error(line)): (error: unknown, what: string) => void {
  const seen = new Set<string>();
  return (error, what) => {
    // Each rejection code of tracked events is its own kind: an UNKNOWN_METER must not hide a later UNKNOWN_KEY.
    const kind = isRefusedToken(error) ? 'refused token' : error instanceof TollgateEventRejection ? `${what} ${error.code}` : what;
    if (seen.has(kind)) return;
    seen.add(kind);
    const message = error instanceof Error ? error.message : String(error);
    write(`[@tollgate/sdk] ${what}: ${message}${kind === 'refused token' ? `. ${REFUSED_HINT}` : ''} (further ${kind} failures are not logged)`);
  };
}
