// The browser session of one request (SessionControl, src/platform/session.ts): read lazily from the
// `tollgate_session` cookie (guest calls that never touch a session pay nothing), started with fresh cookies at login,
// ended at logout.
import { serialize } from 'cookie';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Session, SessionControl, SessionStore } from '../platform/session.ts';
import { CSRF_COOKIE, readCookies, requireSessionCsrf, SESSION_COOKIE } from './csrf.ts';

export function createSessionControl(
  request: FastifyRequest,
  reply: FastifyReply,
  sessions: SessionStore,
  preloaded?: Session | null,
): SessionControl {
  let loaded: Promise<Session | null> | undefined = preloaded === undefined ? undefined : Promise.resolve(preloaded);
  const cookieValue = (): string | null => readCookies(request)[SESSION_COOKIE] ?? null;
  const setCookies = (sessionId: string, csrfToken: string, maxAge?: number): void => {
    // Read only when cookies are set: request.protocol is not free and most calls never set any.
    const secure = request.protocol === 'https';
    const base = { path: '/', sameSite: 'lax' as const, secure, ...(maxAge !== undefined && { maxAge }) };
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
    async start(subject) {
      const previous = await control.current();
      if (previous !== null) await sessions.destroy(previous.idHash);
      const created = await sessions.create(subject);
      loaded = Promise.resolve(created.session);
      setCookies(created.id, created.csrfToken);
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
