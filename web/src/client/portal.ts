// The customer portal (issue 25, docs/portal.md): the client area in portal mode, at /portal, made to be framed by
// the operator's own application. Its link's token arrives in the fragment (`/portal#token=…`): it is taken off the
// address bar at once and posted to guest/portal/open, which starts a session restricted to the link's scopes. The
// portal shows only the pages those scopes open, has no login, logout or profile, and its "Back" link leads to the
// link's return_url (in the top window when framed).
import { html } from 'htm/preact';
import { useEffect } from 'preact/hooks';
import { ApiError, call, describeError } from '../lib/api.ts';
import { Link, navigate, setBasePath } from '../lib/router.ts';
import { startArea, type Area, type Route } from '../lib/shell.ts';
import { createStore, useStore } from '../lib/store.ts';
import { Loading } from '../lib/ui.ts';
import { BrandLink, Footer, loadBrand } from './brand.ts';
import { InvoicePage, InvoicesPage } from './billing.ts';
import { KeysPage } from './keys.ts';
import { portalState, type PortalScope } from './portal-state.ts';
import { PortalUsagePage } from './portal-usage.ts';
import { WalletPage } from './wallet.ts';

/** The portal's pages, by scope, in the navigation's order. */
const PAGES: ReadonlyArray<readonly [scope: PortalScope, href: string, label: string]> = [
  ['keys', '/keys', 'API keys'],
  ['usage', '/usage', 'Usage'],
  ['invoices', '/invoices', 'Invoices'],
  ['wallet', '/wallet', 'Wallet'],
];

/** The portal's "account": set once its session is known; the shell shows the pages while it is not null. */
const account = createStore<{ email: string } | null | undefined>(undefined);
const loginReason = createStore<string | null>(null);
/** Why opening the link failed (used, expired, unknown), shown in place of the pages. */
const openError = createStore<unknown>(null);

async function refreshAccount(): Promise<unknown> {
  const state = await call('client/portal/get');
  portalState.set(state);
  // The portal names no one: the operator's application around it knows who its user is.
  account.set({ email: '' });
  return state;
}

function BackLink() {
  const state = useStore(portalState);
  if (state === null || state.return_url === null) return null;
  // Framed, "Back" leaves the portal for the operator's page around it: the top window goes there.
  return html`<a href=${state.return_url} target="_top" class="portal-back" data-testid="portal-back">← Back</a>`;
}

function PortalBrand() {
  return html`<span class="portal-brand"><${BrandLink} /> <${BackLink} /></span>`;
}

/** In place of every page when there is no portal session: no login form, the link must be made again. */
function PortalEnded() {
  const error = useStore(openError);
  const state = useStore(portalState);
  const reason = error instanceof ApiError && error.code === 422 ? 'This link has expired or was already used.' : error !== null ? describeError(error) : 'This portal session has ended.';
  return html`<h1>Session ended</h1>
    <p role="alert" data-testid="portal-ended">${reason} Open the billing page again from the application that sent you here.</p>
    ${state?.return_url ? html`<p><a href=${state.return_url} target="_top">Back</a></p>` : null}`;
}

/** `/`: the first page the portal's scopes open. */
function PortalHome() {
  const state = useStore(portalState);
  const first = PAGES.find(([scope]) => state?.scopes.includes(scope));
  useEffect(() => {
    if (first !== undefined) navigate(first[1], { replace: true });
  }, [first?.[1]]);
  return first === undefined ? html`<h1>Nothing to show</h1>` : html`<${Loading} />`;
}

/** A page shown only when the portal's scopes include `scope` (else "page not found"). */
function scoped(scope: PortalScope, route: Route): Route {
  return { ...route, page: (params) => (portalState.get()?.scopes.includes(scope) === true ? route.page(params) : null) };
}

const ROUTES: readonly Route[] = [
  { path: '/', page: () => html`<${PortalHome} />` },
  scoped('keys', { path: '/keys', page: () => html`<${KeysPage} />` }),
  scoped('usage', { path: '/usage', page: () => html`<${PortalUsagePage} />` }),
  scoped('invoices', { path: '/invoices', page: () => html`<${InvoicesPage} />` }),
  scoped('invoices', { path: '/invoices/:id', page: ({ id }) => html`<${InvoicePage} id=${Number(id)} />` }),
  scoped('wallet', { path: '/wallet', page: () => html`<${WalletPage} />` }),
];

const notFound = () => html`<h1>Page not found</h1><p>This page is not part of this portal. <${Link} href="/">Back to the start<//>.</p>`;

const portalArea: Area = {
  role: 'client',
  home: '/',
  navigationLabel: 'Portal',
  account,
  loginReason,
  refreshAccount,
  logoutAction: null,
  useNavigation: (me) => {
    const state = useStore(portalState);
    return me && state !== null ? PAGES.filter(([scope]) => state.scopes.includes(scope)).map(([, href, label]) => [href, label] as const) : null;
  },
  loginFirst: true,
  routes: ROUTES,
  mailPages: { reset: notFound, 'confirm-email': notFound },
  notFound,
  Brand: PortalBrand,
  Footer,
  LoginPage: PortalEnded,
  beforeSession: () => void loadBrand(),
};

/** Opens the link in the fragment (if any), then runs the portal. */
export async function startPortal(): Promise<void> {
  setBasePath('/portal');
  const token = /^#token=([A-Za-z0-9_-]{1,200})$/.exec(location.hash)?.[1];
  if (token !== undefined) {
    // Off the address bar and out of history first: the token is a credential, and works once.
    history.replaceState(null, '', location.pathname + location.search);
    try {
      portalState.set(await call('guest/portal/open', { token }));
    } catch (error) {
      openError.set(error);
    }
  }
  await startArea(portalArea);
}
