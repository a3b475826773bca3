// Events of the account module, emitted inside the transaction of the change they report.
import type { AccountSubjectType } from './tables.ts';

export interface SecondFactorLocked {
  subjectType: AccountSubjectType;
  subjectId: number;
  /** ISO 8601: when codes are checked again. */
  lockedUntil: string;
}

declare module '../../platform/events.ts' {
  interface TollgateEvents {
    /** An account's second step just locked after too many wrong codes (once per lock): its owner is told by mail. */
    'account.second_factor_locked': SecondFactorLocked;
  }
}
