// Express middleware: `app.use(tollgateExpress(tollgate))`; the verdict is `req.tollgate`. With `meters`, each request
// the key let through is metered once its response has been sent (Express's 'finish').
import type { Tollgate, VerifyResult } from './index.ts';
import { judge, readKey, type HeaderValue } from './guard.ts';
import type { MeterReadings } from './readings.ts';

/** The parts of Express's request and response this uses (no dependency on Express itself). */
interface Request {
  headers: Record<string, HeaderValue>;
  ip?: string | undefined;
  tollgate?: VerifyResult;
}
interface Response {
  status(code: number): Response;
  set(name: string, value: string): Response;
  json(body: unknown): unknown;
  once(event: 'finish', listener: () => void): unknown;
}

export interface TollgateExpressOptions<Req, Res> {
  /** The meters to track for a request whose key was valid, read once its response is sent (see the README). */
  meters?: (req: Req, res: Res) => MeterReadings;
}

export function tollgateExpress<Req extends Request = Request, Res extends Response = Response>(tollgate: Tollgate, options: TollgateExpressOptions<Req, Res> = {}) {
  const { meters } = options;
  return (req: Req, res: Res, next: (error?: unknown) => void): void => {
    const key = readKey((name) => req.headers[name]);
    judge(tollgate, key, req.ip).then(({ result, refusal }) => {
      if (result !== null) req.tollgate = result;
      if (refusal === null) {
        // A request without a refusal carried a valid key; 'finish' misses responses the client abandoned mid-way.
        if (meters !== undefined && key !== null) res.once('finish', () => tollgate.trackReadings(key, () => meters(req, res)));
        return next();
      }
      if (refusal.retryAfter !== null) res.set('Retry-After', String(refusal.retryAfter));
      res.status(refusal.status).json(refusal.body);
    }, next);
  };
}
