// The app shell both areas run in (the client area at /, the admin panel at /admin): the header with the area's
// navigation and the logout button, the page-wide error, the routes (pages opened from mail links, pages that need a
// login, "page not found") and the start-up that asks who is logged in. An area supplies its pages, its navigation,
// its brand, its footer and its login page (see Area); everything else is here once.
import { html, render } from 'htm/preact';
import type { ComponentChildren, FunctionComponent, VNode } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, call, describeError, onAuthLost } from './api.ts';
import { Link, match, navigate, useLocation } from './router.ts';
import { useHashRoute } from './security.ts';
import { createStore, useStore, type Store } from './store.ts';
import { Loading } from './ui.ts';

/** A page of the area: a path (`/admin/clients/:id`) and what it shows; `page` answers null for "not this page". */
export interface Route {
  path: string;
  page: (params: Record<string, string>) => VNode | null;
  /** The page needs a logged-in account; the login form takes its place until there is one, saying "Log in to see …". */
  login?: string;
}

export interface Area {
  /** The session role of this area, as guest/session/whoami names it. */
  role: 'client' | 'admin';
  /** The area's root path: the first navigation item, where logging out leads. */
  home: string;
  /** The navigation landmark's name. */
  navigationLabel: string;
  /** Who is logged in: null = nobody, undefined = not known yet. */
  account: Store<{ email: string } | null | undefined>;
  /** Why the login form is shown (the session ended), read by the area's login page. */
  loginReason: Store<string | null>;
  /** Reads the logged-in account into `account` (after the start-up found a session, and after a login). */
  refreshAccount: () => Promise<unknown>;
  /** null: no "Log out" button and no "Signed in as" line (the customer portal, whose session its link made). */
  logoutAction: 'client/profile/logout' | 'admin/profile/logout' | null;
  /** The navigation items [href, label] for who is logged in; null shows no navigation. A hook: it may read stores. */
  useNavigation: (account: { email: string } | null | undefined) => ReadonlyArray<readonly [href: string, label: string]> | null;
  /** Every page needs a login (the admin panel): the login form stands in for any page until there is one. */
  loginFirst: boolean;
  /** On a narrow screen the navigation folds behind a "Menu" button (the admin panel's sixteen links would fill a phone). */
  collapsibleNavigation?: boolean;
  routes: readonly Route[];
  /** Pages opened from mail links, whose token rides in the fragment (`#/reset/<token>`, see useHashRoute). */
  mailPages: Record<'reset' | 'confirm-email', (token: string) => VNode>;
  notFound: () => VNode;
  Brand: FunctionComponent;
  Footer: FunctionComponent;
  /** The login form; `what` names what the page behind it shows (a Route's `login`). */
  LoginPage: FunctionComponent<{ what?: string | undefined }>;
  /** Shown above every page while someone is logged in (the admin panel's mail banner). */
  Banner?: FunctionComponent;
  /** Work after the first render, before the session is asked (the client area reads its brand). */
  beforeSession?: () => void;
  /** Work once the session is known (the client area reads its cart). */
  afterSession?: () => Promise<void>;
  /** Work after logging out, before going home (the client area empties its cart badge). */
  afterLogout?: () => void;
}

/** An error about the whole page (e.g. the session lost its CSRF token), shown above every page. */
const pageError = createStore<unknown>(null);

/** A numeric route parameter (`/orders/:id`), or null when the segment is not a number. */
function numericId(params: Record<string, string>): number | null {
  return /^\d+$/.test(params.id ?? '') ? Number(params.id) : null;
}

/** A page without parameters at `path`; `login` says what it shows when it needs a login. */
export function fixedPage(path: string, Page: (props: Record<string, never>) => unknown, login?: string): Route {
  return { path, page: () => html`<${Page} />`, ...(login !== undefined && { login }) };
}

/** A record's page at `path` (`/admin/clients/:id`): a numeric id, else not this page (so "page not found"). */
export function recordPage(path: string, Page: (props: { id: number }) => unknown, login?: string): Route {
  return {
    path,
    page: (params) => {
      const id = numericId(params);
      return id === null ? null : html`<${Page} id=${id} />`;
    },
    ...(login !== undefined && { login }),
  };
}

function Header({ area }: { area: Area }) {
  const me = useStore(area.account);
  const items = area.useNavigation(me);
  const { path } = useLocation();
  const [busy, setBusy] = useState(false);
  const logout = async (): Promise<void> => {
    setBusy(true);
    try {
      if (area.logoutAction !== null) await call(area.logoutAction);
    } catch {
      // The session may already be gone: the user is logged out either way.
    } finally {
      setBusy(false);
    }
    area.account.set(null);
    area.afterLogout?.();
    navigate(area.home);
  };
  const current = (href: string): boolean => (href === area.home ? path === area.home : path.startsWith(href));
  const menu = useMenu(path);
  const collapsible = area.collapsibleNavigation === true && items !== null;
  return html`<header class="top">
    <div class="inner">
      <${area.Brand} />
      ${collapsible
        ? html`<button type="button" class="menu-toggle" ref=${menu.button} aria-expanded=${menu.open ? 'true' : 'false'} aria-controls="area-navigation" onClick=${menu.toggle}>
            <span aria-hidden="true">☰</span> Menu
          </button>`
        : null}
      ${items !== null
        ? html`<nav id="area-navigation" aria-label=${area.navigationLabel} class=${collapsible ? `collapsible${menu.open ? ' open' : ''}` : undefined} onKeyDown=${menu.onKeyDown}>
            <ul>
              ${items.map(([href, label]) => html`<li><${Link} href=${href} current=${current(href)}>${label}<//></li>`)}
              ${me && area.logoutAction !== null ? html`<li><button type="button" onClick=${logout} disabled=${busy} aria-busy=${busy ? 'true' : 'false'}>${busy ? 'Working…' : 'Log out'}</button></li>` : null}
            </ul>
          </nav>`
        : null}
      ${me && area.logoutAction !== null ? html`<span class="who">Signed in as ${me.email}</span>` : null}
    </div>
  </header>`;
}

/**
 * The narrow-screen menu's state: closed at first and after every navigation; Escape inside it closes it and gives the
 * focus back to its button, as a disclosure should.
 */
function useMenu(path: string) {
  const [open, setOpen] = useState(false);
  const button = useRef<HTMLButtonElement>(null);
  useEffect(() => setOpen(false), [path]);
  return {
    open,
    button,
    toggle: (): void => setOpen((was) => !was),
    onKeyDown: (event: KeyboardEvent): void => {
      if (event.key !== 'Escape' || !open) return;
      setOpen(false);
      button.current?.focus();
    },
  };
}

/** The login form in place of a page until someone is logged in. */
function LoginFirst({ area, what, children }: { area: Area; what?: string | undefined; children: ComponentChildren }) {
  const me = useStore(area.account);
  if (me === undefined) return html`<${Loading} />`;
  if (me === null) return html`<${area.LoginPage} what=${what} />`;
  return children;
}

function Routes({ area }: { area: Area }) {
  const { path } = useLocation();
  const fromMail = useHashRoute();
  if (fromMail !== null) return area.mailPages[fromMail.name](fromMail.token);
  const page = (): VNode => {
    for (const route of area.routes) {
      const params = match(route.path, path);
      const shown = params === null ? null : route.page(params);
      if (shown === null) continue;
      return route.login === undefined ? shown : html`<${LoginFirst} area=${area} what=${route.login}>${shown}<//>`;
    }
    return area.notFound();
  };
  return area.loginFirst ? html`<${LoginFirst} area=${area}>${page()}<//>` : page();
}

function App({ area }: { area: Area }) {
  const error = useStore(pageError);
  const me = useStore(area.account);
  useEffect(
    // A login clears the page-wide error: it was about the session that just ended.
    () => area.account.subscribe(() => {
      if (area.account.get()) pageError.set(null);
    }),
    [],
  );
  return html`
    <${Header} area=${area} />
    <main id="main" tabindex="-1">
      ${me && area.Banner !== undefined ? html`<${area.Banner} />` : null}
      ${error !== null ? html`<p class="error" role="alert">${describeError(error)}</p>` : null}
      <${Routes} area=${area} />
    </main>
    <${area.Footer} />
  `;
}

/** Renders the area into #app and finds out who is logged in. */
export async function startArea(area: Area): Promise<void> {
  onAuthLost(() => {
    if (area.account.get()) {
      area.loginReason.set('Your session has ended. Please log in again.');
      area.account.set(null);
    }
  });
  render(html`<${App} area=${area} />`, document.getElementById('app')!);
  area.beforeSession?.();
  try {
    // Asked first so a logged-out page's console shows no 401: the account is read only when there is a session.
    const { role } = await call('guest/session/whoami');
    if (role === area.role) await area.refreshAccount();
    else area.account.set(null);
  } catch (error) {
    // No session (or one of the other area): logged out. A session that lost its CSRF token is shown, not hidden.
    if (error instanceof ApiError && error.code === 403) pageError.set(error);
    area.account.set(null);
  }
  await area.afterSession?.();
}
