// The browser session of one request: read lazily from the `tollgate_session` cookie (guest calls that never touch
// a session pay nothing), started with fresh cookies at login, ended at logout.
import { parse as parseCookies, serialize } from 'cookie';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { NewSession, Session, SessionService, SessionSubject } from '../modules/session/service.ts';

export const SESSION_COOKIE = 'tollgate_session';
export const CSRF_COOKIE = 'csrf_token';

export interface SessionControl {
  /** The live session named by the cookie, or null. */
  current(): Promise<Session | null>;
  /** Ends the current session (if any) and starts a new one for `subject`, setting both cookies. */
  start(subject: SessionSubject): Promise<NewSession>;
  /** Ends the current session and clears both cookies. */
  end(): Promise<void>;
  /** The session's cookie value as sent, or null. */
  cookieValue(): string | null;
}

export function readCookies(request: FastifyRequest): Record<string, string | undefined> {
  const header = request.headers.cookie;
  return header === undefined ? {} : parseCookies(header);
}

export function createSessionControl(
  request: FastifyRequest,
  reply: FastifyReply,
  sessions: SessionService,
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
  };
  return control;
}
