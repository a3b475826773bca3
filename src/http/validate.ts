// Turns an action's TypeBox schema into a validator: form strings are coerced to the schema's numbers and booleans,
// nulls count as "not sent", and the first problem becomes a 422 that names the parameter.
import { FormatRegistry, type TObject, type TSchema } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { errors } from './errors.ts';

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
FormatRegistry.Set('email', (value) => value.length <= 254 && EMAIL.test(value));
FormatRegistry.Set('date', (value) => /^\d{4}-\d{2}-\d{2}$/.test(value) && !Number.isNaN(Date.parse(`${value}T00:00:00Z`)));

const NUMERIC = /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/;

type Schema = TSchema & { type?: string | string[]; properties?: Record<string, TSchema>; items?: TSchema };

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
      return value;
    case 'array':
      if (schema.items !== undefined && Array.isArray(value)) return value.map((item) => coerce(schema.items as Schema, item));
      return value;
    default:
      return value;
  }
}

function problemOf(message: string, present: boolean): string {
  if (!present) return 'is required';
  return `is invalid: ${message.charAt(0).toLowerCase()}${message.slice(1)}`;
}

export type Validator = (input: Record<string, unknown>) => Record<string, unknown>;

export function compileValidator(schema: TObject): Validator {
  const checker = TypeCompiler.Compile(schema);
  return (input) => {
    const value = coerce(schema, input) as Record<string, unknown>;
    if (checker.Check(value)) return value;
    const first = checker.Errors(value).First();
    if (first === undefined) throw errors.invalid('params', 'are invalid');
    const param = first.path.replace(/^\//, '').replaceAll('/', '.') || 'params';
    let present: unknown = value;
    for (const part of first.path.split('/').slice(1)) {
      present = present !== null && typeof present === 'object' ? (present as Record<string, unknown>)[part] : undefined;
    }
    throw errors.invalid(param, problemOf(first.message, present !== undefined));
  };
}
