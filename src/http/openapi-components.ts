// The reusable parts of the OpenAPI document: TypeBox schemas turned into plain JSON Schema with every schema that
// names itself (`$id`) moved into `components.schemas`, the envelopes of CONTRACT §2 and the error responses.
import type { TSchema } from '@sinclair/typebox';
import { fileContentType } from '../platform/schemas.ts';

type Json = Record<string, unknown>;

/** Collects named schemas while schemas are converted; the same name for two different schemas is a bug. */
export class SchemaRegistry {
  readonly schemas: Record<string, Json> = {};

  /** A plain JSON Schema copy of `schema` (no TypeBox symbols), named parts replaced by `$ref`s. */
  convert(schema: TSchema): Json {
    return this.walk(JSON.parse(JSON.stringify(schema)) as Json) as Json;
  }

  private walk(node: unknown): unknown {
    if (Array.isArray(node)) return node.map((item) => this.walk(item));
    if (node === null || typeof node !== 'object') return node;
    const out: Json = {};
    for (const [key, value] of Object.entries(node)) out[key] = key === 'const' || key === 'default' || key === 'examples' ? value : this.walk(value);
    asMap(out);
    const id = out.$id;
    if (typeof id !== 'string') return out;
    delete out.$id;
    const known = this.schemas[id];
    if (known !== undefined && JSON.stringify(known) !== JSON.stringify(out)) throw new Error(`Two different result schemas are named "${id}"`);
    this.schemas[id] = out;
    return { $ref: `#/components/schemas/${id}` };
  }
}

/**
 * TypeBox writes a map (`Type.Record(Type.String(), X)`) as `patternProperties: {"^(.*)$": X}`; generators read the
 * same thing only as `additionalProperties: X` (orval and openapi-typescript otherwise type it as an empty object).
 * Any key, one value schema: the two say the same, so nothing is lost.
 */
function asMap(node: Json): void {
  const patterns = node.patternProperties as Json | undefined;
  if (patterns === undefined || Object.keys(patterns).length !== 1 || !('^(.*)$' in patterns)) return;
  if (node.additionalProperties !== undefined && node.additionalProperties !== false) return;
  delete node.patternProperties;
  node.additionalProperties = patterns['^(.*)$'];
}

/** The success envelope around `result` (CONTRACT §2). */
export function successEnvelope(result: Json): Json {
  return {
    type: 'object',
    required: ['result', 'error'],
    properties: { result, error: { type: 'null' } },
  };
}

export const ERROR_ENVELOPE: Json = {
  type: 'object',
  description: 'The failure envelope (CONTRACT §2): `result` is null, `error` says why',
  required: ['result', 'error'],
  properties: {
    result: { type: 'null' },
    error: {
      type: 'object',
      required: ['message', 'code'],
      properties: {
        message: { type: 'string', description: 'Human readable; a 422 names the parameter' },
        code: { type: 'integer', description: 'The envelope code; see the response description for the codes of each HTTP status' },
      },
    },
  },
};

const errorBody = { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' } } };

/** Error responses by HTTP status, with the envelope codes each carries (CONTRACT §2). */
export const ERROR_RESPONSES: Record<string, { name: string; description: string; headers?: Json; content?: null }> = {
  '400': { name: 'BadRequest', description: 'Code 400: the body is not valid JSON or not an object, the form data is unreadable, or the input nests too deep' },
  '401': {
    name: 'Unauthorized',
    description:
      'Code 201: no credentials and no session; 202: Basic credentials with an empty password; 203: Basic user name of the other role; ' +
      '204: unknown client API token or inactive client; 205: unknown admin API token or inactive staff member',
  },
  '403': { name: 'Forbidden', description: 'Code 403: the CSRF token is missing or wrong on a session call, or the caller lacks the permission' },
  '404': { name: 'NotFound', description: 'Code 404: the record named by the parameters does not exist or is not the caller’s' },
  '409': { name: 'Conflict', description: 'Code 409: the call conflicts with the current state (a duplicate, or a status that does not allow it)' },
  '413': { name: 'PayloadTooLarge', description: 'Code 413: the body is larger than BODY_LIMIT_BYTES' },
  '422': { name: 'InvalidParameter', description: 'Code 422: a parameter is missing, of the wrong type or out of range; the message names it' },
  '429': {
    name: 'TooManyRequests',
    description: 'Code 429: a rate limit is exceeded',
    headers: { 'Retry-After': { description: 'Seconds to wait', schema: { type: 'integer' } } },
  },
  // Server errors by their own codes, not `5XX`: orval writes a status range into TypeScript as it stands (a syntax error).
  '500': { name: 'ServerError', description: 'Code 500: an internal error (details only in the server log)' },
  '502': { name: 'BadGateway', description: 'Code 502: a payment provider could not be reached or refused the request (the message says which)' },
  '503': {
    name: 'ServiceUnavailable',
    description:
      'Send the call again: nothing of it was kept. Either the process is shutting down and takes no new requests (Fastify answers before any action runs, ' +
      'with its own body `{"error": "Service Unavailable", "statusCode": 503}`, not the envelope: send it to another process, or to this one once restarted), ' +
      'or the action undid its work and answers the envelope with code 503 (a usage batch that took too long to store; a transaction PostgreSQL undid ' +
      'because another held the same records, a deadlock)',
    headers: { Connection: { description: '`close`', schema: { type: 'string' } } },
    // No schema: generated clients then keep one error type (the envelope) for everything an action answers.
    content: null,
  },
};

/** The server-error statuses every operation lists. */
export const SERVER_ERRORS = ['500', '502', '503'] as const;

export function errorResponseComponents(): Json {
  const out: Json = {};
  for (const { name, description, headers, content } of Object.values(ERROR_RESPONSES)) {
    out[name] = { description, ...(content !== null && { content: errorBody }), ...(headers !== undefined && { headers }) };
  }
  return out;
}

export const errorResponseRef = (status: keyof typeof ERROR_RESPONSES): Json => ({ $ref: `#/components/responses/${ERROR_RESPONSES[status]!.name}` });

/** The 200 response of an action: the envelope around its result, or the file it answers. */
export function successResponse(result: TSchema | undefined, registry: SchemaRegistry): Json {
  if (result === undefined) return { description: 'Success (result not described yet)', content: { 'application/json': { schema: successEnvelope({}) } } };
  const file = fileContentType(result);
  if (file !== undefined) {
    return {
      description: `The file (${file}), sent as an attachment; failures answer the JSON envelope`,
      content: { [file]: { schema: { type: 'string', contentMediaType: file } } },
    };
  }
  return { description: 'Success', content: { 'application/json': { schema: successEnvelope(registry.convert(result)) } } };
}
