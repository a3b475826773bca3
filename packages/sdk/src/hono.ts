// Hono middleware: `app.use(tollgateHono(tollgate))`; the verdict is `c.get('tollgate')`. The end user's address is
// read with `options.ip(c)` (Hono has no portable one; with @hono/node-server use its getConnInfo).
import type { Tollgate, VerifyResult } from './index.ts';
import { judge, readKey } from './guard.ts';

/** The parts of Hono's Context this uses (no dependency on Hono itself). */
interface Context {
  req: { header(name: string): string | undefined };
  set(name: 'tollgate', value: VerifyResult): void;
  json(body: unknown, status: 401 | 429 | 500 | 503, headers?: Record<string, string>): Response;
}

export function tollgateHono<C extends Context>(tollgate: Tollgate, options: { ip?: (c: C) => string | undefined } = {}) {
  return async (c: C, next: () => Promise<void>): Promise<Response | undefined> => {
    const key = readKey((name) => c.req.header(name));
    const { result, refusal } = await judge(tollgate, key, options.ip?.(c));
    if (result !== null) c.set('tollgate', result);
    if (refusal === null) {
      await next();
      return undefined;
    }
    return c.json(refusal.body, refusal.status, refusal.retryAfter === null ? {} : { 'Retry-After': String(refusal.retryAfter) });
  };
}
