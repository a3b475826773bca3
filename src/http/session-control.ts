// The browser session of one request (SessionControl, src/platform/session.ts): read lazily from the
// `tollgate_session` cookie (guest calls that never touch a session pay nothing), started with fresh cookies at login,
// ended at logout.
import { serialize } from 'cookie';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { PortalGrant, Session, SessionControl, SessionStore } from '../platform/session.ts';
import { CSRF_COOKIE, readCookies, requireSessionCsrf, SESSION_COOKIE } from './csrf.ts';

export function createSessionControl(
  request: FastifyRequest,
  reply: FastifyReply,
  sessions: SessionStore,
  preloaded?: Session | null,
): SessionControl {
  let loaded: Promise<Session | null> | undefined = preloaded === undefined ? undefined : Promise.resolve(preloaded);
  const cookieValue = (): string | null => readCookies(request)[SESSION_COOKIE] ?? null;
  const setCookies = (sessionId: string, csrfToken: string, maxAge?: number, portal?: PortalGrant): void => {
    // Read only when cookies are set: request.protocol is not free and most calls never set any.
    const secure = request.protocol === 'https';
    const base = {
      path: '/',
      ...(portal !== undefined ? portalCookieAttributes(request) : { sameSite: 'lax' as const, secure }),
      ...(maxAge !== undefined && { maxAge }),
    };
    reply.header('Set-Cookie', [
      serialize(SESSION_COOKIE, sessionId, { ...base, httpOnly: true }),
      serialize(CSRF_COOKIE, csrfToken, base),
    ]);
  };

  const control: SessionControl = {
    current() {
      if (loaded === undefined) {
        const value = cookieValue();
        loaded = value === null ? Promise.resolve(null) : sessions.load(value);
      }
      return loaded;
    },
    async start(subject, portal) {
      const previous = await control.current();
      if (previous !== null) await sessions.destroy(previous.idHash);
      const created = await sessions.create(subject, portal);
      loaded = Promise.resolve(created.session);
      setCookies(created.id, created.csrfToken, undefined, portal);
      return created;
    },
    async end() {
      const previous = await control.current();
      if (previous !== null) await sessions.destroy(previous.idHash);
      loaded = Promise.resolve(null);
      setCookies('', '', 0);
    },
    cookieValue,
    requireCsrf(session) {
      requireSessionCsrf(sessions, request, session);
    },
  };
  return control;
}

/** Host names browsers treat as a secure context over plain http (they accept `Secure` cookies from them). */
function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/:\d+$/, '').toLowerCase();
  return host === 'localhost' || host.endsWith('.localhost') || host === '127.0.0.1' || host === '[::1]' || host === '::1';
}

/**
 * The cookies of a customer-portal session (issue 25), which must work inside a cross-site iframe: SameSite=None
 * (sent with the framed page's own requests) with Secure (browsers refuse SameSite=None without it) and Partitioned
 * (CHIPS: the cookie lives in the embedding site's partition only, so it works where third-party cookies are
 * otherwise blocked and means nothing outside that embedding). Possible over https, and over plain http on loopback
 * names (a secure context: tests and local development). Elsewhere on plain http: SameSite=Lax, so the portal works
 * opened directly but not framed (docs/portal.md). CSRF still holds: every session call needs the session's CSRF token.
 */
function portalCookieAttributes(request: FastifyRequest): { sameSite: 'none' | 'lax'; secure: boolean; partitioned?: boolean } {
  if (request.protocol === 'https' || isLoopbackHost(request.hostname)) return { sameSite: 'none', secure: true, partitioned: true };
  return { sameSite: 'lax', secure: false };
}
