// Shared steps of the customer-portal tests (issue 25): a portal link made through the admin API, opened as the
// portal page opens it (guest/portal/open with the token from the URL's fragment), and calls in that session.
import { expect } from 'vitest';
import { Browser, type Reply, type TestApp } from './app.ts';

export interface PortalLink {
  id: number;
  url: string;
  token: string;
  expires_at: string;
  scopes: string[];
}

/** The token a portal URL carries in its fragment (`…/portal#token=…`). */
export function tokenOf(url: string): string {
  const token = new URL(url).hash.replace(/^#token=/, '');
  expect(token.length).toBeGreaterThan(30);
  return token;
}

export async function createLink(t: TestApp, params: Record<string, unknown>): Promise<PortalLink> {
  const reply = await t.admin('portal/session_create', params);
  expect(reply.body.error, JSON.stringify(reply.body)).toBeNull();
  return { ...(reply.result as Omit<PortalLink, 'token'>), token: tokenOf(reply.result.url as string) };
}

/** Opens the link in a new browser (as the framed page does); the reply and the browser holding the session. */
export async function openLink(t: TestApp, token: string, browser = new Browser()): Promise<{ reply: Reply; browser: Browser }> {
  const reply = await t.call('/api/guest/portal/open', { token }, { browser });
  return { reply, browser };
}

/** A portal session for `clientId` with `scopes` (all when omitted). */
export async function portalSession(t: TestApp, clientId: number, scopes?: string[]): Promise<Browser> {
  const link = await createLink(t, { client_id: clientId, ...(scopes !== undefined && { scopes }) });
  const { reply, browser } = await openLink(t, link.token);
  expect(reply.body.error, JSON.stringify(reply.body)).toBeNull();
  return browser;
}

/** A call in a session with its CSRF token, as the pages make them. */
export function inSession(t: TestApp, browser: Browser, path: string, params: Record<string, unknown> = {}): Promise<Reply> {
  return t.call(`/api/${path}`, params, { browser, csrf: true });
}
