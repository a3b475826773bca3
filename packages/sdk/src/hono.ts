// Hono middleware: `app.use(tollgateHono(tollgate))`; the verdict is `c.get('tollgate')`. The end user's address is
// read with `options.ip(c)` (Hono has no portable one; with @hono/node-server use its getConnInfo). With `meters`,
// each request the key let through is metered from `c` once the handlers have made `c.res` (Hono has no portable
// "sent" event; tracking only queues the events, so it does not hold the response back).
import type { Tollgate, VerifyResult } from './index.ts';
import { judge, readKey } from './guard.ts';
import type { MeterReadings } from './readings.ts';

/** The parts of Hono's Context this uses (no dependency on Hono itself). */
interface Context {
  req: { header(name: string): string | undefined };
  set(name: 'tollgate', value: VerifyResult): void;
  json(body: unknown, status: 401 | 402 | 429 | 500 | 503, headers?: Record<string, string>): Response;
}

export interface TollgateHonoOptions<C> {
  ip?: (c: C) => string | undefined;
  /** The meters to track for a request whose key was valid, read from `c.req` and `c.res` (see the README). */
  meters?: (c: C) => MeterReadings;
}

export function tollgateHono<C extends Context>(tollgate: Tollgate, options: TollgateHonoOptions<C> = {}) {
  const { meters } = options;
  return async (c: C, next: () => Promise<void>): Promise<Response | undefined> => {
    const key = readKey((name) => c.req.header(name));
    const { result, refusal } = await judge(tollgate, key, options.ip?.(c));
    if (result !== null) c.set('tollgate', result);
    if (refusal === null) {
      await next();
      if (meters !== undefined && key !== null) tollgate.trackReadings(key, () => meters(c));
      return undefined;
    }
    return c.json(refusal.body, refusal.status, refusal.retryAfter === null ? {} : { 'Retry-After': String(refusal.retryAfter) });
  };
}
