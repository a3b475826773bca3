// The audit log's contract with the gateway (docs/audit-log.md): which admin actions change something, which names
// hold secrets, and the recorder the gateway hands a changing action to. The activity module implements the recorder
// (src/modules/activity/recorder.ts); the gateway knows only this file, so an action added later is audited by being
// an admin action, with nothing to register.
import type { ActionDef, AdminIdentity } from './action.ts';

/**
 * Action names that only read. An admin action is "changing" unless its name reads like one of these or it says
 * `audit: false`; a read action with an unusual name only costs a transaction, since an entry is written only when
 * the action changed a row.
 */
const READ_NAMES = /^(get|find|check|info|usage|history|service|analytics|list|search|pdf|export|whoami|delivery_status)$|^get_|^is_|_get$|_get_|_pdf$|_render$|_countries$|_summary$|^dashboard(_list)?$|_report$|_not_found$|^vat_status$/;

export function isChangingAction(action: string, def: Pick<ActionDef, 'audit'>): boolean {
  if (def.audit === false || def.audit === 'login') return false;
  return !READ_NAMES.test(action);
}

/**
 * Names whose values never enter the log, only the fact that they changed: passwords, tokens, secrets, keys, hashes,
 * sealed (`_enc`) columns, TOTP material and recovery codes. Matched on the parameter's or column's name; the settings
 * catalogue's `secret` kind is the other source (the activity module asks it for settings).
 */
const SECRET_NAMES = /password|passwd|token|secret|(^|_)key($|_)|api_key|apikey|hash|_enc$|totp|recovery|otp|private|credential|smtp_url|code$/i;

export function isSecretName(name: string): boolean {
  return SECRET_NAMES.test(name);
}

/** One changing admin action, as the gateway hands it to the recorder. */
export interface AuditedCall {
  /** `admin/<module>/<action>`. */
  action: string;
  module: string;
  name: string;
  identity: AdminIdentity;
  ip: string;
  params: Record<string, unknown>;
}

/** A staff login, or a refused one (wrong password, unknown address, wrong or missing second factor). */
export interface LoginAttempt {
  ip: string;
  email: string;
  /** The staff member who logged in; null when refused. */
  staff: { id: number; name: string; email: string } | null;
  /** The refusal's error code and message when refused. */
  failure: { code: number; message: string } | null;
}

export interface ActionRecorder {
  /**
   * Runs `work` (the action's handler) in one transaction that its services join, and writes the action's entry in it
   * when the action changed something, just before it commits. A throw from `work` or from writing the entry rolls
   * back both.
   */
  runChanging(call: AuditedCall, work: () => unknown): Promise<unknown>;
  /**
   * Runs `work` outside any action transaction (an action marked `audit: 'after'`) and, once it has succeeded, writes
   * its entry (the parameters given) in its own statement. A failed action leaves no entry.
   */
  runThenRecord(call: AuditedCall, work: () => unknown): Promise<unknown>;
  /** Writes a login's entry (in its own statement: a failed login changes nothing to commit with). */
  recordLogin(attempt: LoginAttempt): Promise<void>;
}
