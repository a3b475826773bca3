// Authentication of admin and client calls (CONTRACT §3): Basic API tokens first, then the session cookie with its
// CSRF token. Failed Basic attempts and failed logins count against API_AUTH_FAILED per IP.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Session } from '../modules/session/service.ts';
import type { Services } from '../services.ts';
import { safeEqual } from '../lib/crypto.ts';
import { ApiError, errors } from '../platform/errors.ts';
import type { Identity } from '../platform/identity.ts';
import { enforce } from '../platform/rate-limit.ts';
import { CSRF_COOKIE, readCookies, SESSION_COOKIE } from './session-control.ts';

type AuthRole = 'admin' | 'client';

export interface Authenticated {
  identity: Extract<Identity, { role: AuthRole }>;
  session: Session | null;
}

interface BasicCredentials {
  user: 'admin' | 'client';
  password: string;
}

export function readBasic(request: FastifyRequest): BasicCredentials | null {
  const header = request.headers.authorization;
  if (header === undefined || !/^basic /i.test(header)) return null;
  const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  const user = colon === -1 ? decoded : decoded.slice(0, colon);
  // Any other user name is "no Basic credentials" (CONTRACT §3), e.g. a proxy's own Basic auth.
  if (user !== 'admin' && user !== 'client') return null;
  return { user, password: colon === -1 ? '' : decoded.slice(colon + 1) };
}

/** Throws `failure`, or 429 once this IP has failed too often; either way the failure is counted. */
async function rejectAttempt(services: Services, reply: FastifyReply, ip: string, failure: ApiError): Promise<never> {
  if (!services.limiter.isExempt(ip)) {
    const decision = await services.limiter.hit('API_AUTH_FAILED', ip);
    if (!decision.allowed) enforce(reply, decision);
  }
  throw failure;
}


/** Reads the CSRF token from, in order: the body or query `CSRFToken` (already merged into params), the header. */
function csrfTokenOf(request: FastifyRequest, params: Record<string, unknown>): string | null {
  const fromParams = params.CSRFToken;
  if (typeof fromParams === 'string' && fromParams !== '') return fromParams;
  const header = request.headers['x-csrf-token'];
  return typeof header === 'string' && header !== '' ? header : null;
}

/** Throws 403 unless the request carries the session's CSRF token (and, when sent, the csrf_token cookie agrees). */
function requireCsrf(
  services: Services,
  request: FastifyRequest,
  session: Session,
  params: Record<string, unknown>,
  cookies: Record<string, string | undefined>,
): void {
  const token = csrfTokenOf(request, params);
  if (token === null || !services.sessions.csrfMatches(session, token)) throw errors.csrf();
  const cookieToken = cookies[CSRF_COOKIE];
  if (cookieToken !== undefined && !safeEqual(cookieToken, token)) throw errors.csrf();
}

/**
 * For a guest call that acts on the client (or staff member) of the session cookie, e.g. guest/cart/* on a
 * logged-in client's cart: the same CSRF check as a client call, so a link or form on another site cannot act on a
 * customer's account through the cookie the browser sends along. The token is read from the raw request, since
 * `CSRFToken` is not one of the action's parameters.
 */
export function requireSessionCsrf(services: Services, request: FastifyRequest, session: Session): void {
  const query = (request.query ?? {}) as Record<string, unknown>;
  const body = request.method === 'POST' && typeof request.body === 'object' && request.body !== null ? (request.body as Record<string, unknown>) : {};
  requireCsrf(services, request, session, { ...query, ...body }, readCookies(request));
}

/**
 * Verifier credentials are refused everywhere except where the caller says so (`allowVerifier`): the gateway passes
 * the action's `verifier` flag, the events stream passes true, every other route (exports, future ones) refuses by
 * default. Checked here, where every admin credential is resolved, so no route can forget it.
 */
function withinVerifierScope(authenticated: Authenticated, allowVerifier: boolean): Authenticated {
  if (!allowVerifier && authenticated.identity.role === 'admin' && authenticated.identity.staff.verifier) throw errors.verifierScope();
  return authenticated;
}

export async function authenticate(
  role: AuthRole,
  request: FastifyRequest,
  reply: FastifyReply,
  services: Services,
  ip: string,
  params: Record<string, unknown>,
  allowVerifier = false,
): Promise<Authenticated> {
  return withinVerifierScope(await resolveCredentials(role, request, reply, services, ip, params), allowVerifier);
}

async function resolveCredentials(
  role: AuthRole,
  request: FastifyRequest,
  reply: FastifyReply,
  services: Services,
  ip: string,
  params: Record<string, unknown>,
): Promise<Authenticated> {
  const basic = readBasic(request);
  if (basic !== null) {
    // No "is this address blocked?" check first: API tokens are 190 bits, so a valid one always works, and an attacker
    // failing from a shared (office, NAT) address cannot lock its legitimate users out. Failures are still counted
    // and answered 429 past API_AUTH_FAILED.
    if (basic.password === '') return rejectAttempt(services, reply, ip, errors.emptyPassword());
    if (basic.user !== role) return rejectAttempt(services, reply, ip, errors.wrongRole(role));
    if (role === 'admin') {
      const staff = await services.staff.principalByToken(basic.password);
      if (staff === null) return rejectAttempt(services, reply, ip, errors.badAdminToken());
      return { identity: { role: 'admin', staff, via: 'token' }, session: null };
    }
    const client = await services.clients.principalByToken(basic.password);
    if (client === null) return rejectAttempt(services, reply, ip, errors.badClientToken());
    return { identity: { role: 'client', client, via: 'token' }, session: null };
  }

  const cookies = readCookies(request);
  const sessionId = cookies[SESSION_COOKIE];
  const session = sessionId === undefined ? null : await services.sessions.load(sessionId);
  if (session === null || session.subject.type !== role) throw errors.authRequired();

  requireCsrf(services, request, session, params, cookies);

  const subjectId = session.subject.id;
  if (subjectId === null) throw errors.authRequired();
  if (role === 'admin') {
    const staff = await services.staff.principalById(subjectId);
    if (staff === null) throw errors.authRequired();
    return { identity: { role: 'admin', staff, via: 'session' }, session };
  }
  const client = await services.clients.principalById(subjectId);
  if (client === null) throw errors.authRequired();
  return { identity: { role: 'client', client, via: 'session' }, session };
}

/** The LOGIN subject: one e-mail address tried from one network address (an IPv6 caller's whole prefix). */
function loginSubject(limiter: Services['limiter'], ip: string, email: string): string {
  return `${limiter.addressKey(ip)}|${email.trim().toLowerCase()}`;
}

/**
 * For login actions, before any password is checked: counts the attempt under LOGIN per (address, e-mail), so
 * guessing one account's password stops after a few tries without shutting out the other people behind the same
 * address; and refuses when the address has failed too often overall (API_AUTH_FAILED, the looser per-address
 * ceiling that stops spraying many e-mails).
 */
export async function guardLogin(services: Services, reply: FastifyReply, ip: string, email: string): Promise<void> {
  const { limiter } = services;
  if (limiter.isExempt(ip)) return;
  const blocked = await limiter.isBlocked('API_AUTH_FAILED', ip);
  if (blocked !== null) enforce(reply, blocked);
  enforce(reply, await limiter.hit('LOGIN', loginSubject(limiter, ip, email)));
}

/** For login actions: counts a failed login against API_AUTH_FAILED and throws 206 (or 429 once over the limit). */
export function failLogin(services: Services, reply: FastifyReply, ip: string): Promise<never> {
  return rejectAttempt(services, reply, ip, errors.loginFailed());
}
