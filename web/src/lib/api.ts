// The only way the pages talk to the server: POST JSON to /api/{role}/{module}/{action}, read the envelope, throw
// ApiError with the server's message on failure. Client and admin calls ride on the session cookie and send the
// csrf_token cookie's value in X-CSRF-Token; guest calls send no token.

export class ApiError extends Error {
  constructor(
    message: string,
    /** The envelope's code (CONTRACT §2); 0 when the server could not be reached or answered no envelope. */
    readonly code: number,
    readonly status: number,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export interface Page<T> {
  list: T[];
  page: number;
  per_page: number;
  pages: number;
  total: number;
}

interface Envelope {
  result: unknown;
  error: { message: string; code: number } | null;
}

/** Codes that mean "this browser is not logged in (any more) for this area". */
const AUTH_LOST = new Set([201, 202, 203, 204, 205]);
const authListeners = new Set<(error: ApiError) => void>();

/** Calls `listener` whenever a client/admin call answers that authentication is required. */
export function onAuthLost(listener: (error: ApiError) => void): () => void {
  authListeners.add(listener);
  return () => authListeners.delete(listener);
}

export function readCookie(name: string): string {
  for (const part of document.cookie.split(';')) {
    const eq = part.indexOf('=');
    if (eq === -1) continue;
    if (part.slice(0, eq).trim() === name) {
      try {
        return decodeURIComponent(part.slice(eq + 1).trim());
      } catch {
        return '';
      }
    }
  }
  return '';
}

export async function call<T>(path: string, params: Record<string, unknown> = {}): Promise<T> {
  const role = path.split('/')[0];
  const headers: Record<string, string> = { 'Content-Type': 'application/json', Accept: 'application/json' };
  if (role !== 'guest') {
    const token = readCookie('csrf_token');
    if (token !== '') headers['X-CSRF-Token'] = token;
  }
  let response: Response;
  try {
    response = await fetch(`/api/${path}`, { method: 'POST', headers, body: JSON.stringify(params), credentials: 'same-origin' });
  } catch {
    throw new ApiError('The server cannot be reached. Check the connection and try again.', 0, 0);
  }
  let body: Envelope;
  try {
    body = (await response.json()) as Envelope;
  } catch {
    throw new ApiError(`The server answered HTTP ${response.status} without a readable message.`, 0, response.status);
  }
  if (body.error !== null && body.error !== undefined) {
    const error = new ApiError(body.error.message, body.error.code, response.status);
    if (role !== 'guest' && AUTH_LOST.has(error.code)) for (const listener of authListeners) listener(error);
    throw error;
  }
  return body.result as T;
}

/** Every item of a paginated list, at most `maxPages` pages of `perPage`; `complete` is false when capped. */
export async function allPages(
  path: string,
  params: Record<string, unknown>,
  { perPage = 500, maxPages = 20 } = {},
): Promise<{ list: unknown[]; complete: boolean }> {
  const list: unknown[] = [];
  for (let page = 1; page <= maxPages; page += 1) {
    const result = await call<Page<unknown>>(path, { ...params, page, per_page: perPage });
    list.push(...result.list);
    if (page >= result.pages) return { list, complete: true };
  }
  return { list, complete: false };
}

/** The parameter a 422 message names (`Parameter "email" must be …`), or null. */
export function fieldOf(error: unknown): string | null {
  if (!(error instanceof ApiError) || error.code !== 422) return null;
  const match = /^Parameter "([^"]+)"/.exec(error.message);
  return match?.[1] ?? null;
}

/** A readable sentence for any error, with a hint where the user can do something about it. */
export function describeError(error: unknown): string {
  if (error instanceof ApiError) {
    if (error.code === 403 && /CSRF/i.test(error.message)) {
      return `${error.message} (error 403). Reload the page or log in again.`;
    }
    if (error.code === 429) return `${error.message} (error 429).`;
    if (error.code === 0) return error.message;
    return `${error.message} (error ${error.code}).`;
  }
  return error instanceof Error ? error.message : String(error);
}
