// What every framework adapter shares: reading the key from the request and turning a verdict into an answer.
import type { Tollgate, VerifyResult } from './index.ts';

export type HeaderValue = string | string[] | undefined;

/** The key from `X-API-Key`, else from `Authorization: Bearer <key>`; null when neither carries a non-empty key. */
export function readKey(header: (name: string) => HeaderValue): string | null {
  const first = (value: HeaderValue): string | undefined => (Array.isArray(value) ? value[0] : value);
  const direct = first(header('x-api-key'))?.trim();
  if (direct !== undefined && direct !== '') return direct;
  const authorization = first(header('authorization'));
  const match = authorization === undefined ? null : /^bearer\s+(\S+)\s*$/i.exec(authorization);
  return match === null ? null : match[1]!;
}

export interface Refusal {
  status: 401 | 402 | 429 | 500 | 503;
  body: { error: { code: string; message: string } };
  /** Seconds, for the Retry-After header. */
  retryAfter: number | null;
}

/** null to let the request through, else what to answer. */
export function refusalOf(result: VerifyResult | null): Refusal | null {
  if (result === null) return { status: 401, body: { error: { code: 'MISSING_KEY', message: 'An API key is required (X-API-Key or Authorization: Bearer)' } }, retryAfter: null };
  if (result.valid) return null;
  switch (result.reason) {
    case 'LIMIT_EXCEEDED':
      return { status: 429, body: { error: { code: 'LIMIT_EXCEEDED', message: 'The usage limit of this API key is reached' } }, retryAfter: result.retryAfter ?? 60 };
    case 'NO_CREDIT':
      // A prepaid plan's balance ran out: the key is good, the wallet needs a top-up (402 Payment Required).
      return { status: 402, body: { error: { code: 'NO_CREDIT', message: 'The prepaid balance of this API key is used up; top it up to continue' } }, retryAfter: null };
    case 'RATE_LIMITED':
      return { status: 429, body: { error: { code: 'RATE_LIMITED', message: 'Too many requests' } }, retryAfter: result.retryAfter ?? 1 };
    case 'UNAVAILABLE':
      return { status: 503, body: { error: { code: 'UNAVAILABLE', message: 'The API key could not be verified; try again' } }, retryAfter: 1 };
    case 'UNAUTHORIZED':
      // This server's own configuration (its verifier token), not the caller's key: a 500, and no "try again".
      return { status: 500, body: { error: { code: 'VERIFIER_UNAUTHORIZED', message: 'This API cannot verify API keys: its verifier token was refused' } }, retryAfter: null };
    default:
      return { status: 401, body: { error: { code: 'INVALID_KEY', message: 'The API key is not valid' } }, retryAfter: null };
  }
}

/** Verifies the request's key; null result when it carries none. */
export async function judge(tollgate: Tollgate, key: string | null, ip: string | undefined): Promise<{ result: VerifyResult | null; refusal: Refusal | null }> {
  const result = key === null ? null : await tollgate.verify(key, ip === undefined ? {} : { ip });
  return { result, refusal: refusalOf(result) };
}
