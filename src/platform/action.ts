// What a module declares: its actions per role, each with an input schema, an optional staff permission and rate
// limit policy, and a handler that calls the module's services. The gateway turns these into routes.
//
// A module names the services its actions use (`actionsFor<Needs>()`, `ModuleApi<Needs>`), so a handler sees those
// and nothing else; the registry (src/modules/index.ts) gathers every module's needs and the composition root
// (src/services.ts) must provide them all, which the compiler checks.
import type { Static, TObject, TSchema } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RateLimitPolicy } from './rate-limit.ts';
import type { Identity } from './identity.ts';
import type { SessionControl } from './session.ts';

export type Role = 'admin' | 'client' | 'guest';
export const ROLES: readonly Role[] = ['admin', 'client', 'guest'];

/** What a handler receives. `S`: the services its module named (`unknown` where an action uses none). */
export interface CallContext<I extends Identity = Identity, S = unknown> {
  services: S;
  identity: I;
  /** The caller's address, honouring X-Forwarded-For only when TRUST_PROXY is set. */
  ip: string;
  /** The browser session of this request (guest, client or admin), and the means to start or end one. */
  session: SessionControl;
  request: FastifyRequest;
  reply: FastifyReply;
}

export interface ActionDef<P extends TObject = TObject, I extends Identity = Identity, S = unknown> {
  params: P;
  /** Staff permission `module.group` the admin action needs; group 1 has every permission. */
  permission?: string;
  /** A policy applied on top of the role's default one (LOGIN, SIGNUP, CHECKOUT…), or replacing API_GUEST. */
  rateLimit?: RateLimitPolicy;
  /**
   * Per-account policy replacing API_AUTHENTICATED for this action, and then `rateLimit` is not applied per address
   * either: an app server verifying its users' keys calls at its users' rate (API_KEY_CHECK_VERIFIER, CONTRACT §11).
   */
  accountRateLimit?: RateLimitPolicy;
  summary?: string;
  /**
   * The schema of `result` in a successful answer (CONTRACT §11): the OpenAPI document types responses with it and
   * the test suite validates every answer it sees against it, so the document cannot drift from the code. An action
   * answering a file (FileResult) declares `FileDownload(contentType)` (src/platform/schemas.ts).
   */
  result?: TSchema;
  /**
   * The action carries credentials (a password, a reset hash, a TOTP code): it answers POST only, so they never land
   * in URLs, access logs or browser history (CONTRACT §10 "POST only"). GET gets the 405 envelope.
   */
  postOnly?: boolean;
  /**
   * Verifier credentials (a token whose group grants only `serviceapikey.check`, CONTRACT §11) may call this action.
   * Refused by default: an action added later is closed to a leaked verifier token unless it opts in here, so a token
   * that exists to verify keys can never edit its own staff row, mint tokens or reach a login (issue 20, M3).
   */
  verifier?: boolean;
  /**
   * A hot guest action answered before Fastify's router for the plain JSON POST its callers send (src/http/direct.ts),
   * through the same handler as the gateway's route. Its handler may use only `services`, `identity` and `ip` of the
   * call: a direct answer has no Fastify request, reply or session.
   */
  direct?: boolean;
  /**
   * The audit log (docs/audit-log.md). Absent: an admin action whose name does not read as a read (platform/audit.ts)
   * runs in one transaction with its audit entry. `false`: never audited (telemetry such as report_usage, called every
   * second by SDKs). `'login'`: a login action whose successes and refusals are recorded. `'after'`: a changing action
   * that must not hold the action's transaction (a provider's network call: a Stripe refund, a VIES check): it runs
   * as before the audit log, its services committing their own transactions, and its entry (the parameters given) is
   * written after it succeeded, in its own statement.
   */
  audit?: false | 'login' | 'after';
  // Method syntax on purpose: it keeps ActionDef<SpecificSchema> assignable to ActionDef<TObject> in the registry,
  // and an action needing fewer services assignable to one handed more.
  handler(params: Static<P>, call: CallContext<I, S>): unknown;
}

export type AdminIdentity = Extract<Identity, { role: 'admin' }>;
export type ClientIdentity = Extract<Identity, { role: 'client' }>;
export type GuestIdentity = Extract<Identity, { role: 'guest' }>;

/** One URL module (`/api/{role}/<name>/{action}`): its actions per role, whose handlers use the services `S`. */
export interface ModuleApi<S = unknown> {
  name: string;
  admin?: Record<string, ActionDef<TObject, AdminIdentity, S>>;
  client?: Record<string, ActionDef<TObject, ClientIdentity, S>>;
  guest?: Record<string, ActionDef<TObject, GuestIdentity, S>>;
}

/** The action helpers of a module whose actions use the services `S`: each one types its handler's `call`. */
export interface ActionHelpers<S> {
  adminAction: <P extends TObject>(def: ActionDef<P, AdminIdentity, S>) => ActionDef<P, AdminIdentity, S>;
  clientAction: <P extends TObject>(def: ActionDef<P, ClientIdentity, S>) => ActionDef<P, ClientIdentity, S>;
  guestAction: <P extends TObject>(def: ActionDef<P, GuestIdentity, S>) => ActionDef<P, GuestIdentity, S>;
}

/** Returns the declaration as given: the helpers exist for the types they check. */
const asDeclared = <D>(def: D): D => def;

/**
 * `const { adminAction, clientAction } = actionsFor<OrderNeeds>()`: the helpers for a module whose handlers use the
 * services `S`. They only type the declarations; at run time each returns what it is given.
 */
export function actionsFor<S>(): ActionHelpers<S> {
  return { adminAction: asDeclared, clientAction: asDeclared, guestAction: asDeclared };
}

/** Helpers for actions that use no service (the session module, tests' own actions). */
export const { adminAction, clientAction, guestAction } = actionsFor<unknown>();

/**
 * A result sent as a file instead of the JSON envelope (an invoice PDF). Failures before it is returned still answer
 * the envelope, so a client can tell a document from an error by the Content-Type.
 */
export class FileResult {
  constructor(
    readonly contentType: string,
    readonly body: Buffer,
    readonly filename: string,
  ) {}
}
