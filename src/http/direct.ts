// Direct answers: a few hot guest actions (the key check) answered from Node's `request` event, before Fastify's
// router, for the one shape their callers send: a POST of a small JSON body to the exact path, no query string.
// Everything else (GET, a form, a query string, a chunked or large body, another content type, a server shutting
// down) goes to Fastify and the gateway unchanged. Which actions: the guest actions the registry declares `direct`.
// The answer is the gateway's to the byte: both roads run the action through one GuestRoad (guest-road.ts: the same
// rate-limit policy and headers, the same validation, the same handler), then the same envelope, error catalogue and
// common headers, the same account in the access log, metrics and slow-request warnings. test/http/direct-answers.test.ts
// sends one corpus of requests both ways and compares status, headers and body.
//
// Why: Fastify's own per-request work (routing, request and reply objects, the content-type parser's async resource,
// the hook chain, serialisation) was as large as everything the check itself does; the check served this way costs
// less CPU than a bare Fastify route (docs/benchmarks.md).
import type { IncomingMessage, ServerResponse } from 'node:http';
import proxyAddr from '@fastify/proxy-addr';
import type { TObject } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ActionDef, CallContext, GuestIdentity, ModuleApi } from '../platform/action.ts';
import { parseJsonObject } from './body.ts';
import { asApiError, envelopeOf, errors } from '../platform/errors.ts';
import { listActions } from './gateway.ts';
import { GuestRoad } from './guest-road.ts';
import { COMMON_HEADERS, HSTS } from './headers.ts';
import type { Observer, WarnLog } from './observe.ts';
import type { HeaderTarget, RateLimiter } from '../platform/rate-limit.ts';
import type { SessionControl } from '../platform/session.ts';

export interface DirectRoute {
  /** The gateway path it answers, `/api/guest/{module}/{action}`. */
  url: string;
  /** The action as the registry declares it: its schema, address policy and handler. */
  def: ActionDef<TObject, GuestIdentity>;
}

/** The guest actions declared `direct` in the registry, at their gateway paths. */
export function directRoutesOf(modules: readonly ModuleApi[]): DirectRoute[] {
  return listActions(modules)
    .filter(({ role, def }) => role === 'guest' && def.direct === true)
    .map(({ module, action, def }) => ({ url: `/api/guest/${module}/${action}`, def: def as ActionDef<TObject, GuestIdentity> }));
}

/** Trusted proxies as Fastify is given them: `false`, or a function of (address, hop) (src/app.ts). */
export type ProxyTrust = false | ((address: string, hop: number) => boolean);

/** Decides whether a request is answered directly and, if so, answers it; false leaves it to Fastify. */
export type DirectAnswers = (request: IncomingMessage, response: ServerResponse) => boolean;

/** Far above a key check's body (~80 bytes), far below any BODY_LIMIT_BYTES worth setting. */
const MAX_BODY_BYTES = 4096;
const JSON_TYPES = new Set(['application/json', 'application/json; charset=utf-8', 'application/json;charset=utf-8']);
const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/**
 * A direct answer's headers as Node's flat [name, value, …] list (no header object to build): the common ones, then
 * what the rate limits and the action set. Names are lower-cased and a name set again replaces its value, as in a
 * Fastify reply (the per-key limit's RateLimit-* replace the address policy's).
 */
class AnswerHeaders implements HeaderTarget {
  readonly list: (string | number)[] = ['cache-control', COMMON_HEADERS['cache-control'], 'x-tollgate-version', COMMON_HEADERS['x-tollgate-version']];

  header(name: string, value: string | number): this {
    const lower = name.toLowerCase();
    const list = this.list;
    for (let i = 0; i < list.length; i += 2) {
      if (list[i] === lower) {
        list[i + 1] = value;
        return this;
      }
    }
    list.push(lower, value);
    return this;
  }
}

/** The request's address and protocol as Fastify computes them for `request.ip` and `request.protocol`. */
class Caller {
  private address: string | undefined;

  constructor(
    private readonly request: IncomingMessage,
    private readonly trust: ProxyTrust,
    private readonly sequence: number,
  ) {}

  /** For log lines only (slow requests, errors): built when one is written, not on every answer. */
  get id(): string {
    return `direct-${this.sequence.toString(36)}`;
  }

  get ip(): string {
    if (this.address === undefined) {
      if (this.trust === false) this.address = this.request.socket.remoteAddress ?? '';
      else {
        const chain = proxyAddr.all(this.request, this.trust);
        this.address = chain[chain.length - 1] ?? '';
      }
    }
    return this.address;
  }

  get https(): boolean {
    const { socket, headers } = this.request;
    const forwarded = headers['x-forwarded-proto'];
    if (this.trust !== false && typeof forwarded === 'string' && forwarded !== '' && this.trust(socket.remoteAddress ?? '', 0)) {
      const comma = forwarded.lastIndexOf(',');
      return (comma === -1 ? forwarded.trim() : forwarded.slice(comma + 1).trim()) === 'https';
    }
    return 'encrypted' in socket && socket.encrypted === true;
  }
}

/**
 * What a direct action receives: the services, the guest identity and the address. A class for the reason the
 * gateway's `Call` is one (no accessor defined per request); no Fastify request, reply or session exists here, and
 * an action declared `direct` promises not to ask for them.
 */
class DirectCall implements CallContext<GuestIdentity> {
  readonly identity: GuestIdentity = GUEST;

  constructor(
    readonly services: CallContext['services'],
    readonly ip: string,
  ) {}

  get request(): FastifyRequest {
    throw notDirect('request');
  }

  get reply(): FastifyReply {
    throw notDirect('reply');
  }

  get session(): SessionControl {
    throw notDirect('session');
  }
}

const GUEST: GuestIdentity = { role: 'guest' };

function notDirect(what: string): Error {
  return new Error(`An action answered directly has no ${what}: declare it without direct (src/platform/action.ts)`);
}

interface Compiled {
  url: string;
  road: GuestRoad;
}

export interface DirectOptions {
  /** What the actions receive (their call's `services`). */
  services: CallContext['services'];
  limiter: Pick<RateLimiter, 'isExempt' | 'hit'>;
  bodyLimitBytes: number;
  observer: Pick<Observer, 'answered'>;
  routes: readonly DirectRoute[];
  trust: ProxyTrust;
  /** TLS or a trusted proxy: HSTS is sent on HTTPS requests (src/http/headers.ts). */
  httpsPossible: boolean;
  /** Fastify's logger, known once the app is built. */
  log: () => WarnLog & { error(fields: Record<string, unknown>, message: string): void };
  /** True once the server is closing: Fastify then answers 503 and closes the connection. */
  closing: () => boolean;
}

export function createDirectAnswers(options: DirectOptions): DirectAnswers {
  const { services, observer, trust, httpsPossible, log, closing } = options;
  const maxBody = Math.min(MAX_BODY_BYTES, options.bodyLimitBytes);
  const byUrl = new Map<string, Compiled>(options.routes.map(({ url, def }) => [url, { url, road: new GuestRoad(def, options.limiter) }]));
  let answeredCount = 0;

  /** POST, a JSON content type Fastify reads the same way, a declared length within bounds, not chunked. */
  function isPlainJsonPost(request: IncomingMessage): boolean {
    if (request.method !== 'POST') return false;
    const { headers } = request;
    const type = headers['content-type'];
    if (type === undefined || !(type === 'application/json' || JSON_TYPES.has(type.toLowerCase()))) return false;
    if (headers['transfer-encoding'] !== undefined) return false;
    const length = headers['content-length'];
    return length !== undefined && /^\d{1,5}$/.test(length) && Number(length) <= maxBody;
  }

  function send(response: ServerResponse, status: number, headers: AnswerHeaders, payload: string): void {
    headers.list.push('content-type', JSON_CONTENT_TYPE, 'content-length', Buffer.byteLength(payload));
    response.writeHead(status, headers.list);
    response.end(payload);
  }

  function fail(response: ServerResponse, headers: AnswerHeaders, error: unknown, caller: Caller): number {
    const apiError = asApiError(error) ?? errors.internal();
    if (apiError.code === 500) log().error({ err: error, reqId: caller.id }, 'internal error');
    for (const [name, value] of Object.entries(apiError.headers)) headers.header(name, value);
    send(response, apiError.status, headers, JSON.stringify(envelopeOf(apiError)));
    return apiError.status;
  }

  function succeed(response: ServerResponse, headers: AnswerHeaders, result: unknown): number {
    send(response, 200, headers, JSON.stringify({ result: result === undefined ? null : result, error: null }));
    return 200;
  }

  function respond(compiled: Compiled, body: string, caller: Caller, response: ServerResponse, started: number): void {
    const headers = new AnswerHeaders();
    if (httpsPossible && caller.https) headers.header('strict-transport-security', HSTS);
    const done = (status: number): void => observer.answered('POST', compiled.url, status, performance.now() - started, caller, log());
    let raw: Record<string, unknown>;
    try {
      raw = parseJsonObject(body);
    } catch (error) {
      // As Fastify does after a body it could not parse: the connection is not trusted for another request.
      headers.header('connection', 'close');
      done(fail(response, headers, error, caller));
      return;
    }
    let result: unknown;
    try {
      result = compiled.road.run(raw, new DirectCall(services, caller.ip), headers);
    } catch (error) {
      done(fail(response, headers, error, caller));
      return;
    }
    if (result instanceof Promise) {
      result.then(
        (value: unknown) => done(succeed(response, headers, value)),
        (error: unknown) => done(fail(response, headers, error, caller)),
      );
    } else done(succeed(response, headers, result));
  }

  return function answer(request, response) {
    const compiled = byUrl.get(request.url ?? '');
    if (compiled === undefined || !isPlainJsonPost(request) || closing()) return false;
    const started = performance.now();
    const caller = new Caller(request, trust, ++answeredCount);
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => {
      body += chunk;
    });
    request.on('end', () => {
      try {
        respond(compiled, body, caller, response, started);
      } catch (error) {
        // respond answers every failure itself; a throw from here on (the answer could not be written) must not
        // become an uncaught exception of the process.
        log().error({ err: error }, 'direct answer failed');
        response.destroy();
      }
    });
    // A client gone mid-body: Node closes the socket and there is no one to answer; without a listener the
    // stream's error would be thrown.
    request.on('error', () => undefined);
    return true;
  };
}
