// A small history router: real links (<a href>) that navigate without reloading, the back button, and focus moved
// to the new page's heading so screen readers announce it.
import { html } from 'htm/preact';
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';

const listeners = new Set<() => void>();

function notify(): void {
  for (const listener of listeners) listener();
}

window.addEventListener('popstate', notify);

export function navigate(to: string, { replace = false } = {}): void {
  if (replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
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
  return { path: location.pathname.replace(/\/+$/, '') || '/', query: new URLSearchParams(location.search) };
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
  return html`<a href=${href} class=${className} onClick=${onClick} aria-current=${current === true ? 'page' : undefined}>${children}</a>`;
}
