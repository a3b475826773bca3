// Inbound provider webhooks, outside /api: `POST /webhooks/<gateway code>` (Stripe's is /webhooks/stripe). The body
// is kept raw (a content parser registered for this scope only), because the signature covers the exact bytes; the
// gateway verifies it, and only then is the event stored and applied. A bad signature is HTTP 400 with nothing stored.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { envelopeOf, errors } from '../../platform/errors.ts';
import { setApiHeaders } from '../../http/headers.ts';
import { InvalidEventError, type VerifiedEvent } from '../invoice/gateways.ts';
import type { Services } from '../../services.ts';

export function registerProviderWebhooks(app: FastifyInstance, services: Services, httpsPossible: boolean): void {
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

    scope.post('/webhooks/:gateway', async (request: FastifyRequest, reply: FastifyReply) => {
      setApiHeaders(request, reply, httpsPossible);
      const code = (request.params as { gateway: string }).gateway;
      const gateway = services.gateways.byCode(code);
      if (gateway?.verifyEvent === undefined) throw errors.notFound('Payment gateway');
      const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      let event: VerifiedEvent;
      try {
        event = await gateway.verifyEvent(body, request.headers);
      } catch (error) {
        if (error instanceof InvalidEventError) return reply.status(400).send(envelopeOf(errors.badRequest(error.message)));
        throw error;
      }
      const outcome = await services.inboundEvents.receive(gateway, event);
      return { result: { received: true, outcome }, error: null };
    });
  });
}
