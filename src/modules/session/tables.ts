// Tables of the session module: the browser sessions of guests, clients and staff. Only this module writes them.

export interface SessionTable {
  /** HMAC of the session id sent in the cookie: a database dump does not yield usable session ids. */
  id_hash: string;
  /** HMAC of the session's CSRF token. */
  csrf_hash: string;
  subject_type: 'guest' | 'client' | 'admin';
  subject_id: number | null;
  created_at: string;
  last_seen_at: string;
  expires_at: string;
  /**
   * A customer-portal session (issue 25, src/modules/portal/): its scopes, comma-separated; null for an ordinary
   * session. With it, `portal_return_url` (the portal's "Back" link) and `ends_at`, the moment it ends however active.
   */
  portal_scopes: string | null;
  portal_return_url: string | null;
  ends_at: string | null;
}

export interface SessionTables {
  sessions: SessionTable;
}
