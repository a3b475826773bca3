// The error catalogue: every failure the API can answer, with its fixed envelope code and HTTP status (CONTRACT §2).
// Code throws `errors.notFound('Order')`; nothing else composes codes or statuses.
import { isTransientConflict } from '../db/errors.ts';
import { InvalidInput } from '../lib/invalid-input.ts';

export class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly status: number,
    message: string,
    readonly headers: Readonly<Record<string, string | number>> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export const errors = {
  badRequest: (message = 'The request body could not be read') => new ApiError(400, 400, message),
  /** A parameter is missing, of the wrong type or out of range; the message names it. */
  invalid: (param: string, problem: string) => new ApiError(422, 422, `Parameter "${param}" ${problem}`),
  payloadTooLarge: (limit: number) => new ApiError(413, 413, `Request body is larger than ${limit} bytes`),
  methodNotAllowed: (method: string, allowed = 'GET or POST') => new ApiError(405, 405, `Method ${method} is not allowed; use ${allowed}`),
  authRequired: () => new ApiError(201, 401, 'Authentication required'),
  emptyPassword: () => new ApiError(202, 401, 'Authentication failed: the password (API token) is empty'),
  wrongRole: (role: string) => new ApiError(203, 401, `Authentication failed: use the user name "${role}" for this area`),
  badClientToken: () => new ApiError(204, 401, 'Authentication failed: unknown client API token or inactive client'),
  badAdminToken: () => new ApiError(205, 401, 'Authentication failed: unknown admin API token or inactive staff member'),
  loginFailed: () => new ApiError(206, 401, 'The e-mail address or password is not correct'),
  /** The password was right, but the account has two-factor login on and no code came with it (CONTRACT §10). */
  twoFactorRequired: () => new ApiError(207, 401, 'Two-factor code required'),
  /** A password reset link that is unknown, used, voided by a newer one, expired or meant for another account. */
  resetLinkInvalid: () => new ApiError(422, 422, 'The link has expired or you have already reset your password'),
  emailNotConfirmed: () => new ApiError(403, 403, 'Please check your mailbox and confirm your email address.'),
  csrf: () => new ApiError(403, 403, 'CSRF token is missing or does not match the session'),
  forbidden: (permission: string) => new ApiError(403, 403, `You do not have the permission "${permission}"`),
  /** A customer-portal session called a client action none of its scopes opens (src/modules/portal/scopes.ts). */
  portalScope: (action: string) => new ApiError(403, 403, `This portal session may not call ${action}: none of its scopes opens it`),
  /** Verifier credentials called an action outside their allow-list (ActionDef.verifier). */
  verifierScope: () => new ApiError(403, 403, 'Verifier credentials may only verify keys (check, get_info, report_usage, events)'),
  notFound: (what: string) => new ApiError(404, 404, `${what} not found`),
  /** An API key (by key, id or order) that is not there: FOSSBilling's own words, so integrations matching on them work. */
  apiKeyNotFound: () => new ApiError(404, 404, 'API key does not exist'),
  conflict: (message: string) => new ApiError(409, 409, message),
  rateLimited: (retryAfterSeconds: number) =>
    new ApiError(429, 429, `Too many requests; retry in ${retryAfterSeconds} s`, { 'Retry-After': retryAfterSeconds }),
  unknownAction: (role: string, module: string, action: string) =>
    new ApiError(740, 404, `Action "${action}" of module "${module}" does not exist for ${role}`),
  unknownPath: () => new ApiError(879, 404, 'Not an API path: use /api/{admin|client|guest}/{module}/{action}'),
  internal: () => new ApiError(500, 500, 'Internal error'),
  /** A payment provider could not be reached or refused the request (the message says which, never a secret). */
  gatewayFailed: (message: string) => new ApiError(502, 502, message),
  /** The work could not finish in time and left nothing behind: the same request may be sent again. */
  tryAgain: (message: string) => new ApiError(503, 503, message),
} as const;

export function envelopeOf(error: ApiError): { result: null; error: { message: string; code: number } } {
  return { result: null, error: { message: error.message, code: error.code } };
}

/**
 * The catalogue's answer for anything thrown: an ApiError as it is, a pure helper's InvalidInput as the 422 naming its
 * parameter, a transaction PostgreSQL undid for meeting another (a deadlock) as the 503 "send it again", and null for
 * anything else (a bug: the caller answers 500 and logs it).
 */
export function asApiError(error: unknown): ApiError | null {
  if (error instanceof ApiError) return error;
  if (error instanceof InvalidInput) return errors.invalid(error.param, error.problem);
  if (isTransientConflict(error)) return errors.tryAgain('The request met another change of the same records at the same moment and was undone: send it again');
  return null;
}
