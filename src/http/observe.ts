// What the server says about its requests (CONTRACT §13), from the log controller's end-of-request call (no hook):
// - slow requests (over SLOW_REQUEST_MS) as warnings, whatever the log level;
// - with ACCESS_LOG=true, one line per request through an asynchronous chunked writer (src/http/access-log.ts), so
//   the check path never waits for a write;
// - with METRICS_TOKEN set, requests and durations by action and status for GET /metrics.
// No line and no label holds a query string, header, cookie or body: a request is named by its route template
// (`/api/guest/serviceapikey/check`), never by the URL the client sent, which may carry a key in its query string.
import { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { safeEqual } from '../lib/crypto.ts';
import { AccessLog, type AccessSink } from './access-log.ts';
import type { Config } from '../config.ts';
import type { Metrics } from '../platform/metrics.ts';
import { errors } from '../platform/errors.ts';
import { setApiHeaders } from './headers.ts';

/** The route template that answered, or "-" when none matched (a 404): never the client's own URL. */
export function routeOf(request: FastifyRequest): string {
  return request.routeOptions.url ?? '-';
}

export interface ObserveOptions {
  /** Where access lines go; defaults to stdout (asynchronous, src/http/access-log.ts) when ACCESS_LOG=true. */
  accessLogStream?: Exclude<AccessSink, number>;
}

/**
 * Fastify calls its log controller's `requestCompleted` once per answered request whatever else is configured; doing
 * the per-request work there costs no hook run. The request lines Fastify would write ("incoming request", "request
 * completed", "Route not found") are not written; its error lines are.
 */
class ObservingLogController extends LogController {
  constructor(private readonly observe: (request: FastifyRequest, reply: FastifyReply) => void) {
    super();
  }

  override incomingRequest(): void {}

  override routeNotFound(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error) reply.log.error({ err: error, reqId: request.id, route: routeOf(request), status: reply.statusCode }, 'request errored');
    this.observe(request, reply);
  }
}

/** The slow-request warning's logger: Fastify's own (its requests' `log` is the server's logger). */
export interface WarnLog {
  warn(fields: Record<string, unknown>, message: string): void;
}

/** What an account of a request needs of it: a Fastify request, or a direct answer's caller (src/http/direct.ts). */
export interface AnsweredRequest {
  readonly ip: string;
  readonly id: string;
}

export interface Observer {
  /** Give to Fastify as `logController`. */
  controller: LogController;
  /** Adds GET /metrics (when METRICS_TOKEN is set) and the access log's flush at close. */
  register(app: FastifyInstance, httpsPossible: boolean): void;
  /** The same account of a request answered without Fastify (src/http/direct.ts). */
  answered(method: string, route: string, status: number, ms: number, from: AnsweredRequest, log: WarnLog): void;
}

/** What the observer reads: its settings and the metrics registry. */
export interface ObservedServices {
  config: Pick<Config, 'slowRequestMs' | 'accessLog' | 'metricsToken'>;
  metrics: Metrics;
}

/**
 * `hasLogger`: Fastify sets up its end-of-request call only when it has a logger (or an onResponse hook); without a
 * logger (tests, tools) the same work runs from an onResponse hook instead.
 */
export function createObserver(services: ObservedServices, hasLogger: boolean, options: ObserveOptions = {}): Observer {
  const { config, metrics } = services;
  const slowMs = config.slowRequestMs;
  const access = config.accessLog ? new AccessLog(options.accessLogStream ?? 1) : null;
  const recording = metrics.enabled;

  /** `from.ip` and `from.id` are read only when a line needs them: behind a proxy the address walks X-Forwarded-For. */
  function answered(method: string, route: string, status: number, ms: number, from: AnsweredRequest, log: WarnLog): void {
    if (recording) metrics.observeRequest(route, status, ms);
    if (access !== null) access.record(method, route, status, ms, from.ip);
    if (ms >= slowMs) log.warn({ reqId: from.id, method, route, status, ms: Math.round(ms) }, 'slow request');
  }

  function observe(request: FastifyRequest, reply: FastifyReply): void {
    answered(request.method, routeOf(request), reply.statusCode, reply.elapsedTime, request, request.log);
  }

  return {
    controller: new ObservingLogController(hasLogger ? observe : () => undefined),
    answered,
    register(app, httpsPossible) {
      if (!hasLogger) {
        app.addHook('onResponse', (request, reply, done) => {
          observe(request, reply);
          done();
        });
      }
      if (access !== null) {
        app.addHook('onClose', async () => {
          await access.close();
        });
      }
      if (config.metricsToken === null) return;
      const expected = `Bearer ${config.metricsToken}`;
      app.get('/metrics', async (request, reply) => {
        setApiHeaders(request, reply, httpsPossible);
        const header = request.headers.authorization ?? '';
        if (!safeEqual(header, expected)) {
          void reply.header('www-authenticate', 'Bearer');
          throw errors.authRequired();
        }
        void reply.header('content-type', metrics.registry.contentType);
        return metrics.registry.metrics();
      });
    },
  };
}
