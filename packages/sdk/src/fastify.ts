// Fastify hook: `app.addHook('preHandler', tollgateFastify(tollgate))` (or a route's preHandler); the verdict is
// `request.tollgate`. With `meters`, each request the key let through is metered once its response has been sent
// (the raw response's 'finish', which needs no second hook).
import type { Tollgate, VerifyResult } from './index.ts';
import { judge, readKey, type HeaderValue } from './guard.ts';
import type { MeterReadings } from './readings.ts';

/** The parts of Fastify's request and reply this uses (no dependency on Fastify itself). */
interface Request {
  headers: Record<string, HeaderValue>;
  ip: string;
  tollgate?: VerifyResult;
}
interface Reply {
  code(status: number): Reply;
  header(name: string, value: string): Reply;
  send(body: unknown): unknown;
  raw: { once(event: 'finish', listener: () => void): unknown };
}

export interface TollgateFastifyOptions<Req, Rep> {
  /** The meters to track for a request whose key was valid, read once its response is sent (see the README). */
  meters?: (request: Req, reply: Rep) => MeterReadings;
}

export function tollgateFastify<Req extends Request = Request, Rep extends Reply = Reply>(tollgate: Tollgate, options: TollgateFastifyOptions<Req, Rep> = {}) {
  const { meters } = options;
  return async (request: Req, reply: Rep): Promise<void> => {
    const key = readKey((name) => request.headers[name]);
    const { result, refusal } = await judge(tollgate, key, request.ip);
    if (result !== null) request.tollgate = result;
    if (refusal === null) {
      if (meters !== undefined && key !== null) reply.raw.once('finish', () => tollgate.trackReadings(key, () => meters(request, reply)));
      return;
    }
    if (refusal.retryAfter !== null) reply.header('retry-after', String(refusal.retryAfter));
    await reply.code(refusal.status).send(refusal.body);
  };
}
