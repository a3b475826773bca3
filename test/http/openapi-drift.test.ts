// The check that keeps the OpenAPI document from drifting (CONTRACT §11): the harness validates every successful
// answer against its action's declared result schema. These tests prove that the check itself catches a mismatch,
// names the action and the path, and leaves conforming answers, failures and files alone.
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { FileResult, guestAction, type ModuleApi } from '../../src/platform/action.ts';
import { errors } from '../../src/platform/errors.ts';
import { FileDownload, Money, Nullable, PageOf, Timestamp } from '../../src/platform/schemas.ts';
import { modules } from '../../src/modules/index.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { closeObjects, installResultCheck, resultMismatches, type ResultMismatch } from '../helpers/result-check.ts';

const Item = Type.Object({ id: Type.Integer(), total: Money, paid_at: Nullable(Timestamp) });

describe('result schema check', () => {
  it('accepts a result that matches exactly, nulls included', () => {
    const page = { list: [{ id: 1, total: '10.00', paid_at: null }, { id: 2, total: '0.50', paid_at: '2026-11-22T10:00:00Z' }], page: 1, per_page: 2, pages: 1, total: 2 };
    expect(resultMismatches(PageOf(Item), page)).toEqual([]);
  });

  it('names the path of an undeclared property (objects are closed)', () => {
    const problems = resultMismatches(PageOf(Item), { list: [{ id: 1, total: '1.00', paid_at: null, secret: 'x' }], page: 1, per_page: 1, pages: 1, total: 1 });
    expect(problems.join('\n')).toContain('result/list/0/secret');
  });

  it('names the path of a missing property, a wrong type and a float where money is a string', () => {
    expect(resultMismatches(Item, { id: 1, paid_at: null }).join('\n')).toContain('result/total');
    expect(resultMismatches(Item, { id: '1', total: '1.00', paid_at: null }).join('\n')).toContain('result/id');
    expect(resultMismatches(Item, { id: 1, total: 10.5, paid_at: null }).join('\n')).toContain('result/total');
  });

  it('refuses a moment that is not UTC ISO 8601 with a Z', () => {
    for (const moment of ['2026-11-22 10:00:00', '2026-11-22T10:00:00+01:00', 'yesterday']) {
      expect(resultMismatches(Item, { id: 1, total: '1.00', paid_at: moment }), moment).not.toEqual([]);
    }
    expect(resultMismatches(Item, { id: 1, total: '1.00', paid_at: '2026-11-22T10:00:00.123Z' })).toEqual([]);
    // An expanded year, as rows of an older version may hold (test/security/dates.test.ts).
    expect(resultMismatches(Item, { id: 1, total: '1.00', paid_at: '+010000-01-01T00:00:00Z' })).toEqual([]);
  });

  it('keeps an object that allows extra properties open, and does not change the declared schema', () => {
    const Open = Type.Object({ a: Type.String() }, { additionalProperties: Type.String() });
    expect(resultMismatches(Open, { a: 'x', b: 'y' })).toEqual([]);
    const declared = Type.Object({ a: Type.String() });
    expect((closeObjects(declared) as { additionalProperties?: unknown }).additionalProperties).toBe(false);
    expect(declared.additionalProperties).toBeUndefined();
  });
});

describe('result schema check in the harness', () => {
  let t: TestApp;
  let app: FastifyInstance;
  let mismatches: ResultMismatch[];
  let answer: unknown;

  const probeApi: ModuleApi = {
    name: 'probe',
    guest: {
      thing: guestAction({ params: Type.Object({}), summary: 'Probe', result: Item, handler: () => answer }),
      fails: guestAction({ params: Type.Object({}), summary: 'Probe failure', result: Item, handler: () => { throw errors.notFound('Thing'); } }),
      file: guestAction({ params: Type.Object({}), summary: 'Probe file', result: FileDownload('text/plain'), handler: () => new FileResult('text/plain', Buffer.from('hi'), 'a.txt') }),
      undescribed: guestAction({ params: Type.Object({}), summary: 'Probe without a result', handler: () => ({ anything: 1 }) }),
    },
  };

  beforeAll(async () => {
    t = await createTestApp();
    app = buildApp(t.services, { modules: [...modules, probeApi] });
    mismatches = installResultCheck(app, [probeApi]);
    await app.ready();
  });
  afterAll(async () => {
    await app.close();
    await t.close();
  });

  const get = async (action: string) => (await app.inject({ method: 'GET', url: `/api/guest/probe/${action}` })).statusCode;

  it('records nothing for a conforming answer, a failure, a file or an action without a result', async () => {
    answer = { id: 1, total: '2.00', paid_at: null };
    expect([await get('thing'), await get('fails'), await get('file'), await get('undescribed')]).toEqual([200, 404, 200, 200]);
    expect(mismatches).toEqual([]);
  });

  it('records a drifted answer with the action and the path of the mismatch', async () => {
    answer = { id: 1, total: 2, paid_at: null, extra: true };
    expect(await get('thing')).toBe(200);
    const found = mismatches.splice(0);
    expect(found.map((m) => m.action)).toEqual(['guest/probe/thing', 'guest/probe/thing']);
    expect(found.map((m) => m.message).join('\n')).toMatch(/result\/total[\s\S]*result\/extra|result\/extra[\s\S]*result\/total/);
  });

  it('makes the harness fail the call, and the file at close for an answer that bypassed call(), naming the action', async () => {
    // Pretend guest/system/version declared an integer result: its real answer (a version string) then drifts.
    const version = modules.find((m) => m.name === 'system')!.guest!.version!;
    const declared = version.result;
    version.result = Type.Integer();
    try {
      const drifting = await createTestApp();
      await expect(drifting.call('/api/guest/system/version', {}, { method: 'GET' })).rejects.toThrow(/guest\/system\/version: result: Expected integer/);
      await drifting.app.inject({ method: 'GET', url: '/api/guest/system/version' });
      await expect(drifting.close()).rejects.toThrow(/guest\/system\/version: result/);
    } finally {
      version.result = declared;
    }
  });
});
