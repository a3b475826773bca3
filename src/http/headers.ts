// Headers every API response carries (CONTRACT §1): no caching, the API version, and HSTS when the request came over
// HTTPS. Set by the gateway, the error handler and the few non-gateway routes themselves: a global onRequest hook
// would cost every request on the hot path a hook run for three header writes.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { VERSION } from '../platform/version.ts';

export const COMMON_HEADERS = { 'cache-control': 'no-store', 'x-tollgate-version': VERSION } as const;
export const HSTS = 'max-age=31536000';

export function setApiHeaders(request: FastifyRequest, reply: FastifyReply, httpsPossible: boolean): void {
  reply.headers(COMMON_HEADERS);
  // request.protocol reads X-Forwarded-Proto when TRUST_PROXY is set; without TLS or a proxy it is always http.
  if (httpsPossible && request.protocol === 'https') reply.header('strict-transport-security', HSTS);
}
