// What a browser session is, to the modules that act on one (login, logout, the cart of a guest): the session's
// subject and ids, the store that keeps sessions (modules/session/service.ts) and the control an action gets for its
// request's session (the cookie implementation is src/http/session-control.ts). Declared here so that neither a
// module nor http/ reaches into the other for them.

export type SessionSubject = { type: 'guest'; id: null } | { type: 'client' | 'admin'; id: number };

/**
 * What a customer-portal session may do (src/modules/portal/): it is a client session restricted to the client actions
 * its scopes open (deny by default, checked by the gateway), ending at `endsAt` whatever its activity.
 */
export interface PortalGrant {
  scopes: readonly string[];
  /** Where the portal's "Back" link leads (already validated), or null. */
  returnUrl: string | null;
  /** ISO 8601: the session ends then, however active. */
  endsAt: string;
}

export interface Session {
  /** The hash of the cookie value: the session's identity inside Tollgate. */
  idHash: string;
  subject: SessionSubject;
  csrfHash: string;
  /** Set on a customer-portal session only (absent or null: an ordinary session). */
  portal?: PortalGrant | null;
}

export interface NewSession {
  /** Cookie value; shown once, never stored. */
  id: string;
  csrfToken: string;
  session: Session;
}

/** The part of the session store (modules/session/service.ts) that the HTTP layer uses per request. */
export interface SessionStore {
  create(subject: SessionSubject, portal?: PortalGrant): Promise<NewSession>;
  /** The live session for a cookie value, or null when unknown or expired. */
  load(id: string): Promise<Session | null>;
  csrfMatches(session: Session, token: string): boolean;
  destroy(idHash: string): Promise<void>;
}

/** The browser session of the request an action answers, and the means to start or end one. */
export interface SessionControl {
  /** The live session named by the cookie, or null. */
  current(): Promise<Session | null>;
  /**
   * Ends the current session (if any) and starts a new one for `subject`, setting both cookies. With `portal`, a
   * customer-portal session: cookies that work inside a cross-site iframe where the browser allows it
   * (src/http/session-control.ts).
   */
  start(subject: SessionSubject, portal?: PortalGrant): Promise<NewSession>;
  /** Ends the current session and clears both cookies. */
  end(): Promise<void>;
  /** The session's cookie value as sent, or null. */
  cookieValue(): string | null;
  /**
   * Throws 403 unless the request carries `session`'s CSRF token (as a client call must): for a guest call that acts
   * on the account of the session cookie, e.g. guest/cart/* on a logged-in client's cart.
   */
  requireCsrf(session: Session): void;
}
