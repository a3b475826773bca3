// A small client of the EU's VIES REST API (issue 26 item 1): POST <vies_url>/check-vat-number with the number to
// check and, so VIES returns a consultation number (requestIdentifier) that proves the check, the seller's own number.
// VIES is often down for one member state or slow: anything but a clear answer (a timeout, a refused connection, a
// body that is not VIES's JSON, MS_UNAVAILABLE, MS_MAX_CONCURRENT_REQ, SERVICE_UNAVAILABLE…) is ViesUnavailable, which
// the caller retries later; INVALID_INPUT is VIES's clear "no" for a number it cannot read.

export interface ViesRequest {
  /** The VIES prefix (EL for Greece) and the number after it. */
  countryCode: string;
  vatNumber: string;
  /** The seller's number, split the same way; VIES then returns a consultation number. */
  requester?: { countryCode: string; vatNumber: string } | null;
}

export interface ViesAnswer {
  valid: boolean;
  /** The consultation number, when VIES gave one. */
  requestIdentifier: string | null;
  /** When VIES answered (ISO 8601); the time of our call when VIES gave none. */
  requestDate: string;
  name: string | null;
  address: string | null;
}

/** VIES gave no answer: retry later. `code` is VIES's error code when it named one. */
export class ViesUnavailable extends Error {
  constructor(
    message: string,
    readonly code: string | null = null,
  ) {
    super(message);
    this.name = 'ViesUnavailable';
  }
}

const MAX_BODY = 64 * 1024;

/** VIES writes "---" for a name or address it does not disclose. */
function disclosed(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  const text = value.replace(/\s+/g, ' ').trim();
  return text === '' || text === '---' ? null : text.slice(0, 1000);
}

function errorCodeOf(body: unknown): string | null {
  if (typeof body !== 'object' || body === null) return null;
  const wrappers = (body as { errorWrappers?: unknown }).errorWrappers;
  if (!Array.isArray(wrappers) || wrappers.length === 0) return null;
  const first: unknown = wrappers[0];
  const code = typeof first === 'object' && first !== null ? (first as { error?: unknown }).error : null;
  return typeof code === 'string' ? code.slice(0, 64) : 'UNKNOWN';
}

/** Asks VIES about one number; ViesUnavailable when it gives no clear answer within `timeoutMs`. */
export async function checkVatNumber(baseUrl: string, request: ViesRequest, timeoutMs: number, now = new Date()): Promise<ViesAnswer> {
  const body: Record<string, string> = { countryCode: request.countryCode, vatNumber: request.vatNumber };
  if (request.requester) {
    body.requesterMemberStateCode = request.requester.countryCode;
    body.requesterNumber = request.requester.vatNumber;
  }
  let response: Response;
  let text: string;
  try {
    response = await fetch(`${baseUrl.replace(/\/+$/, '')}/check-vat-number`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    text = await response.text();
  } catch (error) {
    const timedOut = error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError');
    throw new ViesUnavailable(timedOut ? `VIES did not answer within ${timeoutMs} ms` : 'VIES could not be reached');
  }
  if (text.length > MAX_BODY) throw new ViesUnavailable('VIES answered with an oversized body');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ViesUnavailable(`VIES answered HTTP ${response.status} with a body that is not JSON`);
  }
  const code = errorCodeOf(parsed);
  if (code === 'INVALID_INPUT') return { valid: false, requestIdentifier: null, requestDate: now.toISOString(), name: null, address: null };
  if (code !== null) throw new ViesUnavailable(`VIES answered ${code}`, code);
  const valid = typeof parsed === 'object' && parsed !== null ? (parsed as { valid?: unknown }).valid : undefined;
  if (!response.ok || typeof valid !== 'boolean') throw new ViesUnavailable(`VIES answered HTTP ${response.status} without a verdict`);
  const answer = parsed as { requestIdentifier?: unknown; requestDate?: unknown; name?: unknown; address?: unknown };
  const date = typeof answer.requestDate === 'string' && !Number.isNaN(Date.parse(answer.requestDate)) ? new Date(answer.requestDate).toISOString() : now.toISOString();
  return {
    valid,
    requestIdentifier: typeof answer.requestIdentifier === 'string' && answer.requestIdentifier !== '' ? answer.requestIdentifier.slice(0, 64) : null,
    requestDate: date,
    name: disclosed(answer.name),
    address: disclosed(answer.address),
  };
}
