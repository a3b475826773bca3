// Customer-portal links (Tollgate issue 25, docs/portal.md): the operator's app server asks for a single-use link to
// one client's portal (admin/portal/session_create) and frames it or redirects to it. The token needs the `portal`
// scope (admin/staff/verifier_create {scopes: ["portal"]}) or staff holding `portal.session`.
import { callAdmin, type AdminCaller } from './http.ts';

/** What the portal may show: the keys (read, reset), usage and analytics, invoices, the wallet. */
export type PortalScope = 'keys' | 'usage' | 'invoices' | 'wallet';

export interface PortalSessionOptions {
  /** Where the portal's "Back" link leads: http(s), on the portal_frame_ancestors origins when that is set. */
  returnUrl?: string;
  /** Seconds the link (and the session it opens) lives: 60–86400, 900 by default. */
  expiresIn?: number;
}

export interface PortalSession {
  id: number;
  /** Open it once, before `expiresAt`: as an iframe's src (on an allowed origin) or a redirect. */
  url: string;
  clientId: number;
  scopes: PortalScope[];
  returnUrl: string | null;
  expiresAt: string;
}

interface Answer {
  id: number;
  url: string;
  client_id: number;
  scopes: PortalScope[];
  return_url: string | null;
  expires_at: string;
}

export async function createPortalSession(
  caller: AdminCaller,
  clientId: number,
  scopes: readonly PortalScope[] | undefined,
  options: PortalSessionOptions,
): Promise<PortalSession> {
  if (!Number.isInteger(clientId) || clientId < 1) throw new TypeError('portalSession: clientId must be a positive integer');
  const params = {
    client_id: clientId,
    ...(scopes !== undefined && { scopes }),
    ...(options.returnUrl !== undefined && { return_url: options.returnUrl }),
    ...(options.expiresIn !== undefined && { expires_in: options.expiresIn }),
  };
  const answer = (await callAdmin(caller, 'portal/session_create', JSON.stringify(params))) as Answer;
  return { id: answer.id, url: answer.url, clientId: answer.client_id, scopes: answer.scopes, returnUrl: answer.return_url, expiresAt: answer.expires_at };
}
