// Authentication of admin and client calls (CONTRACT §3): Basic API tokens first, then the session cookie with its
// CSRF token. Failed Basic attempts and failed logins count against API_AUTH_FAILED per IP.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { errors } from '../platform/errors.ts';
import type { ClientPrincipal, Identity, PrincipalLookup, StaffPrincipal } from '../platform/identity.ts';
import { rejectAttempt, type LimiterHolder } from '../platform/login-limits.ts';
import type { Session, SessionStore } from '../platform/session.ts';
import { readCookies, requireCsrf, SESSION_COOKIE } from './csrf.ts';

/** What authentication needs of the services: the rate limiter, the sessions and the accounts behind a credential. */
export interface AuthServices extends LimiterHolder {
  sessions: Pick<SessionStore, 'load' | 'csrfMatches'>;
  staff: PrincipalLookup<StaffPrincipal>;
  clients: PrincipalLookup<ClientPrincipal>;
}

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
  services: AuthServices,
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
  services: AuthServices,
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

  requireCsrf(services.sessions, request, session, params, cookies);

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
