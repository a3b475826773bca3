// Which admin actions the audit log records (by name, or the action's `audit` flag) and which names hold secrets
// (src/platform/audit.ts, docs/audit-log.md).
import { describe, expect, it } from 'vitest';
import { isChangingAction, isSecretName } from '../../src/platform/audit.ts';
import { modules } from '../../src/modules/index.ts';

describe('the audit rules', () => {
  it('reads as reads what reads, as changes what changes', () => {
    for (const name of ['get', 'get_list', 'get_info', 'get_summary', 'transaction_get_list', 'balance_get_total', 'template_get', 'is_cron_enabled', 'pdf', 'credit_note_pdf', 'template_render', 'check', 'find', 'usage', 'history', 'analytics', 'client_countries', 'delivery_status', 'log_get_list', 'dashboard', 'dashboard_list', 'oss_report', 'analytics_not_found', 'vat_status']) {
      expect(isChangingAction(name, {}), name).toBe(false);
    }
    for (const name of ['create', 'update', 'delete', 'refund', 'reset', 'mark_as_paid', 'settings_update', 'balance_add_funds', 'group_update', 'session_create', 'rotate_secret', 'send_test', 'logout']) {
      expect(isChangingAction(name, {}), name).toBe(true);
    }
    expect(isChangingAction('update', { audit: false })).toBe(false);
    expect(isChangingAction('login', { audit: 'login' })).toBe(false);
    // Still audited; the gateway records it after it ran, not in an action transaction (a provider call).
    expect(isChangingAction('refund', { audit: 'after' })).toBe(true);
  });

  it('leaves out the telemetry and the scheduler run, and keeps every other changing admin action in', () => {
    const changing = new Set<string>();
    for (const module of modules) for (const [name, def] of Object.entries(module.admin ?? {})) if (isChangingAction(name, def)) changing.add(`${module.name}/${name}`);
    for (const skipped of ['serviceapikey/report_usage', 'usage/ingest', 'cron/run', 'serviceapikey/check', 'serviceapikey/get_info']) expect(changing.has(skipped), skipped).toBe(false);
    for (const kept of ['client/update', 'product/update', 'system/settings_update', 'invoice/refund', 'client/balance_add_funds', 'serviceapikey/reset', 'serviceapikey/update', 'serviceapikey/create', 'serviceapikey/delete', 'staff/group_update', 'staff/change_password', 'profile/api_key_reset']) {
      expect(changing.has(kept), kept).toBe(true);
    }
  });

  it('knows secrets by name', () => {
    for (const name of ['password', 'password_hash', 'api_token_hash', 'api_token_enc', 'secret_enc', 'stripe_secret_key', 'api_key', 'key_hash', 'totp_secret', 'recovery_codes', 'smtp_url', 'code', 'private_key']) {
      expect(isSecretName(name), name).toBe(true);
    }
    for (const name of ['title', 'email', 'status', 'pricing', 'company_name', 'first_name', 'monkey', 'keyword', 'description', 'amount']) {
      expect(isSecretName(name), name).toBe(false);
    }
  });
});
