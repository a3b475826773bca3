// The only way the pages talk to the server: POST JSON to /api/{role}/{module}/{action}, read the envelope, throw
// ApiError with the server's message on failure. Client and admin calls ride on the session cookie and send the
// csrf_token cookie's value in X-CSRF-Token (guest calls too, when the cookie exists). The action's name, its
// parameters and its result are typed by the OpenAPI document (actions.ts).
import { serverErrorText } from '../../../src/lib/server-error-text.ts';
import type { Action, ListAction, ListItem, Params, ParamsArgument, Result } from './actions.ts';

export type { Action, Params, Result } from './actions.ts';

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
  /** A common search is not counted: `total` and `pages` are then "at least" (the next page exists). */
  total_capped?: true;
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

/** Calls `action` (`call('admin/serviceapikey/get', { order_id })`) and answers its result. */
export async function call<A extends Action>(action: A, ...[params]: ParamsArgument<A>): Promise<Result<A>> {
  // The test suite checks every answer against the schema these types come from (test/helpers/result-check.ts).
  return (await send(action, params ?? {})) as Result<A>;
}

/** POST the JSON body, read the envelope: the result, or ApiError. */
async function send(action: Action, params: object): Promise<unknown> {
  const role = action.split('/')[0];
  const headers: Record<string, string> = { 'Content-Type': 'application/json', Accept: 'application/json' };
  // Guest calls carry the token too when there is one: guest/cart/* on a logged-in client's session needs it (the
  // cart page can ask before the page knows who is logged in).
  const token = readCookie('csrf_token');
  if (token !== '') headers['X-CSRF-Token'] = token;
  let response: Response;
  try {
    response = await fetch(`/api/${action}`, { method: 'POST', headers, body: JSON.stringify(params), credentials: 'same-origin' });
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
  return body.result;
}

/** Every item of a paginated list, at most `maxPages` pages of `perPage`; `complete` is false when capped. */
export async function allPages<A extends ListAction>(
  action: A,
  params: Omit<Params<A>, 'page' | 'per_page'>,
  { perPage = 500, maxPages = 20 } = {},
): Promise<{ list: Array<ListItem<A>>; complete: boolean }> {
  const list: Array<ListItem<A>> = [];
  for (let page = 1; page <= maxPages; page += 1) {
    // Every list action takes page and per_page (PageParams on the server), and ListAction answers a page.
    const result = (await send(action, { ...params, page, per_page: perPage })) as { list: Array<ListItem<A>>; pages: number };
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

/** What people call the parameters the API names in its 422 messages. */
const FIELD_NAMES: Record<string, string> = {
  email: 'E-mail address',
  password: 'Password',
  password_confirm: 'Repeated password',
  first_name: 'First name',
  last_name: 'Last name',
  company: 'Company',
  phone: 'Phone',
  address_1: 'Address',
  address_2: 'Address (line 2)',
  city: 'City',
  state: 'State or region',
  postcode: 'Postcode',
  country: 'Country',
  vat_number: 'VAT number',
  promocode: 'Coupon code',
  code: 'Code',
  period: 'Billing period',
  price: 'Price',
  amount: 'Amount',
  expires_at: 'Expiry date',
  transaction_id: 'Transaction id',
  key: 'Key',
  name: 'Name',
  search: 'Search',
};

/** The product form's labels of a graduated tier's fields. */
const TIER_FIELDS: Record<string, string> = { unit_price: 'price per call', up_to: 'up to', flat_price: 'flat price' };

/** `Parameter "x" problem` (CONTRACT §2) as a sentence for people; other messages pass unchanged. */
export function humanMessage(message: string): string {
  const match = /^Parameter "([^"]+)" (.*)$/s.exec(message);
  if (match === null) return message;
  const [, param = '', problem = ''] = match;
  if (param === 'password_confirm' && /does not match/.test(problem)) return 'The two passwords do not match.';
  const last = param.split('.').pop() ?? param;
  const tier = /tiers\[(\d+)\]\.(\w+)$/.exec(param);
  // A usage plan's tier rows (CONTRACT §12): named as the product form labels them, "Tier 2 price per call".
  const label = tier !== null ? `Tier ${Number(tier[1]) + 1} ${TIER_FIELDS[tier[2] ?? ''] ?? humanizeName(tier[2] ?? '').toLowerCase()}` : (FIELD_NAMES[last] ?? humanizeName(last));
  let said = problem
    .replace(/^is invalid: /, '')
    .replace(/^expected string$/, 'must be text')
    .replace(/^must match format "email"$/, 'is not a valid e-mail address')
    .replace(/^must match format "date(-time)?"$/, 'is not a valid date')
    .replace(/^must match pattern .*$/, 'is not in the expected form')
    .replace(/^must not have fewer than 1 characters?$/i, 'is required')
    .replace(/^expected (union value|integer|number)$/, 'is not valid');
  said = said.replace(/[.]$/, '');
  return `${label} ${said}.`;
}

function humanizeName(name: string): string {
  const spaced = name.replace(/[_-]+/g, ' ').replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase().trim();
  return spaced.charAt(0).toUpperCase() + spaced.slice(1);
}

/** A readable sentence for any error, with a hint where the user can do something about it. */
export function describeError(error: unknown): string {
  if (error instanceof ApiError) {
    if (error.code === 403 && /CSRF/i.test(error.message)) {
      return `${error.message} (error 403). Reload the page or log in again.`;
    }
    if (error.code === 429) return `${error.message} (error 429).`;
    if (error.code === 0) return error.message;
    // Mistakes in what was typed: a sentence about the field, no error number.
    if (error.code === 422) return humanMessage(error.message);
    if (error.status >= 500) return serverErrorText(error.message, error.code);
    return /[.!?]$/.test(error.message) ? error.message : `${error.message}.`;
  }
  return error instanceof Error ? error.message : String(error);
}

/**
 * A mistake found in the browser before sending, shaped like the server's 422 so the form shows it under its field.
 */
export function invalidField(param: string, problem: string): ApiError {
  return new ApiError(`Parameter "${param}" ${problem}`, 422, 422);
}
