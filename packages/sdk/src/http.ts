// One POST to Tollgate's admin API with the verifier token, shared by verify, the usage reports and the metered
// events: a non-200 answer becomes a TollgateHttpError carrying the envelope's message (never the key or the token).
import { TollgateHttpError } from './errors.ts';

export interface AdminCaller {
  baseUrl: string;
  authorization: string;
  timeoutMs: number;
}

/**
 * POSTs `body` (JSON text: the metered events are serialised once, when tracked, and resent as they are) to
 * `/api/admin/<path>` and returns the envelope's result; throws TollgateHttpError on non-200.
 */
export async function callAdmin(caller: AdminCaller, path: string, body: string): Promise<unknown> {
  const response = await fetch(`${caller.baseUrl}/api/admin/${path}`, {
    method: 'POST',
    headers: { authorization: caller.authorization, 'content-type': 'application/json' },
    body,
    signal: AbortSignal.timeout(caller.timeoutMs),
  });
  const text = await response.text();
  if (response.status !== 200) {
    const retryAfter = Number(response.headers.get('retry-after'));
    let detail = '';
    try {
      const message = (JSON.parse(text) as { error?: { message?: unknown } }).error?.message;
      if (typeof message === 'string') detail = message;
    } catch {
      // not the envelope (a proxy's error page): no detail
    }
    throw new TollgateHttpError(response.status, Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : null, detail);
  }
  return (JSON.parse(text) as { result: unknown }).result;
}
