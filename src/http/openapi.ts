// The OpenAPI 3.1 document, generated from the actions' TypeBox schemas (which are JSON Schema already).
import type { ModuleApi } from './action.ts';
import { listActions } from './gateway.ts';
import { VERSION } from '../version.ts';

const ENVELOPE = {
  type: 'object',
  required: ['result', 'error'],
  properties: {
    result: {},
    error: {
      anyOf: [
        { type: 'null' },
        { type: 'object', required: ['message', 'code'], properties: { message: { type: 'string' }, code: { type: 'integer' } } },
      ],
    },
  },
};

export function buildOpenApi(modules: readonly ModuleApi[]): Record<string, unknown> {
  const paths: Record<string, unknown> = {};
  for (const { role, module, action, def } of listActions(modules)) {
    const security = role === 'guest' ? [] : [{ basic: [] }, { session: [], csrf: [] }];
    const operation = (method: 'get' | 'post') => ({
      operationId: `${method}_${role}_${module}_${action}`,
      tags: [`${role}/${module}`],
      summary: def.summary ?? `${role} ${module} ${action}`,
      security,
      ...(def.permission !== undefined && { 'x-permission': def.permission }),
      ...(method === 'post'
        ? {
            requestBody: {
              content: {
                'application/json': { schema: def.params },
                'application/x-www-form-urlencoded': { schema: def.params },
              },
            },
          }
        : {
            parameters: Object.keys(def.params.properties).map((name) => ({
              name,
              in: 'query',
              required: (def.params.required ?? []).includes(name),
              schema: def.params.properties[name],
            })),
          }),
      responses: { default: { description: 'Envelope', content: { 'application/json': { schema: ENVELOPE } } } },
    });
    // Actions carrying credentials take POST only (CONTRACT §10): their GET is not part of the API.
    paths[`/api/${role}/${module}/${action}`] = def.postOnly === true ? { post: operation('post') } : { get: operation('get'), post: operation('post') };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Tollgate API', version: VERSION },
    paths,
    components: {
      securitySchemes: {
        basic: { type: 'http', scheme: 'basic', description: 'User "admin" or "client", password the API token' },
        session: { type: 'apiKey', in: 'cookie', name: 'tollgate_session' },
        csrf: { type: 'apiKey', in: 'header', name: 'X-CSRF-Token' },
      },
    },
  };
}
