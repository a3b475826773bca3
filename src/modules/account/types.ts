// Records the account module hands between its files and to its callers. Apart from two-factor.ts so that the
// second-factor limit, which two-factor.ts builds, can name the account it counts without importing it back.
import type { AccountSubjectType } from './tables.ts';

/** The account a second factor belongs to: a client or a staff member. */
export interface TwoFactorSubject {
  type: AccountSubjectType;
  id: number;
}
