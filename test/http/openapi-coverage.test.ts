// Every action declares its result schema and a real summary (CONTRACT §11): the OpenAPI document is only as good as
// they are, and the drift check (test/helpers/result-check.ts) can only validate what is declared.
import { describe, expect, it } from 'vitest';
import type { ModuleApi } from '../../src/platform/action.ts';
import { listActions } from '../../src/http/gateway.ts';
import { modules } from '../../src/modules/index.ts';

function lacking(from: readonly ModuleApi[]): string[] {
  return listActions(from).flatMap(({ role, module, action, def }) => {
    const missing = [def.result === undefined && 'result', (def.summary ?? '').trim() === '' && 'summary'].filter(Boolean);
    return missing.length === 0 ? [] : [`${role}/${module}/${action} (no ${missing.join(', no ')})`];
  });
}

describe('result schemas and summaries', () => {
  it('every action declares a result schema and a summary', () => {
    expect(lacking(modules)).toEqual([]);
  });
});
