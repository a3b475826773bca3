// Tables of the portal module: the single-use links that open a customer-portal session. Only this module writes them.
import type { Generated } from 'kysely';

export interface PortalLinkTable {
  id: Generated<number>;
  /** Keyed hash (HMAC) of the link's token: the token itself is in the URL handed out once, never stored. */
  token_hash: string;
  client_id: number;
  /** Comma-separated scope names (src/modules/portal/scopes.ts). */
  scopes: string;
  return_url: string | null;
  /** The staff member (or verifier token) that made the link. */
  created_by: number;
  expires_at: string;
  /** Set once, when the link is opened: a link works once. */
  used_at: string | null;
  created_at: string;
}

export interface PortalTables {
  portal_links: PortalLinkTable;
}
