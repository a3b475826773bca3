// The OpenAPI 3.1 document (CONTRACT §11), generated from the actions' TypeBox schemas (JSON Schema already): every
// action's parameters and result, its error responses, a tag per module, operationIds `<role>_<module>_<action>`,
// form and multipart bodies, deepObject query parameters, and `servers` from PUBLIC_URL.
import type { TObject, TSchema } from '@sinclair/typebox';
import type { ModuleApi, Role } from '../platform/action.ts';
import { listActions, type RegisteredAction } from './gateway.ts';
import { ERROR_ENVELOPE, errorResponseComponents, errorResponseRef, SchemaRegistry, SERVER_ERRORS, successResponse } from './openapi-components.ts';
import { asReadByGateway } from './openapi-params.ts';
import { otherRoutes } from './openapi-routes.ts';
import { VERSION } from '../platform/version.ts';

type Json = Record<string, unknown>;

export interface OpenApiOptions {
  /** PUBLIC_URL: the address the API is reached at (CONTRACT §13). */
  publicUrl: string;
  /** What each module is for, by module name: the tags' descriptions. */
  moduleDescriptions?: Readonly<Record<string, string>>;
}

const ROLE_NOTES: Record<Role, string> = {
  guest: 'Guest action: no credentials needed (any sent are ignored).',
  client: 'Client action: Basic `client:<API token>`, or a client session cookie with its `X-CSRF-Token`.',
  admin: 'Staff action: Basic `admin:<API token>`, or a staff session cookie with its `X-CSRF-Token`.',
};

type SchemaNode = TSchema & { type?: unknown; anyOf?: SchemaNode[] };

/** Objects nest in a query string as `config[length]=32` (deepObject); arrays repeat the name (form, exploded). */
function isObjectSchema(schema: SchemaNode): boolean {
  return schema.type === 'object' || (schema.anyOf?.some((member) => member.type === 'object') ?? false);
}

/** A parameter schema as JSON Schema, as the gateway reads it (booleans also take 0 and 1). */
const paramSchema = (schema: TSchema, registry: SchemaRegistry): Json => asReadByGateway(registry.convert(schema)) as Json;

function queryParameters(params: TObject, registry: SchemaRegistry): Json[] {
  const required = new Set(params.required ?? []);
  return Object.entries(params.properties).map(([name, schema]) => ({
    name,
    in: 'query',
    required: required.has(name),
    ...(isObjectSchema(schema as SchemaNode) ? { style: 'deepObject', explode: true } : { style: 'form', explode: true }),
    schema: paramSchema(schema, registry),
  }));
}

/**
 * The POST body: JSON, form or multipart fields, one schema for the three, JSON first. It is a component
 * (`components.requestBodies`) the operation refers to: orval reads a referenced body by its first media type and
 * then sends `Content-Type: application/json`; given the three inline, it sent no Content-Type at all.
 */
function requestBody(params: TObject, registry: SchemaRegistry): Json | undefined {
  if (Object.keys(params.properties).length === 0) return undefined;
  const schema = paramSchema(params, registry);
  // Form fields with nested values use bracketed names (`config[length]=32`), CONTRACT §1.
  const nested = Object.entries(params.properties).filter(([, property]) => isObjectSchema(property as SchemaNode));
  const encoding = nested.length === 0 ? undefined : Object.fromEntries(nested.map(([name]) => [name, { style: 'deepObject', explode: true }]));
  const form = { schema, ...(encoding !== undefined && { encoding }) };
  return {
    required: (params.required ?? []).length > 0,
    content: {
      'application/json': { schema },
      'application/x-www-form-urlencoded': form,
      'multipart/form-data': form,
    },
  };
}

/** The error statuses an action can answer: the gateway's own, its role's, and those of records and state. */
function errorStatuses({ role }: RegisteredAction, method: 'get' | 'post'): string[] {
  const statuses = ['400'];
  if (role !== 'guest') statuses.push('401', '403');
  statuses.push('404', '409');
  if (method === 'post') statuses.push('413');
  statuses.push('422', '429', ...SERVER_ERRORS);
  return statuses;
}

const optional = (key: string, value: Json | undefined): Json => (value === undefined ? {} : { [key]: value });

/** Files `body` under the operation's id in `components.requestBodies` and answers the reference to it. */
function bodyRef(id: string, body: Json | undefined, bodies: Json): Json | undefined {
  if (body === undefined) return undefined;
  bodies[id] = body;
  return { $ref: `#/components/requestBodies/${id}` };
}

function describe(entry: RegisteredAction): string {
  const lines = [ROLE_NOTES[entry.role]];
  if (entry.def.permission !== undefined) lines.push(`Needs the staff permission \`${entry.def.permission}\`.`);
  if (entry.def.postOnly === true) lines.push('POST only: it carries credentials, so a GET answers 405.');
  return lines.join('\n\n');
}

function operation(entry: RegisteredAction, method: 'get' | 'post', registry: SchemaRegistry, bodies: Json): Json {
  const { role, module, action, def } = entry;
  const id = `${role}_${module}_${action}`;
  const responses: Json = { '200': successResponse(def.result, registry) };
  for (const status of errorStatuses(entry, method)) responses[status] = errorResponseRef(status);
  return {
    // POST is the canonical form of an action; its GET twin carries the same name with `_via_get`.
    operationId: method === 'post' ? id : `${id}_via_get`,
    tags: [module],
    summary: def.summary ?? `${role} ${module} ${action}`,
    description: describe(entry),
    security: role === 'guest' ? [] : [{ basic: [] }, { session: [], csrf: [] }],
    ...(def.permission !== undefined && { 'x-permission': def.permission }),
    ...(method === 'post' ? optional('requestBody', bodyRef(id, requestBody(def.params, registry), bodies)) : { parameters: queryParameters(def.params, registry) }),
    responses,
  };
}

export function buildOpenApi(modules: readonly ModuleApi[], options: OpenApiOptions): Json {
  const registry = new SchemaRegistry();
  const paths: Json = {};
  const bodies: Json = {};
  const tags = new Map<string, string>();
  for (const entry of listActions(modules)) {
    const { role, module, action, def } = entry;
    tags.set(module, options.moduleDescriptions?.[module] ?? `The ${module} module`);
    // Actions carrying credentials take POST only (CONTRACT §10): their GET is not part of the API.
    const post = operation(entry, 'post', registry, bodies);
    paths[`/api/${role}/${module}/${action}`] = def.postOnly === true ? { post } : { get: operation(entry, 'get', registry, bodies), post };
  }
  const routes = otherRoutes();
  Object.assign(paths, routes.paths);
  return {
    openapi: '3.1.0',
    info: {
      title: 'Tollgate API',
      version: VERSION,
      description:
        'Every action is `/api/{role}/{module}/{action}`, by GET (query string) or POST (JSON, form or multipart), and answers the ' +
        'envelope `{"result", "error"}`: HTTP 200 with `error: null` on success, the matching HTTP status and `result: null` on failure. ' +
        'Besides the responses each operation lists, any path answers 405 (code 405) to a method other than GET or POST, and to a GET ' +
        'of an action that takes POST only; and 404 (code 740 or 879) to a path that names no action.',
    },
    servers: [{ url: options.publicUrl.replace(/\/+$/, ''), description: 'This installation (PUBLIC_URL)' }],
    tags: [...[...tags].map(([name, description]) => ({ name, description })), ...routes.tags],
    paths,
    components: {
      schemas: { ...registry.schemas, ErrorEnvelope: ERROR_ENVELOPE },
      requestBodies: bodies,
      responses: errorResponseComponents(),
      securitySchemes: {
        basic: { type: 'http', scheme: 'basic', description: 'User name `admin` or `client` (the role in the path), password the API token' },
        session: { type: 'apiKey', in: 'cookie', name: 'tollgate_session', description: 'A browser session, started by guest/client/login or guest/staff/login' },
        csrf: { type: 'apiKey', in: 'header', name: 'X-CSRF-Token', description: 'The session’s `csrf_token` cookie, sent back as a header' },
        ...routes.securitySchemes,
      },
    },
  };
}
