// The gateway's recorder (platform/audit.ts): runs a changing admin action in one transaction that its services join
// (db/ambient.ts), reads its target before and after inside that transaction, and writes the entry there just before
// the commit. Nothing is written when the action changed no row (a read with an unusual name, a no-op update).
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { actionTransactionWrote, inActionTransaction } from '../../db/ambient.ts';
import type { ActionRecorder, AuditedCall, LoginAttempt } from '../../platform/audit.ts';
import { SETTINGS, type SettingName } from '../../platform/settings-catalogue.ts';
import type { AdminIdentity } from '../../platform/action.ts';
import { diffRows, paramChanges, type Change } from './changes.ts';
import { readTarget, targetAfter, targetBefore, type Target } from './targets.ts';
import { PRIORITY_WARNING, type ActivityService } from './service.ts';
import type { ActorType } from './tables.ts';

export function actorOf(identity: AdminIdentity): ActorType {
  if (identity.staff.verifier) return 'verifier';
  return identity.via === 'token' ? 'api_token' : 'staff';
}

/** The stored text of the settings an update names (secrets sealed: compared, never shown). */
async function readSettings(trx: Kysely<Database>, names: string[]): Promise<Record<string, unknown>> {
  if (names.length === 0) return {};
  const rows = await trx.selectFrom('settings').select(['name', 'value']).where('name', 'in', names).execute();
  return Object.fromEntries(rows.map((row) => [row.name, row.value]));
}

const isSecretSetting = (name: string): boolean => (SETTINGS as Record<string, { kind: string } | undefined>)[name]?.kind === 'secret';

/** A line a person reads in the list: the action, its target and the fields it changed. */
function describe(action: string, target: Target, changes: Change[]): string {
  const on = target.id === null ? target.type : `${target.type} #${target.id}`;
  const fields = changes.map((change) => change.field.replace(/^#\d+\./, ''));
  const named = [...new Set(fields)].slice(0, 12).join(', ');
  return `${action} on ${on}${named === '' ? '' : `: ${named}`}`;
}

export function createActionRecorder(deps: { db: Kysely<Database>; activity: Pick<ActivityService, 'write'> }): ActionRecorder {
  const { db, activity } = deps;

  /** The entry of one staff action, on `q` (the action's transaction, or the pool after a provider call). */
  async function writeEntry(q: Kysely<Database>, call: AuditedCall, final: Target, changes: Change[]): Promise<void> {
    const { staff } = call.identity;
    await activity.write(q, {
      actorType: actorOf(call.identity),
      staff: { id: staff.id, name: staff.name, email: staff.email },
      ip: call.ip,
      action: call.action,
      target: { type: final.type, id: final.id },
      changes,
      message: describe(call.action, final, changes),
    });
  }

  return {
    runChanging(call: AuditedCall, work: () => unknown): Promise<unknown> {
      return inActionTransaction(db as Kysely<never>, async (handle) => {
        const trx = handle as unknown as Kysely<Database>;
        const target = targetBefore(call.module, call.name, call.params, call.identity.staff.id);
        const settingNames = target.type === 'setting' ? Object.keys(call.params).filter((name) => name in SETTINGS) : [];
        const before = target.type === 'setting' ? await readSettings(trx, settingNames) : await readTarget(trx, target);
        const result = await work();
        if (!actionTransactionWrote()) return result;
        const final = targetAfter(target, result);
        let changes: Change[];
        if (target.type === 'setting') changes = diffRows(before, await readSettings(trx, settingNames), isSecretSetting);
        else if (final.rule.table !== undefined && final.id !== null) changes = diffRows(final.id === target.id ? before : null, await readTarget(trx, final));
        else changes = paramChanges(call.params);
        await writeEntry(trx, call, final, changes);
        return result;
      });
    },

    async runThenRecord(call: AuditedCall, work: () => unknown): Promise<unknown> {
      // The same before → after as runChanging, each read in its own statement: another change landing in between
      // would show in it (the price of not holding a transaction across a provider call).
      const target = targetBefore(call.module, call.name, call.params, call.identity.staff.id);
      const before = await readTarget(db, target);
      const result = await work();
      const final = targetAfter(target, result);
      const diff = final.rule.table !== undefined && final.id !== null ? diffRows(final.id === target.id ? before : null, await readTarget(db, final)) : [];
      await writeEntry(db, call, final, diff.length > 0 ? diff : paramChanges(call.params));
      return result;
    },

    async recordLogin(attempt: LoginAttempt): Promise<void> {
      const ok = attempt.staff !== null;
      await activity.write(db, {
        actorType: ok ? 'staff' : 'guest',
        staff: attempt.staff,
        ip: attempt.ip,
        action: 'guest/staff/login',
        target: { type: 'staff', id: ok ? String(attempt.staff!.id) : null },
        changes: [],
        priority: ok ? undefined : PRIORITY_WARNING,
        // The address typed is kept for a refusal (who was tried); the password never reaches this code.
        message: ok ? `Staff login: ${attempt.staff!.email}` : `Failed staff login for ${attempt.email}: ${attempt.failure?.message ?? 'refused'}`,
      });
    },
  };
}

/** The settings the catalogue marks secret, for tests and docs. */
export const secretSettingNames = (Object.keys(SETTINGS) as SettingName[]).filter(isSecretSetting);
