// The customer portal's state (issue 25): null in the client area; in the portal, what its session may show (its
// scopes), where "Back" leads and when it ends. Pages shared with the client area read it to leave out what the
// portal's scopes do not open (web/src/client/keys.ts: no create, rename or delete; usage only with `usage`).
import type { Result } from '../lib/api.ts';
import { createStore, useStore } from '../lib/store.ts';

export type PortalState = Result<'client/portal/get'>;
export type PortalScope = PortalState['scopes'][number];

export const portalState = createStore<PortalState | null>(null);

/** Whether the page may offer what `scope` opens: always in the client area, in the portal when given the scope. */
export function usePortalAllows(scope: PortalScope): boolean {
  const state = useStore(portalState);
  return state === null || state.scopes.includes(scope);
}

/** True in the portal: the pages then offer only what a portal session may do. */
export function useInPortal(): boolean {
  return useStore(portalState) !== null;
}
