// A small history router: real links (<a href>) that navigate without reloading, the back button, and focus moved
// to the new page's heading so screen readers announce it.
import { html } from 'htm/preact';
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';

const listeners = new Set<() => void>();

// The path the area's pages live under: '' for the client area and the admin panel (whose paths name it already),
// '/portal' for the customer portal (issue 25), which shows client pages at /portal/… so that a reload inside its
// iframe is served with the portal's framing policy. Pages keep writing their own paths (`/invoices/3`).
let basePath = '';

/** Serves every page under `base` from now on (once, at start-up). */
export function setBasePath(base: string): void {
  basePath = base.replace(/\/+$/, '');
}

/** A page path as the address bar shows it. */
export function hrefOf(path: string): string {
  return basePath === '' || !path.startsWith('/') ? path : path === '/' ? `${basePath}/` : `${basePath}${path}`;
}

/** The page path of the address bar's path (the base path taken off). */
function pagePath(pathname: string): string {
  const inside = basePath !== '' && (pathname === basePath || pathname.startsWith(`${basePath}/`)) ? pathname.slice(basePath.length) : pathname;
  return inside.replace(/\/+$/, '') || '/';
}

function notify(): void {
  for (const listener of listeners) listener();
}

window.addEventListener('popstate', notify);

export function navigate(to: string, { replace = false } = {}): void {
  if (replace) history.replaceState(null, '', hrefOf(to));
  else history.pushState(null, '', hrefOf(to));
  notify();
  window.scrollTo(0, 0);
  // After the new page rendered: move focus to its heading.
  setTimeout(() => {
    const heading = document.querySelector<HTMLElement>('main h1');
    if (heading !== null) {
      heading.tabIndex = -1;
      heading.focus();
    }
  }, 0);
}

export interface Location {
  path: string;
  query: URLSearchParams;
}

export function useLocation(): Location {
  const [, setTick] = useState(0);
  const rendered = location.pathname + location.search;
  useEffect(() => {
    const listener = (): void => setTick((tick) => tick + 1);
    listeners.add(listener);
    // A navigation between this render and the subscription would otherwise be missed.
    if (location.pathname + location.search !== rendered) listener();
    return () => {
      listeners.delete(listener);
    };
  }, []);
  return { path: pagePath(location.pathname), query: new URLSearchParams(location.search) };
}

/** Matches `/clients/:id` against a path; returns the named segments or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const names: string[] = [];
  const regex = new RegExp(
    `^${pattern.replace(/\/:([a-z_]+)/gi, (_all, name: string) => {
      names.push(name);
      return '/([^/]+)';
    })}$`,
  );
  const found = regex.exec(path);
  if (found === null) return null;
  const params: Record<string, string> = {};
  names.forEach((name, index) => {
    params[name] = decodeURIComponent(found[index + 1] ?? '');
  });
  return params;
}

export function Link({ href, children, class: className, current }: { href: string; children: ComponentChildren; class?: string; current?: boolean }) {
  const onClick = (event: MouseEvent): void => {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(href);
  };
  return html`<a href=${hrefOf(href)} class=${className} onClick=${onClick} aria-current=${current === true ? 'page' : undefined}>${children}</a>`;
}
