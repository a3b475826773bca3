// The API gateway: one GET+POST route per declared action, `/api/{role}/{module}/{action}`. Each route
// authenticates for its role, applies the rate-limit policies, validates the parameters, calls the action and wraps
// the result in the envelope. Modules are known only through the registry; adding an action never touches http/.
import type { TObject } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { FileResult, ROLES, type ActionDef, type GuestIdentity, type ModuleApi, type Role } from '../platform/action.ts';
import { authenticate, type AuthServices } from './auth.ts';
import { isRefusedQuery, queryTooDeep } from './body.ts';
import { ApiError, errors } from '../platform/errors.ts';
import { isChangingAction, type ActionRecorder } from '../platform/audit.ts';
import { hasPermission, type Identity } from '../platform/identity.ts';
import { setApiHeaders } from './headers.ts';
import { enforce } from '../platform/rate-limit.ts';
import { GuestRoad } from './guest-road.ts';
import type { Session, SessionControl, SessionStore } from '../platform/session.ts';
import { createSessionControl } from './session-control.ts';
import { compileValidator } from './validate.ts';
import { portalScopesOf, type ModuleServices } from '../modules/index.ts';

/**
 * What the gateway hands its routes: the services it uses itself (authentication, rate limits, sessions) and those
 * the served modules' actions name, which it passes on untouched as `call.services`.
 */
export interface GatewayServices extends AuthServices {
  sessions: SessionStore;
  /** The audit log's recorder (docs/audit-log.md); absent in a test app that serves its own actions only. */
  actionRecorder?: ActionRecorder;
}

const GUEST: GuestIdentity = { role: 'guest' };

function gatherParams(request: FastifyRequest): Record<string, unknown> {
  const query = (request.query ?? {}) as Record<string, unknown>;
  if (isRefusedQuery(query)) throw queryTooDeep();
  if (request.method !== 'POST') return query;
  const body = (request.body ?? {}) as Record<string, unknown>;
  return Object.keys(query).length === 0 ? body : { ...query, ...body };
}

/**
 * What an action receives. A class, not an object literal: the lazy `session` getter then lives on the prototype;
 * a literal with a getter makes V8 define the accessor afresh on every request, which cost the key check about a
 * third of its throughput.
 */
class Call<I extends Identity = Identity> {
  private control: SessionControl | undefined;

  constructor(
    readonly services: GatewayServices,
    readonly identity: I,
    readonly ip: string,
    readonly request: FastifyRequest,
    readonly reply: FastifyReply,
    private readonly preloaded: Session | null | undefined,
  ) {}

  /** Built only when an action asks for it: most calls (the key check among them) never do. */
  get session(): SessionControl {
    this.control ??= createSessionControl(this.request, this.reply, this.services.sessions, this.preloaded);
    return this.control;
  }
}

/**
 * A customer-portal session (issue 25) may call only the client actions its scopes open (src/modules/portal/scopes.ts,
 * deny by default): 403 otherwise. Admin actions never see one (its subject is a client: 401 before this).
 */
function requirePortalScope(session: Session | null, opening: readonly string[], name: string): void {
  const portal = session?.portal;
  if (portal === undefined || portal === null) return;
  if (!opening.some((scope) => portal.scopes.includes(scope))) throw errors.portalScope(name);
}

/**
 * Login refusals worth an entry (HTTP status): wrong credentials, a missing or wrong second factor, an inactive
 * account. Not a rate-limit refusal (429) or a malformed request, which checked no credential.
 */
const REFUSED_LOGIN = new Set([401, 403]);

function makeHandler(role: Role, module: string, action: string, def: ActionDef<TObject, never>, services: GatewayServices, httpsPossible: boolean) {
  const validate = compileValidator(def.params);
  // Asked once per route: which portal scopes open this action (none for admin and guest actions).
  const portalOpening = role === 'client' ? portalScopesOf(module, action) : [];
  const { limiter } = services;
  // A guest action takes the road its direct answer takes too (guest-road.ts): policy, validation, handler.
  const guest = role === 'guest' ? new GuestRoad(def, limiter) : null;
  const allowVerifier = def.verifier === true;
  // The handler's identity type is narrowed per role by the registry; here every role shares one code path.
  const run = (params: unknown, call: unknown): unknown => (def.handler as (params: unknown, call: unknown) => unknown).call(def, params, call);

  const recorder = services.actionRecorder;
  // A changing admin action runs in one transaction with its audit entry (platform/audit.ts, db/ambient.ts).
  // One that must not hold a transaction (`audit: 'after'`, a provider call) is recorded after it succeeded.
  const changing = role === 'admin' && recorder !== undefined && isChangingAction(action, def);
  const audited = changing && def.audit !== 'after';
  const auditedAfter = changing && def.audit === 'after';
  const auditedLogin = role === 'guest' && recorder !== undefined && def.audit === 'login';

  /** Validates the parameters, runs the action and wraps its result; stays synchronous when the action is. */
  function respond(request: FastifyRequest, reply: FastifyReply, ip: string, raw: Record<string, unknown>, identity: Identity, preloaded: Session | null | undefined): unknown {
    const params = validate(raw);
    const call = new Call(services, identity, ip, request, reply, preloaded);
    if (recorder !== undefined && (audited || auditedAfter) && identity.role === 'admin') {
      const entry = { action: `admin/${module}/${action}`, module, name: action, identity, ip, params };
      const recorded = audited ? recorder.runChanging(entry, () => run(params, call)) : recorder.runThenRecord(entry, () => run(params, call));
      return recorded.then((value: unknown) => wrap(reply, value));
    }
    const result = run(params, call);
    return result instanceof Promise ? result.then((value: unknown) => wrap(reply, value)) : wrap(reply, result);
  }

  /** Runs a login action and records its outcome: the staff member on success, the refusal otherwise. */
  async function recordedLogin(result: unknown, ip: string, raw: Record<string, unknown>): Promise<unknown> {
    const email = typeof raw.email === 'string' ? raw.email.slice(0, 254) : '';
    try {
      const value = (await result) as { id: number; name: string; email: string };
      await recorder!.recordLogin({ ip, email, staff: { id: value.id, name: value.name, email: value.email }, failure: null });
      return value;
    } catch (error) {
      if (error instanceof ApiError && REFUSED_LOGIN.has(error.status)) {
        await recorder!.recordLogin({ ip, email, staff: null, failure: { code: error.code, message: error.message } });
      }
      throw error;
    }
  }

  async function authenticated(request: FastifyRequest, reply: FastifyReply, ip: string, raw: Record<string, unknown>): Promise<unknown> {
    const { identity, session } = await authenticate(role as 'admin' | 'client', request, reply, services, ip, raw, allowVerifier);
    requirePortalScope(session, portalOpening, `${module}/${action}`);
    // Counted before the permission check: a refused call is still a call of this account (CONTRACT §4).
    if (!limiter.isExempt(ip)) {
      const account = identity.role === 'admin' ? `admin:${identity.staff.id}` : `client:${identity.client.id}`;
      enforce(reply, await limiter.hit(def.accountRateLimit ?? 'API_AUTHENTICATED', account));
      if (def.rateLimit !== undefined && def.accountRateLimit === undefined) enforce(reply, await limiter.hit(def.rateLimit, ip));
    }
    if (identity.role === 'admin' && def.permission !== undefined && !hasPermission(identity.staff, def.permission)) {
      throw errors.forbidden(def.permission);
    }
    return respond(request, reply, ip, raw, identity, session ?? undefined);
  }

  // Not an async function on purpose: a guest call whose rate-limit decision and action are synchronous (the key
  // check on a warm cache) is answered without a single promise, which is measurably faster under load. Fastify
  // sends a plain return value as it sends a resolved one, and routes a throw to the error handler.
  const postOnly = def.postOnly === true;
  return function handle(request: FastifyRequest, reply: FastifyReply): unknown {
    setApiHeaders(request, reply, httpsPossible);
    if (postOnly && request.method !== 'POST') throw errors.methodNotAllowed(request.method, 'POST');
    const ip = request.ip;
    const raw = gatherParams(request);
    if (guest === null) return authenticated(request, reply, ip, raw);
    const ran = guest.run(raw, new Call(services, GUEST, ip, request, reply, undefined), reply);
    const result = auditedLogin ? recordedLogin(ran, ip, raw) : ran;
    return result instanceof Promise ? result.then((value: unknown) => wrap(reply, value)) : wrap(reply, result);
  };
}

/** The answer's body: a file's bytes, or the result in the envelope. */
function wrap(reply: FastifyReply, value: unknown): unknown {
  return value instanceof FileResult ? sendFile(reply, value) : envelope(value);
}

/** Returns the file's bytes for Fastify to send, with its type and a download name. */
function sendFile(reply: FastifyReply, file: FileResult): Buffer {
  reply.type(file.contentType);
  reply.header('content-disposition', `attachment; filename="${file.filename.replace(/[^\w.-]/g, '_')}"`);
  return file.body;
}

function envelope(result: unknown): { result: unknown; error: null } {
  return { result: result === undefined ? null : result, error: null };
}

export interface RegisteredAction {
  role: Role;
  module: string;
  action: string;
  def: ActionDef<TObject, never>;
}

export function listActions(modules: readonly ModuleApi<never>[]): RegisteredAction[] {
  const out: RegisteredAction[] = [];
  for (const module of modules) {
    for (const role of ROLES) {
      for (const [action, def] of Object.entries(module[role] ?? {})) {
        out.push({ role, module: module.name, action, def: def as ActionDef<TObject, never> });
      }
    }
  }
  return out;
}

/**
 * Routes every action of `modules`. `services` must give the served modules what they name: for the registry's own
 * list that is `ModuleServices` (the default of `S`).
 */
export function registerGateway<S = ModuleServices>(
  app: FastifyInstance,
  services: GatewayServices & S,
  modules: readonly ModuleApi<S>[],
  httpsPossible: boolean,
): void {
  for (const { role, module, action, def } of listActions(modules)) {
    app.route({ method: ['GET', 'POST'], url: `/api/${role}/${module}/${action}`, handler: makeHandler(role, module, action, def, services, httpsPossible) });
  }

  const knownModules = new Set(modules.map((module) => module.name));
  app.setNotFoundHandler((request) => {
    if (!['GET', 'POST', 'HEAD'].includes(request.method)) throw errors.methodNotAllowed(request.method);
    const path = (request.raw.url ?? '').split('?')[0] ?? '';
    const match = /^\/api\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(path);
    if (match !== null && (ROLES as readonly string[]).includes(match[1]!) && knownModules.has(match[2]!)) {
      throw errors.unknownAction(match[1]!, match[2]!, match[3]!);
    }
    throw errors.unknownPath();
  });
}
