// Web origins as the portal's settings and links name them (issue 25): `https://app.example.com` or
// `http://localhost:5173`, scheme and host (and port) only. Pure: the settings catalogue and the portal module use it.
import { InvalidInput } from './invalid-input.ts';

const MAX_ORIGINS = 20;

/** The origin `text` names, normalised (lower-case, default port dropped), or null when it is not a plain http(s) origin. */
export function parseOrigin(text: string): string | null {
  if (!/^https?:\/\/[^\s/?#]+\/?$/i.test(text)) return null;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return null;
  }
  // No user name, password or wildcard: a CSP source list would read `*` as "any", which this setting never means.
  if (url.username !== '' || url.password !== '' || url.hostname.includes('*')) return null;
  return url.origin;
}

/**
 * A list of origins separated by spaces or commas, checked and normalised to one space between each; '' stays ''
 * (no origin may frame the portal). Throws InvalidInput naming `param` on the first bad entry.
 */
export function normalizeOriginList(param: string, text: string): string {
  const entries = text.split(/[\s,]+/).filter((entry) => entry !== '');
  if (entries.length > MAX_ORIGINS) throw new InvalidInput(param, `must list at most ${MAX_ORIGINS} origins`);
  const origins: string[] = [];
  for (const entry of entries) {
    const origin = parseOrigin(entry);
    if (origin === null) throw new InvalidInput(param, `must list origins such as https://app.example.com (scheme, host and port only): "${entry.slice(0, 100)}" is not one`);
    if (!origins.includes(origin)) origins.push(origin);
  }
  return origins.join(' ');
}

/** The origins of a stored list ('' or null: none). */
export function originsOf(list: string | null): string[] {
  return list === null || list === '' ? [] : list.split(' ');
}

/**
 * A return address for a link out of Tollgate: an absolute http(s) URL of at most 2000 characters, on one of
 * `allowed` origins when that list is not empty. The problem in words, or null when it is fine.
 */
export function returnUrlProblem(text: string, allowed: readonly string[]): string | null {
  if (text.length > 2000) return 'must be at most 2000 characters';
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'must be an absolute http(s) URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must be an http(s) URL';
  if (url.username !== '' || url.password !== '') return 'must not carry a user name or password';
  if (allowed.length > 0 && !allowed.includes(url.origin)) return `must be on one of the allowed origins (the portal_frame_ancestors setting): ${url.origin} is not`;
  return null;
}
