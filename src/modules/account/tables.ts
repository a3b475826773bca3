// Tables of the account module (account security, migrations 009 and 018): single-use tokens, TOTP secrets, recovery
// codes and the failed second-factor codes of each account. Only this module writes them.
import type { Generated } from 'kysely';

export type AccountSubjectType = 'client' | 'admin';

export type AccountTokenPurpose = 'client_password_reset' | 'staff_password_reset' | 'client_email_confirm' | 'client_email_change' | 'staff_email_change';

export interface AccountTokenTable {
  id: Generated<number>;
  purpose: AccountTokenPurpose;
  subject_type: AccountSubjectType;
  subject_id: number;
  /** Keyed hash (HMAC under the instance secret) of the token sent by mail; the token itself is never stored. */
  token_hash: string;
  /** For `client_email_change` and `staff_email_change`: the address being confirmed; it becomes the client's e-mail when confirmed. */
  new_email: string | null;
  created_at: string;
  expires_at: string;
  /** Set when the token is used or voided by a newer one: a token with used_at works no more. */
  used_at: string | null;
}

export interface AccountTotpTable {
  subject_type: AccountSubjectType;
  subject_id: number;
  /** The shared secret (raw bytes, base32) sealed with the instance secret box. */
  secret_enc: string;
  /** Null while set-up awaits its first code; login asks for a code only once this is set. */
  enabled_at: string | null;
  /** The last time step whose code was accepted: codes of this step or older never work again. */
  last_step: number | null;
  created_at: string;
  updated_at: string;
}

export interface AccountRecoveryCodeTable {
  id: Generated<number>;
  subject_type: AccountSubjectType;
  subject_id: number;
  /** Keyed hash of the normalised code. */
  code_hash: string;
  used_at: string | null;
  created_at: string;
}

/** Failed second-factor codes of one account in the current 15-minute window (migration 018, issue 20 M5). */
export interface AccountSecondFactorFailureTable {
  subject_type: AccountSubjectType;
  subject_id: number;
  /** When the first failure of the current window happened; a failure after the window starts a new one. */
  window_started_at: string;
  failures: number;
  /** Set when the window reached the ceiling: no code is checked before this moment. */
  locked_until: string | null;
}

export interface AccountTables {
  account_tokens: AccountTokenTable;
  account_totp: AccountTotpTable;
  account_recovery_codes: AccountRecoveryCodeTable;
  account_second_factor_failures: AccountSecondFactorFailureTable;
}
