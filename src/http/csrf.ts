// The CSRF check of session calls (CONTRACT §3): a call made with the session cookie must carry the session's CSRF
// token, so a link or form on another site cannot act through the cookie the browser sends along.
import type { FastifyRequest } from 'fastify';
import { parse as parseCookies } from 'cookie';
import { safeEqual } from '../lib/crypto.ts';
import { errors } from '../platform/errors.ts';
import type { Session, SessionStore } from '../platform/session.ts';

export const SESSION_COOKIE = 'tollgate_session';
export const CSRF_COOKIE = 'csrf_token';

export function readCookies(request: FastifyRequest): Record<string, string | undefined> {
  const header = request.headers.cookie;
  return header === undefined ? {} : parseCookies(header);
}

/** Reads the CSRF token from, in order: the body or query `CSRFToken` (already merged into params), the header. */
function csrfTokenOf(request: FastifyRequest, params: Record<string, unknown>): string | null {
  const fromParams = params.CSRFToken;
  if (typeof fromParams === 'string' && fromParams !== '') return fromParams;
  const header = request.headers['x-csrf-token'];
  return typeof header === 'string' && header !== '' ? header : null;
}

/** Throws 403 unless the request carries the session's CSRF token (and, when sent, the csrf_token cookie agrees). */
export function requireCsrf(
  sessions: Pick<SessionStore, 'csrfMatches'>,
  request: FastifyRequest,
  session: Session,
  params: Record<string, unknown>,
  cookies: Record<string, string | undefined>,
): void {
  const token = csrfTokenOf(request, params);
  if (token === null || !sessions.csrfMatches(session, token)) throw errors.csrf();
  const cookieToken = cookies[CSRF_COOKIE];
  if (cookieToken !== undefined && !safeEqual(cookieToken, token)) throw errors.csrf();
}

/**
 * For a guest call that acts on the client (or staff member) of the session cookie, e.g. guest/cart/* on a
 * logged-in client's cart: the same CSRF check as a client call, so a link or form on another site cannot act on a
 * customer's account through the cookie the browser sends along. The token is read from the raw request, since
 * `CSRFToken` is not one of the action's parameters.
 */
export function requireSessionCsrf(sessions: Pick<SessionStore, 'csrfMatches'>, request: FastifyRequest, session: Session): void {
  const query = (request.query ?? {}) as Record<string, unknown>;
  const body = request.method === 'POST' && typeof request.body === 'object' && request.body !== null ? (request.body as Record<string, unknown>) : {};
  requireCsrf(sessions, request, session, { ...query, ...body }, readCookies(request));
}
