// Builds the Fastify application: body parsers, the envelope for every failure, common headers, health check,
// OpenAPI document and the gateway over the module registry.
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import proxyAddr from '@fastify/proxy-addr';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyServerOptions } from 'fastify';
import { ApiError, asApiError, envelopeOf, errors } from './platform/errors.ts';
import { parseQuery, registerBodyParsers } from './http/body.ts';
import { registerGateway } from './http/gateway.ts';
import { createObserver, type ObserveOptions } from './http/observe.ts';
import { setApiHeaders } from './http/headers.ts';
import { buildOpenApi } from './http/openapi.ts';
import { registerApiDocs } from './http/api-docs.ts';
import { MODULE_DESCRIPTIONS } from './modules/descriptions.ts';
import { capConnectionsPerAddress } from './http/connections.ts';
import { limitConnections, type ConnectionPressure } from './http/connection-pressure.ts';
import { defaultMaxConnections, readDescriptorLimit } from './http/descriptor-limit.ts';
import { createDirectAnswers, directRoutesOf, type DirectAnswers, type ProxyTrust } from './http/direct.ts';
import { buildWhitelist } from './platform/rate-limit.ts';
import { modules as defaultModules } from './modules/index.ts';
import type { ModuleApi } from './platform/action.ts';
import type { Services } from './services.ts';
import { registerWebUi } from './http/static.ts';
import { registerProviderWebhooks } from './http/provider-webhooks.ts';
import { registerKeyEventsRoute } from './http/key-events.ts';
import { registerExportRoutes } from './http/export-route.ts';

export interface BuildOptions {
  logger?: FastifyServerOptions['logger'];
  modules?: readonly ModuleApi[];
  /** Built browser UI to serve at `/` and `/admin` (web/dist); no UI routes when undefined. */
  webDistDir?: string;
  /** Where ACCESS_LOG lines go (tests); stdout, asynchronously, by default. */
  accessLogStream?: ObserveOptions['accessLogStream'];
  /**
   * Answer the key check's plain JSON POSTs before Fastify (src/http/direct.ts); DIRECT_ANSWERS by default. Off here
   * to compare the two roads (test/http/direct-answers.test.ts). `inject()` always takes Fastify's road.
   */
  directAnswers?: boolean;
}

/** TRUST_PROXY as the function Fastify and the direct answers both use (Fastify builds the same from `true` or a list). */
function proxyTrust(trustProxy: boolean | string | number): ProxyTrust {
  if (trustProxy === false) return false;
  if (trustProxy === true) return () => true;
  if (typeof trustProxy === 'number') return (_address, hop) => hop < trustProxy;
  return proxyAddr.compile(trustProxy.split(',').map((entry) => entry.trim()));
}

/**
 * Puts `front` in front of Fastify's own `request` listener on its server: the connection cap's bookkeeping and the
 * direct answers (true: answered, Fastify never sees the request). One listener, not a second one beside Fastify's:
 * Node then calls a single function per request. Not Fastify's `serverFactory`: with one, Fastify creates no server
 * and takes other roads at close, and every server option would be set here again.
 */
function putInFront(app: FastifyInstance, front: DirectAnswers): void {
  const server = app.server;
  const [fastifyListener] = server.listeners('request') as ((request: IncomingMessage, response: ServerResponse) => void)[];
  if (fastifyListener === undefined) return;
  server.removeListener('request', fastifyListener);
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    if (!front(request, response)) fastifyListener(request, response);
  });
}

// Fastify's own errors that are the client's fault, mapped onto the contract's codes.
function fromFastifyError(error: FastifyError, bodyLimit: number): ApiError {
  if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return errors.payloadTooLarge(bodyLimit);
  if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
    return errors.badRequest(error.code?.startsWith('FST_ERR_CTP') ? 'The request body could not be read' : error.message);
  }
  return errors.internal();
}

/**
 * Never log a secret: keys, tokens and CSRF tokens can travel in the query string of a GET, so a request is logged by
 * method, path and address only, never its query string or headers. The default for every logger built here; a
 * caller's own `req` serializer (src/main.ts has the same one) takes its place.
 */
export function safeRequestSerializer(request: { method: string; url: string; ip?: string }): Record<string, unknown> {
  return { method: request.method, path: request.url.split('?')[0], ip: request.ip };
}

function withSafeSerializers(logger: FastifyServerOptions['logger']): FastifyServerOptions['logger'] {
  if (logger === undefined || logger === false) return false;
  const options = logger === true ? {} : logger;
  return { ...options, serializers: { req: safeRequestSerializer, ...options.serializers } };
}

/**
 * Node's HTTP parser refuses some requests before Fastify sees them (headers or URL too large, malformed request
 * line, timeouts). Fastify's default answer is its own JSON shape; this one is the envelope (CONTRACT §1, §2).
 */
function clientErrorHandler(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  if (socket.writable) {
    const message =
      error.code === 'HPE_HEADER_OVERFLOW'
        ? 'The request line or headers are too large'
        : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? 'The request did not arrive in time'
          : 'The request could not be read';
    const body = JSON.stringify(envelopeOf(errors.badRequest(message)));
    socket.write(
      `HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=utf-8\r\nCache-Control: no-store\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}

export function buildApp(services: Services, options: BuildOptions = {}): FastifyInstance {
  const { config } = services;
  // Slow clients: the whole request (headers and body) must arrive within REQUEST_TIMEOUT_MS and its headers within
  // HEADERS_TIMEOUT_MS, or the connection is cut. Node checks these every `connectionsCheckingInterval` (30 s by
  // default, far too coarse for a 30 s limit); Fastify itself leaves the request timeout off.
  const serverOptions = { headersTimeout: config.headersTimeoutMs, requestTimeout: config.requestTimeoutMs, connectionsCheckingInterval: 1000 };
  const https =
    config.tlsCertFile !== null && config.tlsKeyFile !== null
      ? { cert: readFileSync(config.tlsCertFile), key: readFileSync(config.tlsKeyFile), ...serverOptions }
      : null;

  const httpsPossible = https !== null || config.trustProxy !== false;
  const trust = proxyTrust(config.trustProxy);

  const logger = withSafeSerializers(options.logger);
  const observer = createObserver(services, logger !== false, options.accessLogStream === undefined ? {} : { accessLogStream: options.accessLogStream });
  const app = Fastify({
    logger,
    // No line per request at any level (CONTRACT §13): src/http/observe.ts logs slow requests and, with
    // ACCESS_LOG=true, every request through a buffered asynchronous destination.
    logController: observer.controller,
    // Every request shares the server's logger instead of a pino child made for it (a child per request was a
    // measurable part of the check's cost); the few lines written per request name their request id themselves.
    childLoggerFactory: (parent) => parent,
    bodyLimit: config.bodyLimitBytes,
    requestTimeout: config.requestTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    http: serverOptions,
    trustProxy: trust,
    routerOptions: {
      querystringParser: parseQuery,
    },
    ...(https !== null && { https }),
    clientErrorHandler,
    // Errors the router raises before any route or hook runs, e.g. a path with invalid percent-encoding
    // (`/api/guest/%ZZ/x`): such a path is not an API path (879); anything else is an unreadable request (400).
    frameworkErrors: (error, request, reply) => {
      const apiError = error.code === 'FST_ERR_BAD_URL' ? errors.unknownPath() : errors.badRequest('The request could not be read');
      const plain = reply as unknown as FastifyReply;
      setApiHeaders(request, plain, httpsPossible);
      void plain.status(apiError.status).send(envelopeOf(apiError));
    },
  }) as unknown as FastifyInstance;

  capConnectionsPerAddress(app.server, config.maxConnectionsPerIp, buildWhitelist(config.rateLimit.whitelist), services.limiter.groups);
  // After the per-address cap: a connection it refused is never counted here.
  const pressure = connectionPressure(app, services);
  registerBodyParsers(app);

  app.setErrorHandler((error: FastifyError | ApiError, request, reply) => {
    const apiError = asApiError(error) ?? fromFastifyError(error as FastifyError, config.bodyLimitBytes);
    if (apiError.code === 500) request.log.error({ err: error, reqId: request.id }, 'internal error');
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
  // Built on first request: a few hundred milliseconds that most processes (and every cluster worker) never need.
  let openApi: Record<string, unknown> | undefined;
  app.get('/api/openapi.json', async (request, reply) => {
    setApiHeaders(request, reply, httpsPossible);
    openApi ??= buildOpenApi(modules, { publicUrl: config.publicUrl, moduleDescriptions: MODULE_DESCRIPTIONS });
    return openApi;
  });
  registerApiDocs(app);

  observer.register(app, httpsPossible);
  registerGateway(app, services, modules, httpsPossible);
  registerProviderWebhooks(app, services.inboundEvents, httpsPossible);
  registerKeyEventsRoute(
    app,
    {
      auth: services,
      limiter: services.limiter,
      keepAliveMs: config.eventsKeepAliveMs,
      feed: () => services.apikeys.keyEvents(),
      principal: (token, staffId) => (token !== null ? services.staff.principalByToken(token) : services.staff.principalById(staffId)),
    },
    httpsPossible,
  );
  registerExportRoutes(app, services, httpsPossible);
  if (options.webDistDir !== undefined) registerWebUi(app, options.webDistDir, () => services.settings.peek('portal_frame_ancestors'));

  let direct: DirectAnswers | null = null;
  const directRoutes = directRoutesOf(modules);
  if ((options.directAnswers ?? config.directAnswers) && directRoutes.length > 0) {
    let closing = false;
    app.addHook('preClose', (done) => {
      closing = true;
      done();
    });
    direct = createDirectAnswers({
      services,
      limiter: services.limiter,
      bodyLimitBytes: config.bodyLimitBytes,
      observer,
      routes: directRoutes,
      trust,
      httpsPossible,
      log: () => app.log,
      closing: () => closing,
    });
  }
  if (pressure !== null) {
    const { seen } = pressure;
    const answer = direct;
    putInFront(app, (request, response) => {
      seen(request, response);
      return answer !== null && answer(request, response);
    });
  } else if (direct !== null) putInFront(app, direct);
  return app;
}

/** The global connection cap (src/http/connection-pressure.ts) from MAX_CONNECTIONS or the descriptor limit; null when off. */
function connectionPressure(app: FastifyInstance, services: Services): ConnectionPressure | null {
  const { config, metrics } = services;
  const descriptors = readDescriptorLimit();
  const max = config.maxConnections ?? defaultMaxConnections(descriptors);
  if (max <= 0) return null;
  // One line at start says what was read; a cap the descriptors cannot carry would fail as before, so say so.
  app.log.info({ maxConnections: max, descriptorLimit: descriptors }, 'connection limit');
  if (descriptors !== null && max > descriptors - 64) {
    app.log.warn({ maxConnections: max, descriptorLimit: descriptors }, 'MAX_CONNECTIONS leaves fewer than 64 descriptors for the rest of the process: raise ulimit -n (docs/deployment.md)');
  }
  const pressure = limitConnections(app.server, {
    max,
    pressureTimeoutMs: Math.max(1000, Math.floor(config.requestTimeoutMs / 5)),
    warn: (fields, message) => app.log.warn(fields, message),
  });
  // Registered once per process (a test may build two apps on one set of services; the first one's figures are shown).
  if (metrics.registry.getSingleMetric('tollgate_connections_max') === undefined) {
    metrics.gauge('tollgate_connections_max', 'MAX_CONNECTIONS: connections this process holds at most', () => max);
    metrics.gauge('tollgate_connections_open', 'Connections open now', () => pressure.stats().open);
    metrics.countersByLabel('tollgate_connections_closed_total', 'Connections closed by the connection limit: shed (idle or slow, to make room) or refused (all others busy)', 'reason', () => {
      const { shed, refused } = pressure.stats();
      return { shed, refused };
    });
  }
  app.addHook('onClose', (_instance, done) => {
    pressure.stop();
    done();
  });
  return pressure;
}
