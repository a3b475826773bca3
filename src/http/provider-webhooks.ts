// Inbound provider webhooks, outside /api: `POST /webhooks/<gateway code>` (Stripe's is /webhooks/stripe). The HTTP
// part of them: the body is kept raw (a content parser registered for this scope only), because the signature covers
// the exact bytes, and handed with the headers to the payment module (payment/inbound.ts `receiveSigned`), which has
// the gateway verify it and only then stores and applies the event. A bad signature is HTTP 400 with nothing stored,
// an unknown gateway 404: both thrown as API errors, answered by the error handler as every other envelope.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { setApiHeaders } from './headers.ts';

/** What this route needs of the payment module: the service call behind it (so http/ imports no module). */
export interface ProviderEventReceiver {
  receiveSigned(code: string, rawBody: Buffer, headers: Record<string, string | string[] | undefined>): Promise<string>;
}

export function registerProviderWebhooks(app: FastifyInstance, receiver: ProviderEventReceiver, httpsPossible: boolean): void {
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

    scope.post('/webhooks/:gateway', async (request: FastifyRequest, reply: FastifyReply) => {
      setApiHeaders(request, reply, httpsPossible);
      const code = (request.params as { gateway: string }).gateway;
      const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      const outcome = await receiver.receiveSigned(code, body, request.headers);
      return { result: { received: true, outcome }, error: null };
    });
  });
}
