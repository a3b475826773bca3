// Fastify hook: `app.addHook('preHandler', tollgateFastify(tollgate))` (or a route's preHandler); the verdict is
// `request.tollgate`.
import type { Tollgate, VerifyResult } from './index.ts';
import { judge, readKey, type HeaderValue } from './guard.ts';

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
}

export function tollgateFastify(tollgate: Tollgate) {
  return async (request: Request, reply: Reply): Promise<void> => {
    const key = readKey((name) => request.headers[name]);
    const { result, refusal } = await judge(tollgate, key, request.ip);
    if (result !== null) request.tollgate = result;
    if (refusal === null) return;
    if (refusal.retryAfter !== null) reply.header('retry-after', String(refusal.retryAfter));
    await reply.code(refusal.status).send(refusal.body);
  };
}
