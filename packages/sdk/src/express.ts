// Express middleware: `app.use(tollgateExpress(tollgate))`; the verdict is `req.tollgate`.
import type { Tollgate, VerifyResult } from './index.ts';
import { judge, readKey, type HeaderValue } from './guard.ts';

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
}

export function tollgateExpress(tollgate: Tollgate) {
  return (req: Request, res: Response, next: (error?: unknown) => void): void => {
    const key = readKey((name) => req.headers[name]);
    judge(tollgate, key, req.ip).then(({ result, refusal }) => {
      if (result !== null) req.tollgate = result;
      if (refusal === null) return next();
      if (refusal.retryAfter !== null) res.set('Retry-After', String(refusal.retryAfter));
      res.status(refusal.status).json(refusal.body);
    }, next);
  };
}
