// Builds the Fastify application: body parsers, the envelope for every failure, common headers, health check,
// OpenAPI document and the gateway over the module registry.
import { readFileSync } from 'node:fs';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import qs from 'qs';
import { ApiError, envelopeOf, errors } from './http/errors.ts';
import { registerBodyParsers } from './http/body.ts';
import { registerGateway } from './http/gateway.ts';
import { setApiHeaders } from './http/headers.ts';
import { buildOpenApi } from './http/openapi.ts';
import { modules as defaultModules } from './modules/index.ts';
import type { ModuleApi } from './http/action.ts';
import type { Services } from './services.ts';
import { registerWebUi } from './web/static.ts';

export interface BuildOptions {
  logger?: FastifyServerOptions['logger'];
  modules?: readonly ModuleApi[];
  /** Built browser UI to serve at `/` and `/admin` (web/dist); no UI routes when undefined. */
  webDistDir?: string;
}

// Fastify's own errors that are the client's fault, mapped onto the contract's codes.
function fromFastifyError(error: FastifyError, bodyLimit: number): ApiError {
  if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return errors.payloadTooLarge(bodyLimit);
  if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
    return errors.badRequest(error.code?.startsWith('FST_ERR_CTP') ? 'The request body could not be read' : error.message);
  }
  return errors.internal();
}

export function buildApp(services: Services, options: BuildOptions = {}): FastifyInstance {
  const { config } = services;
  const https =
    config.tlsCertFile !== null && config.tlsKeyFile !== null
      ? { cert: readFileSync(config.tlsCertFile), key: readFileSync(config.tlsKeyFile) }
      : null;

  const app = Fastify({
    logger: options.logger ?? false,
    bodyLimit: config.bodyLimitBytes,
    // A hop count becomes a function: Fastify's types take booleans, lists and functions.
    trustProxy:
      typeof config.trustProxy === 'number'
        ? ((hops: number) => (_address: string, hop: number) => hop < hops)(config.trustProxy)
        : config.trustProxy,
    routerOptions: {
      querystringParser: (text: string) => qs.parse(text, { depth: 5, arrayLimit: 100, parameterLimit: 1000 }),
    },
    ...(https !== null && { https }),
  }) as unknown as FastifyInstance;

  registerBodyParsers(app);

  const httpsPossible = https !== null || config.trustProxy !== false;

  app.setErrorHandler((error: FastifyError | ApiError, request, reply) => {
    const apiError = error instanceof ApiError ? error : fromFastifyError(error, config.bodyLimitBytes);
    if (apiError.code === 500) request.log.error({ err: error }, 'internal error');
    setApiHeaders(request, reply, httpsPossible);
    void reply.status(apiError.status).headers(apiError.headers).send(envelopeOf(apiError));
  });

  app.get('/healthz', async (request, reply) => {
    setApiHeaders(request, reply, httpsPossible);
    try {
      await services.db.selectFrom('admin_groups').select('id').limit(1).execute();
      return { status: 'ok' };
    } catch {
      return reply.status(503).send({ status: 'unavailable' });
    }
  });

  const modules = options.modules ?? defaultModules;
  const openApi = buildOpenApi(modules);
  app.get('/api/openapi.json', async (request, reply) => {
    setApiHeaders(request, reply, httpsPossible);
    return openApi;
  });

  registerGateway(app, services, modules, httpsPossible);
  if (options.webDistDir !== undefined) registerWebUi(app, options.webDistDir);
  return app;
}
