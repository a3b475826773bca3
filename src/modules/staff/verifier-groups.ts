// Which admin groups make verifier tokens (CONTRACT §11) and what their scopes are: a verifier's group grants
// `serviceapikey.check` and otherwise only the permissions of verifier scopes. Pure: the staff service asks.
import { PORTAL_PERMISSION, VERIFIER_PERMISSION } from '../../platform/permissions.ts';

/** Administrators: every permission, never a verifier. */
const ADMINISTRATORS_GROUP_ID = 1;

/**
 * What a verifier token may do besides verifying keys, and the permission each scope adds to its group: `portal`
 * makes customer-portal links (issue 25).
 */
export const VERIFIER_SCOPES = { portal: PORTAL_PERMISSION } as const;
export type VerifierScope = keyof typeof VERIFIER_SCOPES;

const SCOPE_PERMISSIONS: readonly string[] = Object.values(VERIFIER_SCOPES);

/**
 * A verifier's group grants `serviceapikey.check` and nothing else but verifier scopes' permissions (and is not
 * Administrators, which grants everything).
 */
export function grantsOnlyVerification(groupId: number, permissions: readonly string[]): boolean {
  return (
    groupId !== ADMINISTRATORS_GROUP_ID &&
    permissions.includes(VERIFIER_PERMISSION) &&
    permissions.every((permission) => permission === VERIFIER_PERMISSION || SCOPE_PERMISSIONS.includes(permission))
  );
}

/** The scopes a verifier group's permissions give, in the catalogue's order. */
export function scopesOf(permissions: readonly string[]): VerifierScope[] {
  return (Object.keys(VERIFIER_SCOPES) as VerifierScope[]).filter((scope) => permissions.includes(VERIFIER_SCOPES[scope]));
}
