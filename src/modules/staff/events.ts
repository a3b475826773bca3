// Events of the staff service, emitted inside the transaction of the change they report.

export interface StaffCredentialsChanged {
  staffId: number;
  /**
   * Why: a new password or e-mail address (outstanding reset and e-mail change links are voided, issue 20 L1/L2), or a
   * verifier credential rotated or revoked (every link and session derived from it ends, M3).
   */
  reason: 'password' | 'email' | 'verifier_rotated' | 'verifier_revoked';
}

declare module '../../platform/events.ts' {
  interface TollgateEvents {
    'staff.credentials_changed': StaffCredentialsChanged;
  }
}
