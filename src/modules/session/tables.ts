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
}

export interface SessionTables {
  sessions: SessionTable;
}
