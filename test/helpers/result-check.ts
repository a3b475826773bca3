// Keeps the OpenAPI document honest (CONTRACT §11): while the suite runs, every successful answer an action gives is
// validated against the action's declared `result` schema, with every object closed (a property the schema does not
// declare is a mismatch). Installed by the test harness only, so production never pays for it.
import { FormatRegistry, type TSchema } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import type { FastifyInstance } from 'fastify';
import type { ModuleApi } from '../../src/platform/action.ts';
import { listActions } from '../../src/http/gateway.ts';
import { isFileResultSchema } from '../../src/platform/schemas.ts';

// The contract's own form of a moment (CONTRACT §1): UTC with a Z, so an offset or a local time is a mismatch too.
// ISO 8601's expanded years (`+010000-…`) are accepted: rows written by an older version may hold them (see
// test/security/dates.test.ts), and the API answers them as stored.
const UTC_MOMENT = /^(\d{4}|[+-]\d{6})-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/;
if (!FormatRegistry.Has('date-time')) FormatRegistry.Set('date-time', (value) => UTC_MOMENT.test(value) && !Number.isNaN(Date.parse(value)));

type Node = Record<string | symbol, unknown> & { type?: unknown; additionalProperties?: unknown; patternProperties?: unknown };

/** A copy of the schema in which every object that does not say otherwise refuses undeclared properties. */
export function closeObjects(schema: TSchema): TSchema {
  if (Array.isArray(schema)) return schema.map((item: TSchema) => closeObjects(item)) as unknown as TSchema;
  if (schema === null || typeof schema !== 'object') return schema;
  // Spread keeps TypeBox's symbol-keyed markers (Kind), which the compiler needs.
  const out: Node = { ...schema };
  for (const [key, value] of Object.entries(schema)) {
    if (value !== null && typeof value === 'object') out[key] = closeObjects(value as TSchema);
  }
  if (out.type === 'object' && out.additionalProperties === undefined && out.patternProperties === undefined) out.additionalProperties = false;
  return out as unknown as TSchema;
}

export interface ResultMismatch {
  action: string;
  message: string;
}

const checkers = new WeakMap<TSchema, TypeCheck<TSchema>>();

function checkerOf(schema: TSchema): TypeCheck<TSchema> {
  let checker = checkers.get(schema);
  if (checker === undefined) {
    checker = TypeCompiler.Compile(closeObjects(schema));
    checkers.set(schema, checker);
  }
  return checker;
}

/** The mismatches of `result` against `schema`, each as `result/path: problem (value)`; empty when it conforms. */
export function resultMismatches(schema: TSchema, result: unknown): string[] {
  const checker = checkerOf(schema);
  if (checker.Check(result)) return [];
  const out: string[] = [];
  for (const error of checker.Errors(result)) {
    out.push(`result${error.path}: ${error.message} (got ${JSON.stringify(error.value)?.slice(0, 80) ?? 'undefined'})`);
    if (out.length === 5) break;
  }
  return out;
}

/**
 * Adds an onSend hook validating the successful JSON answers of the modules' actions; mismatches are collected in the
 * returned list (the harness fails the call that got one, and the file at close for calls that bypassed it).
 * Actions without a `result` are skipped (test/http/openapi-coverage.test.ts lists them).
 */
export function installResultCheck(app: FastifyInstance, modules: readonly ModuleApi[]): ResultMismatch[] {
  const schemas = new Map<string, TSchema>();
  for (const { role, module, action, def } of listActions(modules)) {
    if (def.result !== undefined && !isFileResultSchema(def.result)) schemas.set(`/api/${role}/${module}/${action}`, def.result);
  }
  const mismatches: ResultMismatch[] = [];
  app.addHook('onSend', async (request, reply, payload) => {
    const url = request.routeOptions.url;
    const schema = url === undefined ? undefined : schemas.get(url);
    if (schema === undefined || reply.statusCode !== 200 || typeof payload !== 'string') return payload;
    const action = url!.slice('/api/'.length);
    let result: unknown;
    try {
      ({ result } = JSON.parse(payload) as { result: unknown });
    } catch {
      mismatches.push({ action, message: 'the answer is not JSON' });
      return payload;
    }
    for (const message of resultMismatches(schema, result)) mismatches.push({ action, message });
    return payload;
  });
  return mismatches;
}

export function describeMismatches(mismatches: readonly ResultMismatch[]): string {
  return mismatches.map(({ action, message }) => `${action}: ${message}`).join('\n');
}
