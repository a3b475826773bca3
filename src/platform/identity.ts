// Who is calling. Resolved by the gateway before an action runs.

export interface StaffPrincipal {
  id: number;
  email: string;
  name: string;
  adminGroupId: number;
  /** 'all' for group 1 (Administrators). */
  permissions: ReadonlySet<string> | 'all';
  /**
   * A verifier credential (CONTRACT §11): its group grants exactly `serviceapikey.check`. The gateway lets it call
   * only the actions that opt in with `verifier: true` (src/http/auth.ts), whatever permissions those declare.
   */
  verifier: boolean;
}

export interface ClientPrincipal {
  id: number;
  email: string;
  name: string;
}

export type Identity =
  | { role: 'guest' }
  | { role: 'admin'; staff: StaffPrincipal; via: 'token' | 'session' }
  | { role: 'client'; client: ClientPrincipal; via: 'token' | 'session' };

export function hasPermission(staff: StaffPrincipal, permission: string): boolean {
  return staff.permissions === 'all' || staff.permissions.has(permission);
}

/** Finds the account behind a credential: the staff and client services implement it for their accounts. */
export interface PrincipalLookup<P> {
  /** The account whose API token this is, or null. */
  principalByToken(token: string): Promise<P | null>;
  /** The account a session names, or null when it is gone or not active. */
  principalById(id: number): Promise<P | null>;
}

