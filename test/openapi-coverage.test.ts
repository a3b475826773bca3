// Every action declares its result schema and a real summary (CONTRACT §11): the OpenAPI document is only as good as
// they are, and the drift check (test/helpers/result-check.ts) can only validate what is declared.
import { describe, expect, it } from 'vitest';
import type { ModuleApi } from '../src/http/action.ts';
import { listActions } from '../src/http/gateway.ts';
import { modules } from '../src/modules/index.ts';
import { accountProfileApi } from '../src/modules/account/api.ts';
import { recoveryClientApi, recoveryProfileApi, recoveryStaffApi } from '../src/modules/account/recovery-api.ts';
import { cartApi } from '../src/modules/cart/api.ts';
import { clientApi } from '../src/modules/client/api.ts';
import { cronApi } from '../src/modules/cron/api.ts';
import { emailApi } from '../src/modules/email/api.ts';
import { invoiceApi } from '../src/modules/invoice/api.ts';
import { orderApi } from '../src/modules/order/api.ts';

/**
 * Modules whose result schemas are being written on another branch. Delete this list (and its use below) once they
 * have merged: the test then requires a result and a summary of every action.
 */
const NOT_YET_DESCRIBED: readonly ModuleApi[] = [
  // Being described on branch i11-openapi (removed from here module by module).
  accountProfileApi, recoveryClientApi, recoveryProfileApi, recoveryStaffApi, cartApi, clientApi, cronApi, emailApi, invoiceApi, orderApi,
];

function lacking(from: readonly ModuleApi[]): string[] {
  return listActions(from).flatMap(({ role, module, action, def }) => {
    const missing = [def.result === undefined && 'result', (def.summary ?? '').trim() === '' && 'summary'].filter(Boolean);
    return missing.length === 0 ? [] : [`${role}/${module}/${action} (no ${missing.join(', no ')})`];
  });
}

describe('result schemas and summaries', () => {
  it('every action declares a result schema and a summary', () => {
    // The modules still allowed to lack them are listed on every run, so the gap stays visible until it is closed.
    const pending = lacking(NOT_YET_DESCRIBED);
    if (pending.length > 0) console.info(`Actions without a result schema or summary yet (${pending.length}):\n${pending.join('\n')}`);
    const described = modules.filter((module) => !NOT_YET_DESCRIBED.includes(module));
    expect(lacking(described)).toEqual([]);
  });
});
