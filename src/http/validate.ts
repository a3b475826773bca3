// Turns an action's TypeBox schema into a validator: form strings are coerced to the schema's numbers and booleans,
// nulls count as "not sent", and the first problem becomes a 422 that names the parameter.
import { FormatRegistry, type TObject, type TSchema } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { errors } from '../platform/errors.ts';

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
FormatRegistry.Set('email', (value) => value.length <= 254 && EMAIL.test(value));
// A real calendar day: Date.parse rolls 2024-02-30 over to 1 March, so the day must survive the round trip.
FormatRegistry.Set('date', (value) => {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) return false;
  const time = Date.parse(`${value}T00:00:00Z`);
  return !Number.isNaN(time) && new Date(time).toISOString().slice(0, 10) === value;
});

const NUMERIC = /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/;

type Schema = TSchema & { type?: string | string[]; properties?: Record<string, TSchema>; patternProperties?: Record<string, Schema>; items?: TSchema };

function coerce(schema: Schema, value: unknown): unknown {
  if (value === null) return undefined;
  switch (schema.type) {
    case 'integer':
    case 'number':
      if (typeof value === 'string') {
        const trimmed = value.trim();
        if (trimmed === '') return undefined;
        return NUMERIC.test(trimmed) ? Number(trimmed) : value;
      }
      return value;
    case 'boolean':
      if (typeof value === 'string') {
        const lowered = value.trim().toLowerCase();
        if (['1', 'true', 'on', 'yes'].includes(lowered)) return true;
        if (['0', 'false', 'off', 'no', ''].includes(lowered)) return false;
      }
      if (value === 0 || value === 1) return value === 1;
      return value;
    case 'object':
      if (schema.properties !== undefined && typeof value === 'object' && !Array.isArray(value)) {
        const source = value as Record<string, unknown>;
        const out: Record<string, unknown> = { ...source };
        for (const [name, propertySchema] of Object.entries(schema.properties)) {
          if (!(name in source)) continue;
          const coerced = coerce(propertySchema, source[name]);
          if (coerced === undefined) delete out[name];
          else out[name] = coerced;
        }
        return out;
      }
      return coerceMap(schema, value);
    case 'array':
      if (schema.items !== undefined && Array.isArray(value)) return value.map((item) => coerce(schema.items as Schema, item));
      return value;
    default:
      return value;
  }
}

/**
 * A map (TypeBox's Record: one pattern for every key) has its values coerced like properties, so a form's
 * `pricing[recurrent][1M][enabled]=1` reads as the boolean it declares.
 */
function coerceMap(schema: Schema, value: unknown): unknown {
  const patterns = schema.patternProperties === undefined ? [] : Object.values(schema.patternProperties);
  const itemSchema = patterns[0];
  // Maps of anything (custom `config`) pass unchanged: a null there is a value, not "not sent".
  if (patterns.length !== 1 || itemSchema?.type === undefined || typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [name, item] of Object.entries(value)) out[name] = item === null ? null : coerce(itemSchema, item);
  return out;
}

function problemOf(message: string, present: boolean): string {
  if (!present) return 'is required';
  return `is invalid: ${message.charAt(0).toLowerCase()}${message.slice(1)}`;
}

export type Validator = (input: Record<string, unknown>) => Record<string, unknown>;

/** The path of the first string holding a NUL character (which PostgreSQL cannot store), or null. */
function nulPath(value: unknown, path: string): string | null {
  if (typeof value === 'string') return value.includes('\u0000') ? path : null;
  if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      const found = nulPath(item, path === '' ? key : `${path}.${key}`);
      if (found !== null) return found;
    }
  }
  return null;
}

/** Only the declared parameters reach the action: unknown ones are ignored (CONTRACT §1), never passed on. */
function declaredOnly(value: Record<string, unknown>, names: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name of names) if (value[name] !== undefined) out[name] = value[name];
  return out;
}

/** True when every declared parameter is a plain string (or a union of string literals): nothing to coerce. */
function isFlatStrings(schema: TObject): boolean {
  if (schema.additionalProperties !== undefined && schema.additionalProperties !== false) return false;
  return Object.values(schema.properties).every((property: Schema) => {
    if (property.type === 'string') return true;
    const members = (property as { anyOf?: Schema[] }).anyOf;
    return members !== undefined && members.every((member) => member.type === 'string');
  });
}

/**
 * The fast path for actions whose parameters are all strings (guest/serviceapikey/check among them): one pass picks
 * the declared, non-null parameters and checks them for NUL, without the generic coercion walk and its copies.
 */
function compileFlatValidator(schema: TObject, checker: ReturnType<typeof TypeCompiler.Compile>): Validator {
  const names = Object.keys(schema.properties);
  return (input) => {
    const params: Record<string, unknown> = {};
    for (const name of names) {
      const value = input[name];
      if (value === undefined || value === null) continue;
      if (typeof value === 'string' && value.includes('\u0000')) throw errors.invalid(name, 'must not contain NUL characters');
      params[name] = value;
    }
    if (checker.Check(params)) return params;
    throw firstProblem(checker, params);
  };
}

function firstProblem(checker: ReturnType<typeof TypeCompiler.Compile>, value: Record<string, unknown>): Error {
  const first = checker.Errors(value).First();
  if (first === undefined) return errors.invalid('params', 'are invalid');
  const param = first.path.replace(/^\//, '').replaceAll('/', '.') || 'params';
  let present: unknown = value;
  for (const part of first.path.split('/').slice(1)) {
    present = present !== null && typeof present === 'object' ? (present as Record<string, unknown>)[part] : undefined;
  }
  return errors.invalid(param, problemOf(first.message, present !== undefined));
}

/**
 * The validator of an action's parameters, compiled on the action's first call rather than at start: compiling every
 * action's schema took about a fifth of the server's start-up CPU (issue 13's cold start); after the first call it
 * costs one check of a local variable.
 */
export function compileValidator(schema: TObject): Validator {
  let compiled: Validator | null = null;
  return (input) => (compiled ??= compileNow(schema))(input);
}

function compileNow(schema: TObject): Validator {
  const checker = TypeCompiler.Compile(schema);
  if (isFlatStrings(schema)) return compileFlatValidator(schema, checker);
  // A schema that allows additional properties explicitly receives them; any other gets only its declared ones.
  const declared = schema.additionalProperties === undefined || schema.additionalProperties === false ? Object.keys(schema.properties) : null;
  return (input) => {
    const value = coerce(schema, input) as Record<string, unknown>;
    if (checker.Check(value)) {
      const params = declared === null ? value : declaredOnly(value, declared);
      const withNul = nulPath(params, '');
      if (withNul !== null) throw errors.invalid(withNul || 'params', 'must not contain NUL characters');
      return params;
    }
    throw firstProblem(checker, value);
  };
}
